package broker

// IncrementalAlterConfigs (key 44), versions 0-1.
//
// Behavior:
//   - Each entry changes one key of the resource's dynamic set: SET (0)
//     gives it a value, DELETE (1) removes it (deleting a key that is not
//     set succeeds), APPEND (2) and SUBTRACT (3) add or remove elements of a
//     list key (cleanup.policy, log.cleanup.policy; starting from Kafka's
//     default when the key is not set). The resulting set is validated and
//     applied as AlterConfigs' (see 33_alter_configs.go for the resource
//     rules, the errors and validate_only).
//   - APPEND or SUBTRACT on a key that is not a list is INVALID_CONFIG; an
//     unknown operation is INVALID_REQUEST.
//   - A resource named twice fails both with INVALID_REQUEST; so does a key
//     named twice in one resource, a null value for any operation but
//     DELETE, and any resource type but topic and broker (BROKER_LOGGER
//     included: sluice has no loggers to change).
//
// Version notes: v1 is the flexible version; nothing else changes.
//
// Authorization, as Kafka: AlterConfigs on the topic, or on the cluster for
// broker, broker-logger and client-metrics resources
// (TOPIC_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED for that
// resource alone).

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(44, 0, 1, handleIncrementalAlterConfigs) }

func handleIncrementalAlterConfigs(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.IncrementalAlterConfigsRequest)
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
		} else if code, msg = c.configAuthorized(acl.OpAlterConfigs, rr.ResourceType, rr.ResourceName); code == 0 {
			code, msg = c.b.incrementalAlterConfigs(&rr, req.ValidateOnly)
		}
		if code != 0 {
			res.ErrorCode, res.ErrorMessage = code, &msg
		}
		resp.Resources = append(resp.Resources, res)
	}
	return resp, nil
}

func (b *Broker) incrementalAlterConfigs(rr *kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) (int16, string) {
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
		b.admin.Lock()
		defer b.admin.Unlock()
		cur, _ := b.topicConfigs(rr.ResourceName)
		next, err := applyConfigOps(cur, rr.Configs, config.TopicKeyByName, false)
		if err != nil {
			return kerr.InvalidConfig.Code, err.Error()
		}
		return b.setTopicConfigsLocked(rr.ResourceName, next, validateOnly)
	case kmsg.ConfigResourceTypeBroker:
		perBroker, code, msg := b.brokerResource(rr.ResourceName)
		if code != 0 {
			return code, msg
		}
		b.admin.Lock()
		defer b.admin.Unlock()
		next, err := applyConfigOps(b.currentBrokerConfigs(perBroker), rr.Configs, config.BrokerKeyByName, true)
		if err != nil {
			return kerr.InvalidConfig.Code, err.Error()
		}
		return b.setBrokerConfigsLocked(perBroker, next, validateOnly)
	}
	return kerr.InvalidRequest.Code, fmt.Sprintf("Unknown resource type %d", int8(rr.ResourceType))
}

// opNames are Kafka's names of the operations, for messages.
var opNames = [...]string{"SET", "DELETE", "APPEND", "SUBTRACT"}

// applyConfigOps applies incremental operations to a copy of cur. APPEND
// and SUBTRACT start from Kafka's default when the key is not set, and work
// on a key of type LIST only (the message is the broker's or the
// controller's, as Kafka words them for each resource).
func applyConfigOps(cur map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, keys map[string]*config.Key, broker bool) (map[string]string, error) {
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
