package broker

// CreatePartitions (key 37), versions 0-3.
//
// Behavior:
//   - Grows a topic to Count partitions: the metadata is changed durably,
//     then the new logs are created. Existing partitions keep their data
//     (keyed records may now hash to another partition, as in Kafka).
//   - Errors as Kafka: UNKNOWN_TOPIC_OR_PARTITION for a topic that does not
//     exist; INVALID_PARTITIONS for a count not above the current one;
//     INVALID_REPLICA_ASSIGNMENT for an assignment that does not give one
//     replica list per new partition, each this broker alone; INVALID_REQUEST
//     for a topic named twice; POLICY_VIOLATION for more than 10,000 new
//     partitions in one request (as CreateTopics).
//   - __consumer_offsets cannot grow (INVALID_REQUEST): groups are mapped
//     to its partitions by hash, so growing it would lose their offsets.
//   - validate_only checks everything and changes nothing.
//   - controller_mutation_rate: the partitions each topic gains, strict
//     from v3 (THROTTLING_QUOTA_EXCEEDED; mutationquota.go).
//
// Authorization: Alter on each topic (TOPIC_AUTHORIZATION_FAILED).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(37, 0, 3, handleCreatePartitions) }

// handleCreatePartitions: broker/cluster/topicadmin.go checks each topic
// and grows it through the controller.
func handleCreatePartitions(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.CreatePartitionsRequest)
	return c.b.plane.dir.CreatePartitions(req, cluster.Admin{
		Allowed: func(topic string) bool { return c.authorized(acl.OpAlter, acl.ResourceTopic, topic) },
		Record:  c.mutationRecorder(req.Version, 3),
	}), nil
}
