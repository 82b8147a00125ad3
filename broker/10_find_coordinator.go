package broker

// FindCoordinator (key 10), versions 0-5.
//
// Behavior:
//   - A group's coordinator is the leader of its partition of
//     __consumer_offsets (broker/cluster/directory.go; on the single node, itself);
//     the first request creates __consumer_offsets, as Kafka does.
//   - A transactional id's coordinator (key type 1) is the leader of its
//     partition of __transaction_state, created by the first such request
//     (txns.go). Another key type is INVALID_REQUEST.
//
// Version notes: v4+ batches keys; v0-3 answer one.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(10, 0, 5, handleFindCoordinator) }

func handleFindCoordinator(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		co := kmsg.NewFindCoordinatorResponseCoordinator()
		co.Key, co.NodeID, co.Port = key, -1, -1
		var msg string
		switch {
		case req.CoordinatorType == 0 && !c.authorized(acl.OpDescribe, acl.ResourceGroup, key):
			co.ErrorCode, msg = kerr.GroupAuthorizationFailed.Code, "Group authorization failed."
		case req.CoordinatorType == 1 && !c.authorized(acl.OpDescribe, acl.ResourceTransactionalID, key):
			co.ErrorCode, msg = kerr.TransactionalIDAuthorizationFailed.Code, "Transactional Id authorization failed."
		}
		switch {
		case co.ErrorCode != 0:
		case req.CoordinatorType == 0:
			co.NodeID, co.Host, co.Port, co.ErrorCode, msg = c.b.clusterCoordinator(key, c.Listener().Name)
		case req.CoordinatorType == 1:
			co.NodeID, co.Host, co.Port, co.ErrorCode, msg = c.b.txnCoordinator(key, c.Listener().Name)
		default:
			co.ErrorCode, msg = kerr.InvalidRequest.Code, "unknown coordinator type"
		}
		if co.ErrorCode != 0 {
			co.ErrorMessage = &msg
		}
		resp.Coordinators = append(resp.Coordinators, co)
	}
	if req.Version < 4 {
		co := resp.Coordinators[0]
		resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = co.ErrorCode, co.ErrorMessage, co.NodeID, co.Host, co.Port
		resp.Coordinators = nil
	}
	return resp, nil
}
