package broker

// AlterPartition (key 56), versions 0-3: a partition leader asks the
// controller to change the partition's ISR (KIP-497).
//
// Behavior:
//   - A broker that is not the controller answers NOT_CONTROLLER at the top
//     level, as Kafka's handleAlterPartitionRequest; the leader then finds
//     the controller and asks again.
//   - The controller's broker hands the request to its controller driver
//     (coordinator/zk's ControllerLoop, or the single node's in-process
//     controller) and answers once the driver has: the checks, the state
//     znode's conditional write and the per-partition errors are the
//     decision core's (coordinator/controller/alter.go). The wait is
//     bounded by controller.socket.timeout.ms's default (30 s), past which
//     the request gets REQUEST_TIMED_OUT and the leader retries.
//
// Version notes: v0-1 name topics, v2+ carry topic ids (UNKNOWN_TOPIC_ID
// for one the controller does not know); v1+ leader recovery state
// (KIP-704); v2+ INELIGIBLE_REPLICA where v0-1 get OPERATION_NOT_ATTEMPTED;
// v3 NewIsrWithEpochs, the ISR with each member's broker epoch (KIP-903),
// of which the ZooKeeper-mode controller reads only the ids, as Kafka's.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(56, 0, 3, handleAlterPartition) }

// alterPartitionTimeout bounds the wait for the controller's answer
// (Kafka's controller.socket.timeout.ms default, which its leaders' own
// AlterPartition requests are bounded by).
const alterPartitionTimeout = 30 * time.Second

func handleAlterPartition(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.AlterPartitionRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	resp.ErrorCode = kerr.NotController.Code
	if !c.authorizedCluster(acl.OpClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	alter := c.b.alterPartitionDriver()
	if alter == nil {
		return resp, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), alterPartitionTimeout)
	defer cancel()
	out, err := alter(ctx, req)
	if err != nil {
		resp.ErrorCode = kerr.RequestTimedOut.Code
		return resp, nil
	}
	out.Version = req.Version
	return out, nil
}

// alterPartitionDriver returns the controller driver's AlterPartition:
// the cluster's controller loop, or the single node's controller; nil
// when neither runs here.
func (b *Broker) alterPartitionDriver() func(context.Context, *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	if b.plane.zk != nil {
		if l := b.plane.zk.Loop(); l != nil {
			return l.AlterPartition
		}
		return nil
	}
	if e, ok := b.coord.(*coordinator.Embedded); ok {
		return e.AlterPartition
	}
	return nil
}
