package broker

// AlterPartitionReassignments (key 45), version 0: an administrator moves
// partitions' replicas to new brokers, or cancels such a move (KIP-455).
//
// Behavior, as Kafka 3.9's ZooKeeper-mode broker
// (KafkaApis.handleAlterPartitionReassignmentsRequest and
// KafkaController.processApiPartitionReassignment):
//   - Clients send it to the controller. A broker that is not the
//     controller answers NOT_CONTROLLER for the whole request, with no
//     partitions.
//   - The reassignment is the decision core's (coordinator/controller/
//     reassign.go): per partition INVALID_REPLICA_ASSIGNMENT (an empty
//     target, a broker named twice, a negative id, a broker added that is
//     not live), NO_REASSIGNMENT_IN_PROGRESS (a cancellation, replicas
//     null, of a partition not moving), UNKNOWN_TOPIC_OR_PARTITION (a
//     partition that does not exist, or of a topic being deleted), else
//     NONE once the new assignment is in ZooKeeper; the move goes on after
//     the answer (ListPartitionReassignments shows it until it is done).
//   - The controller's answer is awaited up to the request's timeout_ms
//     (at least 30 s, as the admin client's default): REQUEST_TIMED_OUT
//     for the whole request after it.
//   - The single node has one broker: a target other than that broker is
//     INVALID_REPLICA_ASSIGNMENT, that broker alone changes nothing (NONE).
//
// Version notes: v0 only, flexible (Kafka 3.9's; v1, KIP-1101's
// allow_replication_factor_change, is 4.1's).
//
// Authorization: Alter on the cluster; without it CLUSTER_AUTHORIZATION_FAILED
// at the top and on every partition.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(45, 0, 0, handleAlterPartitionReassignments) }

func handleAlterPartitionReassignments(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.AlterPartitionAssignmentsRequest)
	return c.b.plane.dir.AlterReassignments(req, c.authorizedCluster(acl.OpAlter)), nil // broker/cluster/controlleradmin.go
}
