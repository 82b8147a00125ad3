package broker

// ControlledShutdown (key 7), versions 1-3: a broker about to stop asks
// the controller to move its partitions' leadership first (Kafka's
// handleControlledShutdownRequest).
//
// Behavior:
//   - A broker that is not the controller answers NOT_CONTROLLER, as does
//     the single node (it takes no control requests from the network).
//   - The controller's broker hands the request to its controller loop and
//     answers once the decision core has moved what it can
//     (coordinator/controller/shutdown.go): BROKER_NOT_AVAILABLE for a
//     broker not registered, STALE_BROKER_EPOCH for an older registration,
//     else the replicated partitions the broker still leads. The wait is
//     bounded by controller.socket.timeout.ms's default (30 s), past which
//     the request gets REQUEST_TIMED_OUT and the broker retries.
//
// Version notes: v0 (a request header without client id) is not served,
// as Kafka 4 serves none before v1; v2+ carries the broker epoch; v3 is
// flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(7, 1, 3, handleControlledShutdown) }

func handleControlledShutdown(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.ControlledShutdownRequest)
	resp := req.ResponseKind().(*kmsg.ControlledShutdownResponse)
	resp.ErrorCode = kerr.NotController.Code
	if !c.authorizedCluster(acl.OpClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if c.b.plane.zk == nil {
		return resp, nil
	}
	loop := c.b.plane.zk.Loop()
	if loop == nil {
		return resp, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), alterPartitionTimeout)
	defer cancel()
	out, err := loop.ControlledShutdown(ctx, req)
	if err != nil {
		resp.ErrorCode = kerr.RequestTimedOut.Code
		return resp, nil
	}
	out.Version = req.Version
	return out, nil
}
