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
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(44, 0, 1, handleIncrementalAlterConfigs) }

func handleIncrementalAlterConfigs(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.IncrementalAlterConfigsRequest)
	return c.b.cfgs.IncrementalAlter(req, func(kind kmsg.ConfigResourceType, name string) (int16, string) {
		return c.configAuthorized(acl.OpAlterConfigs, kind, name)
	}), nil
}
