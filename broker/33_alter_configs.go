package broker

// AlterConfigs (key 33), versions 0-2.
//
// Behavior:
//   - Each resource's configs replace its whole dynamic set, as in Kafka:
//     keys not given are removed (the value falls back to the next layer).
//   - Topic resources (type 2): the new overrides are validated as Kafka's
//     controller does (config/keys.go; INVALID_CONFIG naming key and value),
//     applied to the topic's open logs at once and persisted. An empty name
//     is INVALID_REQUEST, a bad one INVALID_TOPIC_EXCEPTION, an unknown
//     topic UNKNOWN_TOPIC_OR_PARTITION (checked after the configs, as
//     Kafka's controller does).
//   - Broker resources (type 4): "" is the cluster-wide default, this
//     broker's id its own layer; another id or a non-integer name is
//     INVALID_REQUEST. Only dynamic keys may be set; a read-only key, an
//     unknown one or a bad value is INVALID_REQUEST, as Kafka answers broker
//     configs (KAFKA-13609). The change applies to every topic without an
//     override of the key.
//   - A resource named twice fails both with INVALID_REQUEST; so does a key
//     named twice in one resource, a null value, and any other resource
//     type (BROKER_LOGGER is IncrementalAlterConfigs only, as in Kafka).
//   - validate_only checks everything and changes nothing.
//
// Version notes: v2 is the flexible version; nothing else changes.
//
// Authorization, as Kafka: AlterConfigs on the topic, or on the cluster for
// broker resources (TOPIC_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED
// for that resource alone).

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(33, 0, 2, handleAlterConfigs) }

func handleAlterConfigs(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.AlterConfigsRequest)
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
		} else if code, msg = c.configAuthorized(acl.OpAlterConfigs, rr.ResourceType, rr.ResourceName); code == 0 {
			code, msg = c.b.alterConfigs(&rr, req.ValidateOnly)
		}
		if code != 0 {
			res.ErrorCode, res.ErrorMessage = code, &msg
		}
		resp.Resources = append(resp.Resources, res)
	}
	return resp, nil
}

func (b *Broker) alterConfigs(rr *kmsg.AlterConfigsRequestResource, validateOnly bool) (int16, string) {
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
		b.admin.Lock()
		defer b.admin.Unlock()
		return b.setTopicConfigsLocked(rr.ResourceName, configs, validateOnly)
	case kmsg.ConfigResourceTypeBroker:
		perBroker, code, msg := b.brokerResource(rr.ResourceName)
		if code != 0 {
			return code, msg
		}
		b.admin.Lock()
		defer b.admin.Unlock()
		return b.setBrokerConfigsLocked(perBroker, configs, validateOnly)
	}
	return kerr.InvalidRequest.Code, fmt.Sprintf("Unknown resource type %d", int8(rr.ResourceType))
}
