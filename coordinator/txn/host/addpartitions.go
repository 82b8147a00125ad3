package host

// AddPartitionsToTxn's part on the coordinator (Kafka's
// TransactionCoordinator.handleAddPartitionsToTransaction and
// handleVerifyPartitionsInTransaction): the rules are written in
// broker/24_add_partitions_to_txn.go.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator/txn"
	"github.com/sluice-io/sluice/engine"
)

// AddPartitions handles one transaction's partitions of an
// AddPartitionsToTxn of version. writable, when not nil, says which topics
// the client may add: the others are TOPIC_AUTHORIZATION_FAILED, the
// partitions exists does not know UNKNOWN_TOPIC_OR_PARTITION, and either
// fails the whole transaction's (the rest OPERATION_NOT_ATTEMPTED).
func (cs *Coordinators) AddPartitions(version int16, t *kmsg.AddPartitionsToTxnRequestTransaction, writable func(string) bool, exists func(topic string, partition int32) bool) []kmsg.AddPartitionsToTxnResponseTransactionTopic {
	codes := map[engine.Partition]int16{}
	var ps []engine.Partition
	unknown := false
	for _, rt := range t.Topics {
		for _, p := range rt.Partitions {
			tp := engine.Partition{Topic: rt.Topic, Partition: p}
			if _, dup := codes[tp]; dup {
				continue
			}
			ps = append(ps, tp)
			codes[tp] = 0
			if writable != nil && !writable(rt.Topic) {
				codes[tp] = kerr.TopicAuthorizationFailed.Code
				unknown = true
			} else if !exists(rt.Topic, p) {
				codes[tp] = kerr.UnknownTopicOrPartition.Code
				unknown = true
			}
		}
	}
	id := t.TransactionalID
	switch {
	case unknown:
		for _, tp := range ps {
			if codes[tp] == 0 {
				codes[tp] = kerr.OperationNotAttempted.Code
			}
		}
	case id == "":
		setAll(codes, kerr.InvalidRequest.Code)
	case t.VerifyOnly:
		cs.verifyPartitions(t, codes)
	default:
		a := cs.Call(id, func(r uint64) txn.Event {
			return txn.AddPartitions{Req: r, Version: version, TransactionalID: id,
				ProducerID: t.ProducerID, Epoch: t.ProducerEpoch, Partitions: ps}
		})
		setAll(codes, a.Code)
	}
	return AnswerTopics(t, func(tp engine.Partition) int16 { return codes[tp] })
}

func setAll(codes map[engine.Partition]int16, code int16) {
	for tp := range codes {
		codes[tp] = code
	}
}

// verifyPartitions checks, from the coordinator's written state, that the
// partitions are in the producer's ongoing transaction (KIP-890's
// VerifyOnly).
func (cs *Coordinators) verifyPartitions(t *kmsg.AddPartitionsToTxnRequestTransaction, codes map[engine.Partition]int16) {
	d, code := cs.DriverFor(t.TransactionalID)
	if d == nil {
		setAll(codes, code)
		return
	}
	ctx, cancel := cs.closingContext(CallTimeout)
	defer cancel()
	var m txn.Metadata
	var found bool
	if !d.Inspect(ctx, func(c *txn.Coordinator) { m, found = c.Get(t.TransactionalID) }) {
		setAll(codes, kerr.NotCoordinator.Code)
		return
	}
	switch {
	case !found || m.ProducerID != t.ProducerID:
		setAll(codes, kerr.InvalidProducerIDMapping.Code)
		return
	case m.Epoch != t.ProducerEpoch:
		setAll(codes, kerr.ProducerFenced.Code)
		return
	case m.State == txn.PrepareCommit || m.State == txn.PrepareAbort:
		setAll(codes, kerr.ConcurrentTransactions.Code)
		return
	}
	in := map[engine.Partition]bool{}
	if m.State == txn.Ongoing {
		for _, p := range m.Partitions {
			in[p] = true
		}
	}
	for tp := range codes {
		if !in[tp] {
			codes[tp] = kerr.InvalidTxnState.Code
		}
	}
}
