package broker

// AddOffsetsToTxn (key 25), versions 0-4, as Kafka 3.9 serves them: the
// group's partition of __consumer_offsets joins the transaction, so that
// the offsets TxnOffsetCommit writes there commit or abort with it. The
// transactional id's coordinator decides (coordinator/txn), with the
// errors of AddPartitionsToTxn; an empty transactional id is
// INVALID_REQUEST. Needs Write on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and Read on the group
// (GROUP_AUTHORIZATION_FAILED).
//
// Version notes: v3+ is flexible; v4 adds no field (KIP-890's retriable
// errors).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator/txn"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(25, 0, 4, handleAddOffsetsToTxn) }

func handleAddOffsetsToTxn(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	if req.TransactionalID == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	if !c.authorized(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	if !c.authorized(acl.OpRead, acl.ResourceGroup, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	a := c.b.coords.txns.Call(req.TransactionalID, func(id uint64) txn.Event {
		return txn.AddOffsets{Req: id, Version: req.Version, TransactionalID: req.TransactionalID,
			ProducerID: req.ProducerID, Epoch: req.ProducerEpoch, Group: req.Group}
	})
	resp.ErrorCode = a.Code
	return resp, nil
}
