package host

// Transaction verification on the partition leader (KIP-890 part 1), as
// Kafka 3.9's ReplicaManager.handleProduceAppend and
// AddPartitionsToTxnManager do it with
// transaction.partition.verification.enable (TxnConfig.PartitionVerification,
// default true):
//
//   - A Produce with a transactional id whose transactional batch is the
//     first of its producer in a partition without the producer's open
//     transaction starts a verification there (engine.Log
//     .StartTxnVerification: a guard). The partitions of the request that
//     need one are sent to the transactional id's coordinator — the leader
//     of its partition of __transaction_state, as the metadata cache names
//     it — as one transaction of an AddPartitionsToTxn v4 with VerifyOnly
//     (broker/24_add_partitions_to_txn.go answers it); when the coordinator
//     is this broker, by a call (VerifierOptions.Local). The request waits for the answer, at
//     most its timeout (request.timeout.ms when it has none), also with acks=0.
//   - Verifications for one coordinator are batched as Kafka's manager
//     batches them: while one request to it is in flight the next
//     transactions queue, and go as one request when it returns. A second
//     verification of a transactional id already queued replaces it: the
//     queued one is answered NETWORK_EXCEPTION (same epoch: the client
//     retried) or INVALID_PRODUCER_EPOCH (older epoch); one older than the
//     queued one is answered INVALID_PRODUCER_EPOCH itself.
//   - The coordinator's answer, per partition: 0 appends the batch with its
//     guard (the engine refuses it if the producer's transaction ended or
//     another verification started meanwhile: INVALID_TXN_STATE);
//     PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH and
//     TRANSACTION_ABORTABLE INVALID_TXN_STATE (what producers handle); a
//     top-level CLUSTER_AUTHORIZATION_FAILED is INVALID_TXN_STATE for every
//     partition, another top-level code that code. No coordinator (no live
//     leader) is COORDINATOR_NOT_AVAILABLE, a failed or timed-out request
//     NETWORK_EXCEPTION.
//   - The Produce answers the refused partitions with Kafka's translation
//     (ProduceError):
//     INVALID_TXN_STATE "Partition was not added to the transaction";
//     CONCURRENT_TRANSACTIONS, NETWORK_EXCEPTION,
//     COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE and
//     NOT_COORDINATOR become NOT_ENOUGH_REPLICAS (retried by every client,
//     without a metadata refresh); others as they are. Nothing is appended
//     for them.
//
//   - A TxnOffsetCommit's partition of __consumer_offsets is verified the
//     same way by the group coordinator before it writes the offsets
//     (VerifyPartition, through group.Store.VerifyTxn), without a sequence
//     and with request.timeout.ms; the offsets are appended with the
//     guard (AppendCoordinatorVerifiedNoWait). The group coordinator
//     translates the codes as Kafka's maybeConvertOffsetCommitError
//     (coordinator/group/txnoffsets.go).
//
// The decisions are pure functions (verifyAnswers, ProduceError) and the
// batching a value driven by a send function (Verifier), so both are
// tested without a network.

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
	rhost "github.com/sluice-io/sluice/replication/host"
	"github.com/sluice-io/sluice/wire/interbroker"
)

// errVerifierClosed answers verifications once the broker closes.
var errVerifierClosed = errors.New("txn host: transaction verification stopped")

// VerifyTimeout bounds one AddPartitionsToTxn to a coordinator
// (request.timeout.ms) and a Produce's wait without a timeout of its own.
const VerifyTimeout = 30 * time.Second

// Codes are a transaction's refused partitions and their codes, as the
// coordinator (or the failure to reach it) answered them.
type Codes map[engine.Partition]int16

// VerifierOptions are a broker's collaborators for its Verifier.
type VerifierOptions struct {
	// Enabled is transaction.partition.verification.enable.
	Enabled bool
	// Self is this broker's id: verifications for its own coordinators
	// are answered by Local.
	Self int32
	// Coordinator is the broker leading the transactional id's partition
	// of __transaction_state, or -1 if none is live.
	Coordinator func(transactionalID string) int32
	// Local answers one transaction's partitions as this broker's
	// AddPartitionsToTxn does.
	Local func(version int16, t *kmsg.AddPartitionsToTxnRequestTransaction) []kmsg.AddPartitionsToTxnResponseTransactionTopic
	// Dial opens the connections to other brokers' coordinators, on first
	// use; nil on the single node.
	Dial     func(interbroker.Options) interbroker.Sender
	ClientID string
	Logger   *slog.Logger
	// Closing is closed as the broker shuts down: waits end.
	Closing <-chan struct{}
}

// Verifier is Kafka's AddPartitionsToTxnManager: it batches the
// verifications for each coordinator. Its mu is a leaf lock.
type Verifier struct {
	opts VerifierOptions
	// send carries one request to a coordinator and returns its answer.
	send func(ctx context.Context, coordinator int32, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error)

	mu struct {
		sync.Mutex
		queued   map[int32]*verifyBatch // next request of each coordinator
		inflight map[int32]bool
		// sender carries verifications to other brokers' coordinators
		// (verifySender).
		sender interbroker.Sender
		closed bool
	}
}

// NewVerifier returns the verifier of a broker.
func NewVerifier(opts VerifierOptions) *Verifier {
	v := &Verifier{opts: opts}
	v.send = v.sendRequest
	return v
}

// Enabled reports whether transactional batches are verified.
func (v *Verifier) Enabled() bool { return v.opts.Enabled }

// verifyBatch is one request's transactions and who waits for each.
type verifyBatch struct {
	txns    []kmsg.AddPartitionsToTxnRequestTransaction
	waiters map[string]chan Codes // by transactional id; buffered 1
}

// verify queues t (VerifyOnly) for coordinator and returns where its
// answer comes.
func (v *Verifier) verify(coordinator int32, t kmsg.AddPartitionsToTxnRequestTransaction) <-chan Codes {
	ch := make(chan Codes, 1)
	t.VerifyOnly = true
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.mu.queued == nil {
		v.mu.queued, v.mu.inflight = map[int32]*verifyBatch{}, map[int32]bool{}
	}
	q := v.mu.queued[coordinator]
	if q == nil {
		q = &verifyBatch{waiters: map[string]chan Codes{}}
		v.mu.queued[coordinator] = q
	}
	for i := range q.txns {
		old := &q.txns[i]
		if old.TransactionalID != t.TransactionalID {
			continue
		}
		if t.ProducerEpoch < old.ProducerEpoch {
			ch <- allCodes(&t, kerr.InvalidProducerEpoch.Code)
			return ch
		}
		code := kerr.NetworkException.Code
		if old.ProducerEpoch < t.ProducerEpoch {
			code = kerr.InvalidProducerEpoch.Code
		}
		q.waiters[old.TransactionalID] <- allCodes(old, code)
		q.txns = append(q.txns[:i], q.txns[i+1:]...)
		break
	}
	q.txns = append(q.txns, t)
	q.waiters[t.TransactionalID] = ch
	if !v.mu.inflight[coordinator] {
		v.mu.inflight[coordinator] = true
		go v.run(coordinator)
	}
	return ch
}

// run sends the queued batches of coordinator, one request at a time,
// until none is queued.
func (v *Verifier) run(coordinator int32) {
	for {
		v.mu.Lock()
		q := v.mu.queued[coordinator]
		delete(v.mu.queued, coordinator)
		if q == nil {
			v.mu.inflight[coordinator] = false
			v.mu.Unlock()
			return
		}
		v.mu.Unlock()
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = 4
		req.Transactions = q.txns
		ctx, cancel := context.WithTimeout(context.Background(), VerifyTimeout)
		resp, err := v.send(ctx, coordinator, req)
		cancel()
		answers := verifyAnswers(q.txns, resp, err)
		for id, ch := range q.waiters {
			ch <- answers[id]
		}
	}
}

// allCodes answers every partition of t with code.
func allCodes(t *kmsg.AddPartitionsToTxnRequestTransaction, code int16) Codes {
	out := Codes{}
	for _, rt := range t.Topics {
		for _, p := range rt.Partitions {
			out[engine.Partition{Topic: rt.Topic, Partition: p}] = code
		}
	}
	return out
}

// verifyAnswers reads a coordinator's answer (or the error of the request)
// into each transaction's refused partitions, as Kafka's
// AddPartitionsToTxnManager reads it: a partition the answer leaves out
// is verified.
func verifyAnswers(txns []kmsg.AddPartitionsToTxnRequestTransaction, resp *kmsg.AddPartitionsToTxnResponse, err error) map[string]Codes {
	out := map[string]Codes{}
	all := func(code int16) map[string]Codes {
		for i := range txns {
			out[txns[i].TransactionalID] = allCodes(&txns[i], code)
		}
		return out
	}
	switch {
	case err != nil || resp == nil:
		return all(kerr.NetworkException.Code)
	case resp.ErrorCode == kerr.ClusterAuthorizationFailed.Code:
		// Not for the client's eyes: the verification did not complete.
		return all(kerr.InvalidTxnState.Code)
	case resp.ErrorCode != 0:
		return all(resp.ErrorCode)
	}
	for _, rt := range resp.Transactions {
		codes := Codes{}
		for _, tt := range rt.Topics {
			for _, p := range tt.Partitions {
				code := p.ErrorCode
				switch code {
				case 0:
					continue
				case kerr.ProducerFenced.Code:
					code = kerr.InvalidProducerEpoch.Code
				case kerr.TransactionAbortable.Code:
					code = kerr.InvalidTxnState.Code
				}
				codes[engine.Partition{Topic: tt.Topic, Partition: p.Partition}] = code
			}
		}
		out[rt.TransactionalID] = codes
	}
	for i := range txns {
		if _, ok := out[txns[i].TransactionalID]; !ok {
			// Unanswered: not verified.
			out[txns[i].TransactionalID] = allCodes(&txns[i], kerr.NetworkException.Code)
		}
	}
	return out
}

// ProduceError is the code and message a Produce answers for a
// partition whose verification failed with code (ReplicaManager's
// translation).
func ProduceError(code int16) (int16, string) {
	switch code {
	case kerr.InvalidTxnState.Code:
		return code, "Partition was not added to the transaction"
	case kerr.ConcurrentTransactions.Code, kerr.NetworkException.Code, kerr.CoordinatorLoadInProgress.Code,
		kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
		return kerr.NotEnoughReplicas.Code, "Unable to verify the partition has been added to the transaction. Underlying error: " +
			kerr.ErrorForCode(code).(*kerr.Error).Message
	}
	return code, ""
}

// sendRequest is the Verifier's send: a call when the coordinator is
// this broker, else AddPartitionsToTxn over the inter-broker listener.
func (v *Verifier) sendRequest(ctx context.Context, coordinator int32, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
	if coordinator == v.opts.Self {
		resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		for i := range req.Transactions {
			t := &req.Transactions[i]
			rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
			rt.TransactionalID = t.TransactionalID
			rt.Topics = v.opts.Local(req.Version, t)
			resp.Transactions = append(resp.Transactions, rt)
		}
		return resp, nil
	}
	s := v.verifySender()
	if s == nil {
		return nil, errVerifierClosed
	}
	r, err := s.Send(ctx, coordinator, req)
	if err != nil {
		v.opts.Logger.Debug("verifying partitions in a transaction", "coordinator", coordinator, "err", err)
		return nil, err
	}
	return r.(*kmsg.AddPartitionsToTxnResponse), nil
}

// verifySender is the connection pool verifications to other brokers go
// through, made on first use; nil on the single node or once closed.
func (v *Verifier) verifySender() interbroker.Sender {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.mu.sender == nil && v.opts.Dial != nil && !v.mu.closed {
		v.mu.sender = v.opts.Dial(interbroker.Options{RequestTimeout: VerifyTimeout, ClientID: v.opts.ClientID})
	}
	return v.mu.sender
}

// Close closes the verifier's connections; verifications after it fail.
func (v *Verifier) Close() {
	v.mu.Lock()
	s := v.mu.sender
	v.mu.sender, v.mu.closed = nil, true
	v.mu.Unlock()
	if s != nil {
		s.Close()
	}
}

// Verify sends t to its transactional id's coordinator, batched with
// others for it, and waits for the answer at most wait: the refused
// partitions and their codes (COORDINATOR_NOT_AVAILABLE for every
// partition without a live coordinator, NETWORK_EXCEPTION after wait or
// when the broker closes).
func (v *Verifier) Verify(t kmsg.AddPartitionsToTxnRequestTransaction, wait time.Duration) Codes {
	coord := v.opts.Coordinator(t.TransactionalID)
	if coord < 0 {
		return allCodes(&t, kerr.CoordinatorNotAvailable.Code)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case codes := <-v.verify(coord, t):
		return codes
	case <-timer.C:
	case <-v.opts.Closing:
	}
	return allCodes(&t, kerr.NetworkException.Code)
}

// VerifyPartition is the group coordinator's verification of a
// TxnOffsetCommit (group.Store.VerifyTxn; Kafka's
// ReplicaManager.maybeStartTransactionVerificationForPartition for the
// group's partition of __consumer_offsets, without a sequence): the
// partition must be in the producer's transaction, as AddOffsetsToTxn put
// it there. The guard is the zero one without verification
// (transaction.partition.verification.enable=false) or when the
// producer's transaction is already open in the partition. The
// coordinator's codes are verifyAnswers', untranslated (the group
// coordinator maps them as TxnOffsetCommit answers them).
func (v *Verifier) VerifyPartition(p *rhost.Partition, transactionalID string, producerID int64, producerEpoch int16) (engine.VerificationGuard, int16) {
	if !v.opts.Enabled {
		return 0, 0
	}
	guard := p.Log.StartTxnVerification(producerID, -1, producerEpoch)
	if guard == 0 {
		return 0, 0
	}
	t := kmsg.NewAddPartitionsToTxnRequestTransaction()
	t.TransactionalID, t.ProducerID, t.ProducerEpoch = transactionalID, producerID, producerEpoch
	tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	tt.Topic, tt.Partitions = p.Topic, []int32{p.Index}
	t.Topics = append(t.Topics, tt)
	if code := v.Verify(t, VerifyTimeout)[engine.Partition{Topic: p.Topic, Partition: p.Index}]; code != 0 {
		return 0, code
	}
	return guard, 0
}

// FailedTopics answers every partition of t with code, as
// AddPartitionsToTxn answers a transaction that fails as a whole.
func FailedTopics(t *kmsg.AddPartitionsToTxnRequestTransaction, code int16) []kmsg.AddPartitionsToTxnResponseTransactionTopic {
	return AnswerTopics(t, func(engine.Partition) int16 { return code })
}

// AnswerTopics answers every partition of t with its code.
func AnswerTopics(t *kmsg.AddPartitionsToTxnRequestTransaction, code func(engine.Partition) int16) []kmsg.AddPartitionsToTxnResponseTransactionTopic {
	var out []kmsg.AddPartitionsToTxnResponseTransactionTopic
	for _, rt := range t.Topics {
		ot := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
		ot.Topic = rt.Topic
		for _, p := range rt.Partitions {
			op := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
			op.Partition, op.ErrorCode = p, code(engine.Partition{Topic: rt.Topic, Partition: p})
			ot.Partitions = append(ot.Partitions, op)
		}
		out = append(out, ot)
	}
	return out
}
