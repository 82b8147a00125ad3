package broker

// EndTxn (key 26), versions 0-4, as Kafka 3.9 serves them: commit or abort
// the transaction. The transactional id's coordinator decides
// (coordinator/txn): answered once PrepareCommit or PrepareAbort is
// written to __transaction_state, after which the markers go to every
// partition of the transaction, retried until written. A stale epoch is
// PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2), another producer id
// INVALID_PRODUCER_ID_MAPPING, an outcome that contradicts the one decided
// or a transaction not begun INVALID_TXN_STATE; an empty transactional id
// is INVALID_REQUEST. Needs Write on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
//
// Version notes: v3+ is flexible; v4 adds no field; v5 (KIP-890's epoch
// bump, Kafka 4.0) is not served.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator/txn"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(26, 0, 4, handleEndTxn) }

func handleEndTxn(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	if req.TransactionalID == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	if !c.authorized(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	a := c.b.coords.txns.Call(req.TransactionalID, func(id uint64) txn.Event {
		return txn.EndTxn{Req: id, Version: req.Version, TransactionalID: req.TransactionalID,
			ProducerID: req.ProducerID, Epoch: req.ProducerEpoch, Commit: req.Commit}
	})
	resp.ErrorCode = a.Code
	return resp, nil
}
