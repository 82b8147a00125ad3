package broker

// DeleteTopics (key 20), versions 0-6.
//
// Behavior:
//   - Each topic is removed from the metadata (durably) and its logs
//     deleted before the answer: a Metadata request that follows no longer
//     lists it, and its name can be created again at once, with a new ID.
//     Fetches waiting on its partitions return.
//   - __consumer_offsets cannot be deleted (INVALID_REQUEST): the group
//     coordinator keeps every group's offsets there. Kafka lets it go and
//     loses them; sluice refuses.
//   - A topic that does not exist gets UNKNOWN_TOPIC_OR_PARTITION, an
//     unknown ID (v6+) UNKNOWN_TOPIC_ID; a topic given by both name and ID
//     INVALID_REQUEST, as are names or IDs given twice in one request (as
//     Kafka's controller answers them).
//
//   - controller_mutation_rate: each topic's partitions, strict from v5
//     (THROTTLING_QUOTA_EXCEEDED; mutationquota.go).
//
// Version notes: v0-5 name topics, v6+ name them or give their IDs; v5+
// carry error messages.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(20, 0, 6, handleDeleteTopics) }

// handleDeleteTopics: broker/cluster/topicadmin.go looks each topic up in
// the cluster's metadata and deletes it through the controller.
func handleDeleteTopics(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DeleteTopicsRequest)
	return c.b.plane.dir.DeleteTopics(req, cluster.Admin{
		Allowed: func(topic string) bool { return c.authorized(acl.OpDelete, acl.ResourceTopic, topic) },
		Record:  c.mutationRecorder(req.Version, 5),
	}), nil
}
