package broker

// InitProducerId (key 22), versions 0-5, as Kafka 3.9 serves them.
//
// Behavior:
//   - Without a transactional id (the idempotent producer): a producer id
//     never handed out before, at epoch 0. A v3+ request's producer id and
//     epoch (KIP-360: a producer recovering from an error) are not looked
//     at beyond the check below: Kafka's
//     TransactionCoordinator.handleInitProducerId "blindly accepts" a null
//     transactional id and returns a fresh id. Ids come from blocks of 1000
//     that the coordinator records durably before any is handed out
//     (producerids.go), so a restart skips the rest of a block and never
//     reuses an id. Ids are not tied to partitions: Produce accepts a
//     producer id it has not seen (at any sequence).
//   - A producer id of -1 with an epoch other than -1, or the reverse, is
//     INVALID_REQUEST (KafkaApis checks this before the coordinator).
//   - With a transactional id: answered by the id's transaction
//     coordinator (txns.go, coordinator/txn/host): an epoch bump that fences
//     the older producer, KIP-360's recovery with the producer id and epoch.
//     A transaction.timeout.ms outside (0, transaction.max.timeout.ms] is
//     INVALID_TRANSACTION_TIMEOUT (checked first, as Kafka's coordinator
//     does); this broker not leading the id's partition of
//     __transaction_state is NOT_COORDINATOR, still loading it
//     COORDINATOR_LOAD_IN_PROGRESS. An empty transactional id is
//     INVALID_REQUEST, as in Kafka's coordinator.
//   - When the coordinator cannot record a new block, the answer is
//     COORDINATOR_LOAD_IN_PROGRESS, which clients retry (what Kafka's KRaft
//     broker answers while it has no block); when the ids are exhausted,
//     UNKNOWN_SERVER_ERROR (Kafka's ZooKeeper allocator throws).
//   - Every error answer carries producer id -1 and epoch -1, as Kafka's.
//
// Version notes: v1 answers after throttling (no throttling here); v2+ is
// flexible; v3+ carries the producer id and epoch; v4 and v5 add error
// codes (PRODUCER_FENCED, TRANSACTION_ABORTABLE) only transactions return.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator/txn"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(22, 0, 5, handleInitProducerID) }

const (
	noProducerID    = -1 // Kafka's RecordBatch.NO_PRODUCER_ID
	noProducerEpoch = -1 // Kafka's RecordBatch.NO_PRODUCER_EPOCH
)

func handleInitProducerID(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = noProducerID, noProducerEpoch
	transactional := req.TransactionalID != nil && *req.TransactionalID != ""
	switch {
	case transactional && !c.authorized(acl.OpWrite, acl.ResourceTransactionalID, *req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
	case !transactional && !c.authorizedCluster(acl.OpIdempotentWrite) && !c.authorizedByType(acl.OpWrite, acl.ResourceTopic):
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	case (req.ProducerID == noProducerID) != (req.ProducerEpoch == noProducerEpoch):
		resp.ErrorCode = kerr.InvalidRequest.Code
	case transactional:
		id, timeout := *req.TransactionalID, req.TransactionTimeoutMillis
		if timeout <= 0 || int64(timeout) > c.b.cfg.Txns.WithDefaults().MaxTimeout.Milliseconds() {
			resp.ErrorCode = kerr.InvalidTransactionTimeout.Code
			break
		}
		a := c.b.coords.txns.Call(id, func(r uint64) txn.Event {
			return txn.InitProducerID{Req: r, Version: req.Version, TransactionalID: id, TimeoutMs: timeout,
				ProducerID: req.ProducerID, Epoch: req.ProducerEpoch}
		})
		resp.ErrorCode = a.Code
		if a.Code == 0 {
			resp.ProducerID, resp.ProducerEpoch = a.ProducerID, a.Epoch
		}
	case req.TransactionalID != nil:
		resp.ErrorCode = kerr.InvalidRequest.Code
	default:
		if id, code := c.b.coords.pids.ID(); code != 0 {
			resp.ErrorCode = code
		} else {
			resp.ProducerID, resp.ProducerEpoch = id, 0
		}
	}
	return resp, nil
}
