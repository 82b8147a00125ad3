package broker

// Transaction verification on the partition leader (KIP-890 part 1): a
// Produce's transactional batches that open their producer's transaction
// in a partition are verified with the transactional id's coordinator
// first, through coordinator/txn/host's Verifier (its verifier.go tells
// the rules), which the broker builds here.

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/coordinator/group"
	txnhost "github.com/sluice-io/sluice/coordinator/txn/host"
	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire/interbroker"
)

// txnVerdict is a partition's outcome of its verification: the guard to
// append with, or the code (and message) it is answered.
type txnVerdict struct {
	guard engine.VerificationGuard
	code  int16
	msg   string
}

// newVerifier builds the verifier over this broker's metadata cache, its
// own AddPartitionsToTxn and its connections.
func (b *Broker) newVerifier() *txnhost.Verifier {
	opts := txnhost.VerifierOptions{
		Enabled: b.cfg.Txns.VerifyPartitions(), Self: b.cfg.ID,
		Coordinator: b.txnCoordinatorNode,
		Local: func(version int16, t *kmsg.AddPartitionsToTxnRequestTransaction) []kmsg.AddPartitionsToTxnResponseTransactionTopic {
			return b.addPartitionsToTxn(version, t, nil) // 24_add_partitions_to_txn.go
		},
		ClientID: "broker-" + strconv.Itoa(int(b.cfg.ID)) + "-txn-verification",
		Logger:   b.log, Closing: b.life.closing,
	}
	if b.plane.zk != nil {
		opts.Dial = func(o interbroker.Options) interbroker.Sender { return b.openInterBroker(b.plane.zk.Client(), o) }
	}
	return txnhost.NewVerifier(opts)
}

// txnCoordinatorNode is the broker leading the transactional id's
// partition of __transaction_state, or -1 if none is live.
func (b *Broker) txnCoordinatorNode(transactionalID string) int32 {
	snap := b.plane.state.Cache.Load()
	t := snap.Topics[txnStateTopic]
	if t == nil {
		return -1
	}
	cp, ok := t.Partitions[group.PartitionFor(transactionalID, b.txnPartitions())]
	if !ok || cp.Leader < 0 || snap.LiveBroker(cp.Leader) == nil {
		return -1
	}
	return cp.Leader
}

// verifyProduce starts the verification of every partition of a Produce
// whose transactional batch needs one, waits for the coordinator, and
// returns each such partition's verdict; nil when no partition needs one
// (verification disabled, no transactional id or batch, every producer's
// transaction already open). The request passed host.CheckTransactional: its
// transactional batches carry one producer id and epoch. Partitions the
// client may not write, or this broker does not lead, are left to the
// append, which refuses them.
func (c *conn) verifyProduce(req *kmsg.ProduceRequest) map[engine.Partition]txnVerdict {
	b := c.b
	if req.TransactionID == nil || !b.coords.verifier.Enabled() {
		return nil
	}
	var verdicts map[engine.Partition]txnVerdict
	t := kmsg.NewAddPartitionsToTxnRequestTransaction()
	t.TransactionalID = *req.TransactionID
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			h, err := engine.ParseBatchHeader(rp.Records)
			if err != nil || !h.Transactional() || h.ProducerID < 0 || cluster.IsInternal(rt.Topic) ||
				!c.authorized(acl.OpWrite, acl.ResourceTopic, rt.Topic) {
				continue
			}
			p, _ := b.leaderPartition(rt.Topic, rp.Partition)
			if p == nil {
				continue
			}
			guard := p.Log.StartTxnVerification(h.ProducerID, h.BaseSequence, h.ProducerEpoch)
			if guard == 0 {
				continue
			}
			if verdicts == nil {
				verdicts = map[engine.Partition]txnVerdict{}
			}
			tp := engine.Partition{Topic: rt.Topic, Partition: rp.Partition}
			if _, dup := verdicts[tp]; dup {
				continue
			}
			verdicts[tp] = txnVerdict{guard: guard}
			t.ProducerID, t.ProducerEpoch = h.ProducerID, h.ProducerEpoch
			if n := len(t.Topics); n == 0 || t.Topics[n-1].Topic != rt.Topic {
				tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
				tt.Topic = rt.Topic
				t.Topics = append(t.Topics, tt)
			}
			t.Topics[len(t.Topics)-1].Partitions = append(t.Topics[len(t.Topics)-1].Partitions, rp.Partition)
		}
	}
	if verdicts == nil {
		return nil
	}
	wait := txnhost.VerifyTimeout
	if req.TimeoutMillis > 0 {
		wait = time.Duration(req.TimeoutMillis) * time.Millisecond
	}
	for tp, code := range b.coords.verifier.Verify(t, wait) {
		if v, ok := verdicts[tp]; ok && code != 0 {
			v.code, v.msg = txnhost.ProduceError(code)
			verdicts[tp] = v
		}
	}
	return verdicts
}
