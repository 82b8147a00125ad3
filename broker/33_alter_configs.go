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
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(33, 0, 2, handleAlterConfigs) }

func handleAlterConfigs(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.AlterConfigsRequest)
	return c.b.cfgs.Alter(req, func(kind kmsg.ConfigResourceType, name string) (int16, string) {
		return c.configAuthorized(acl.OpAlterConfigs, kind, name)
	}), nil
}
