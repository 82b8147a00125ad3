package dynamic

// AlterConfigs and IncrementalAlterConfigs: a request's resources, checked
// (named twice, authorized, duplicate keys, null values, the operations)
// and changed one at a time under Admin (change.go).

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
)

// Authorize answers whether the caller may describe or alter the configs
// of a resource: 0, or the error code and message of that resource.
type Authorize func(kind kmsg.ConfigResourceType, name string) (int16, string)

// resourceID is a config resource, for finding one named twice.
type resourceID struct {
	kind kmsg.ConfigResourceType
	name string
}

// Alter answers an AlterConfigs request: each resource's configs replace
// its whole dynamic set. A resource named twice fails both.
func (s *Service) Alter(req *kmsg.AlterConfigsRequest, authorize Authorize) *kmsg.AlterConfigsResponse {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	seen := map[resourceID]int{}
	for _, rr := range req.Resources {
		seen[resourceID{rr.ResourceType, rr.ResourceName}]++
	}
	for _, rr := range req.Resources {
		res := kmsg.NewAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		var code int16
		var msg string
		if seen[resourceID{rr.ResourceType, rr.ResourceName}] > 1 {
			code, msg = kerr.InvalidRequest.Code, "Each resource must appear at most once."
		} else if code, msg = authorize(rr.ResourceType, rr.ResourceName); code == 0 {
			code, msg = s.alter(&rr, req.ValidateOnly)
		}
		if code != 0 {
			res.ErrorCode, res.ErrorMessage = code, &msg
		}
		resp.Resources = append(resp.Resources, res)
	}
	return resp
}

func (s *Service) alter(rr *kmsg.AlterConfigsRequestResource, validateOnly bool) (int16, string) {
	configs := make(map[string]string, len(rr.Configs))
	var nulls []string
	for _, cfg := range rr.Configs {
		if _, dup := configs[cfg.Name]; dup {
			return kerr.InvalidRequest.Code, "Error due to duplicate config keys"
		}
		if cfg.Value == nil {
			nulls = append(nulls, cfg.Name)
			configs[cfg.Name] = ""
			continue
		}
		configs[cfg.Name] = *cfg.Value
	}
	if len(nulls) > 0 {
		return kerr.InvalidRequest.Code, "Null value not supported for : " + strings.Join(nulls, ", ")
	}
	switch rr.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		s.o.Admin.Lock()
		defer s.o.Admin.Unlock()
		return s.SetTopicConfigsLocked(rr.ResourceName, configs, validateOnly)
	case kmsg.ConfigResourceTypeBroker:
		perBroker, code, msg := s.brokerResource(rr.ResourceName)
		if code != 0 {
			return code, msg
		}
		s.o.Admin.Lock()
		defer s.o.Admin.Unlock()
		return s.setBrokerConfigsLocked(perBroker, configs, validateOnly)
	}
	return kerr.InvalidRequest.Code, fmt.Sprintf("Unknown resource type %d", int8(rr.ResourceType))
}

// IncrementalAlter answers an IncrementalAlterConfigs request: each entry
// changes one key of the resource's dynamic set (SET, DELETE, APPEND,
// SUBTRACT), and the resulting set is validated and applied as Alter's.
func (s *Service) IncrementalAlter(req *kmsg.IncrementalAlterConfigsRequest, authorize Authorize) *kmsg.IncrementalAlterConfigsResponse {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	seen := map[resourceID]int{}
	for _, rr := range req.Resources {
		seen[resourceID{rr.ResourceType, rr.ResourceName}]++
	}
	for _, rr := range req.Resources {
		res := kmsg.NewIncrementalAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		var code int16
		var msg string
		if seen[resourceID{rr.ResourceType, rr.ResourceName}] > 1 {
			code, msg = kerr.InvalidRequest.Code, "Each resource must appear at most once."
		} else if code, msg = authorize(rr.ResourceType, rr.ResourceName); code == 0 {
			code, msg = s.incrementalAlter(&rr, req.ValidateOnly)
		}
		if code != 0 {
			res.ErrorCode, res.ErrorMessage = code, &msg
		}
		resp.Resources = append(resp.Resources, res)
	}
	return resp
}

func (s *Service) incrementalAlter(rr *kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) (int16, string) {
	names := map[string]bool{}
	var nulls []string
	for _, cfg := range rr.Configs {
		if names[cfg.Name] {
			return kerr.InvalidRequest.Code, "Error due to duplicate config keys"
		}
		names[cfg.Name] = true
		if cfg.Op != kmsg.IncrementalAlterConfigOpDelete && cfg.Value == nil {
			nulls = append(nulls, cfg.Name)
		}
	}
	if len(nulls) > 0 {
		return kerr.InvalidRequest.Code, "Null value not supported for : " + strings.Join(nulls, ", ")
	}
	for _, cfg := range rr.Configs {
		if cfg.Op < kmsg.IncrementalAlterConfigOpSet || cfg.Op > kmsg.IncrementalAlterConfigOpSubtract {
			return kerr.InvalidRequest.Code, fmt.Sprintf("Unknown operations type %d", int8(cfg.Op))
		}
	}
	switch rr.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		s.o.Admin.Lock()
		defer s.o.Admin.Unlock()
		cur, _ := s.TopicConfigs(rr.ResourceName)
		next, err := applyOps(cur, rr.Configs, config.TopicKeyByName, false)
		if err != nil {
			return kerr.InvalidConfig.Code, err.Error()
		}
		return s.SetTopicConfigsLocked(rr.ResourceName, next, validateOnly)
	case kmsg.ConfigResourceTypeBroker:
		perBroker, code, msg := s.brokerResource(rr.ResourceName)
		if code != 0 {
			return code, msg
		}
		s.o.Admin.Lock()
		defer s.o.Admin.Unlock()
		next, err := applyOps(s.brokerConfigs(perBroker), rr.Configs, config.BrokerKeyByName, true)
		if err != nil {
			return kerr.InvalidConfig.Code, err.Error()
		}
		return s.setBrokerConfigsLocked(perBroker, next, validateOnly)
	}
	return kerr.InvalidRequest.Code, fmt.Sprintf("Unknown resource type %d", int8(rr.ResourceType))
}

// opNames are Kafka's names of the operations, for messages.
var opNames = [...]string{"SET", "DELETE", "APPEND", "SUBTRACT"}

// applyOps applies incremental operations to a copy of cur. APPEND and
// SUBTRACT start from Kafka's default when the key is not set, and work on
// a key of type LIST only (the message is the broker's or the
// controller's, as Kafka words them for each resource).
func applyOps(cur map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, keys map[string]*config.Key, broker bool) (map[string]string, error) {
	next := make(map[string]string, len(cur)+len(ops))
	for k, v := range cur {
		next[k] = v
	}
	for _, op := range ops {
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			next[op.Name] = *op.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, op.Name)
		default:
			k := keys[op.Name]
			if k == nil || k.Type != kmsg.ConfigTypeList {
				if broker {
					verb := "append"
					if op.Op == kmsg.IncrementalAlterConfigOpSubtract {
						verb = "subtract"
					}
					return nil, &config.Error{Msg: fmt.Sprintf("Config value %s is not allowed for config key: %s", verb, op.Name)}
				}
				return nil, &config.Error{Msg: fmt.Sprintf("Can't %s to key %s because its type is not LIST.", opNames[op.Op], op.Name)}
			}
			old, ok := next[op.Name]
			if !ok && k.Default != nil {
				old = *k.Default
			}
			var list []string
			for _, e := range strings.Split(old, ",") {
				if e != "" {
					list = append(list, e)
				}
			}
			for _, e := range strings.Split(*op.Value, ",") {
				if op.Op == kmsg.IncrementalAlterConfigOpAppend {
					if !slices.Contains(list, e) {
						list = append(list, e)
					}
				} else {
					list = slices.DeleteFunc(list, func(x string) bool { return x == e })
				}
			}
			next[op.Name] = strings.Join(list, ",")
		}
	}
	return next, nil
}
