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
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/coordinator/zk"
	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(45, 0, 0, handleAlterPartitionReassignments) }

func handleAlterPartitionReassignments(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	var targets []controller.ReassignTarget
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			targets = append(targets, controller.ReassignTarget{Partition: engine.Partition{Topic: rt.Topic, Partition: rp.Partition}, Replicas: rp.Replicas})
		}
	}
	if !c.authorizedCluster(acl.OpAlter) {
		// As Kafka's error response: the error at the top and on every
		// partition.
		msg := "Cluster authorization failed."
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, &msg
		for _, rt := range req.Topics {
			st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				sp.Partition, sp.ErrorCode, sp.ErrorMessage = rp.Partition, kerr.ClusterAuthorizationFailed.Code, &msg
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
	alter := c.b.reassignDriver()
	if alter == nil {
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	ctx, cancel := c.b.closingContext(max(time.Duration(req.TimeoutMillis)*time.Millisecond, reassignTimeout))
	a, err := alter(ctx, targets)
	cancel()
	if err != nil {
		resp.ErrorCode = kerr.RequestTimedOut.Code
		return resp, nil
	}
	resp.ErrorCode = a.ErrorCode
	for _, res := range a.Results {
		i := len(resp.Topics) - 1
		for j := range resp.Topics {
			if resp.Topics[j].Topic == res.Partition.Topic {
				i = j
				break
			}
		}
		if i < 0 || resp.Topics[i].Topic != res.Partition.Topic {
			rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			rt.Topic = res.Partition.Topic
			resp.Topics = append(resp.Topics, rt)
			i = len(resp.Topics) - 1
		}
		rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
		rp.Partition, rp.ErrorCode, rp.ErrorMessage = res.Partition.Partition, res.ErrorCode, res.Message
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return resp, nil
}

// reassignDriver returns the controller's reassignment entry, nil when no
// controller driver runs here (controllerEntry).
func (b *Broker) reassignDriver() func(context.Context, []controller.ReassignTarget) (controller.ReassignAnswer, error) {
	type alter = func(context.Context, []controller.ReassignTarget) (controller.ReassignAnswer, error)
	return controllerEntry(b, func(l *zk.ControllerLoop) alter { return l.AlterReassignments }, func(e *coordinator.Embedded) alter { return e.AlterReassignments })
}
