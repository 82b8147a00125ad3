package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
)

// noTxnVerification turns transaction.partition.verification.enable off:
// for tests of the partition side of transactions without a coordinator.
func noTxnVerification(c *config.Config) {
	off := false
	c.Txns.PartitionVerification = &off
}

// txnProduceAs sends one transactional Produce (v11) of records under a
// transactional id and returns the partition's answer.
func txnProduceAs(rc *rawConn, id, topic string, partition int32, records []byte) kmsg.ProduceResponseTopicPartition {
	rc.t.Helper()
	req := produceReq(topic, partition, -1, records)
	req.TransactionID = &id
	return rc.roundTrip(req, 11).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

// txnProduceSettled is txnProduceAs retried while the partition leader
// cannot verify the partition yet (NOT_ENOUGH_REPLICAS: the coordinator
// is still completing the transaction, CONCURRENT_TRANSACTIONS), as
// clients retry it.
func txnProduceSettled(ctx context.Context, rc *rawConn, id, topic string, partition int32, records []byte) kmsg.ProduceResponseTopicPartition {
	rc.t.Helper()
	for {
		sp := txnProduceAs(rc, id, topic, partition, records)
		if sp.ErrorCode != kerr.NotEnoughReplicas.Code || ctx.Err() != nil {
			return sp
		}
	}
}

// awaitStable waits until topic-partition's last stable offset (ListOffsets
// read_committed) reaches want: the coordinator's marker was written.
func awaitStable(t *testing.T, ctx context.Context, rc *rawConn, topic string, partition int32, want int64) {
	t.Helper()
	for listLatest(rc, topic, partition, 1) != want {
		if ctx.Err() != nil {
			t.Fatalf("%s-%d: last stable offset %d, never %d", topic, partition, listLatest(rc, topic, partition, 1), want)
		}
	}
}

// TestTxnVerifyProduce: a transactional batch for a partition never added
// to its transaction is refused INVALID_TXN_STATE and nothing is written
// (the last stable offset does not move); once added it is written; after
// the transaction ends, a late batch of it is refused; acks=0 is refused
// by closing the connection.
func TestTxnVerifyProduce(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := ctxTimeout(t, 60*time.Second)
	tb.createTopic(t, "v", 2)
	findTxnCoordinator(t, ctx, tb.client(t), "vt")
	rc := dialRaw(t, tb.addr)
	p, code := initTxn(rc, "vt", 60000, -1, -1)
	wantCode(t, "InitProducerId", code, nil)
	log0 := tb.partition("v", 0).Log
	refused := func(what string, partition int32, b []byte, want *kerr.Error) {
		t.Helper()
		log := tb.partition("v", partition).Log
		end := log.EndOffset()
		sp := txnProduceSettled(ctx, rc, "vt", "v", partition, b)
		wantCode(t, what, sp.ErrorCode, want)
		if want == kerr.InvalidTxnState && (sp.ErrorMessage == nil || *sp.ErrorMessage != "Partition was not added to the transaction") {
			t.Errorf("%s: message %v", what, sp.ErrorMessage)
		}
		if log.EndOffset() != end || sp.BaseOffset != -1 {
			t.Fatalf("%s: written (end %d, was %d; base %d)", what, log.EndOffset(), end, sp.BaseOffset)
		}
	}

	refused("a partition never added", 0, txnBatch(p.pid, p.epoch, 0, "x"), kerr.InvalidTxnState)
	if fu := log0.FirstUnstableOffset(); fu != -1 {
		t.Fatalf("first unstable offset %d after a refused batch, want none", fu)
	}
	if lso := listLatest(rc, "v", 0, 1); lso != 0 {
		t.Fatalf("last stable offset %d, want 0", lso)
	}
	acks0 := dialRaw(t, tb.addr)
	req := produceReq("v", 0, 0, txnBatch(p.pid, p.epoch, 0, "x"))
	req.TransactionID = kmsg.StringPtr("vt")
	req.Version = 11
	acks0.send(req)
	acks0.expectClosed("acks=0 transactional produce of a partition never added")
	if log0.EndOffset() != 0 {
		t.Fatalf("acks=0: written, end %d", log0.EndOffset())
	}

	wantCode(t, "AddPartitionsToTxn v-0", p.addPartitions(rc, 3, "v", 0)[0], nil)
	if sp := txnProduceAs(rc, "vt", "v", 0, txnBatch(p.pid, p.epoch, 0, "a1", "a2")); sp.ErrorCode != 0 || sp.BaseOffset != 0 {
		t.Fatalf("added partition: %v at %d", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
	if sp := txnProduceAs(rc, "vt", "v", 0, txnBatch(p.pid, p.epoch, 2, "a3")); sp.ErrorCode != 0 || sp.BaseOffset != 2 {
		t.Fatalf("second batch: %v at %d", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
	refused("v-1, not added, in the same transaction", 1, txnBatch(p.pid, p.epoch, 0, "b"), kerr.InvalidTxnState)
	if fu := log0.FirstUnstableOffset(); fu != 0 {
		t.Fatalf("first unstable offset %d, want 0", fu)
	}

	wantCode(t, "EndTxn commit", p.endTxn(rc, 3, true), nil)
	awaitStable(t, ctx, rc, "v", 0, 4) // a1 a2 a3, the marker
	refused("a late batch of the ended transaction", 0, txnBatch(p.pid, p.epoch, 3, "late"), kerr.InvalidTxnState)
	if lso := listLatest(rc, "v", 0, 1); lso != 4 || log0.FirstUnstableOffset() != -1 {
		t.Fatalf("after the late batch: last stable %d, first unstable %d", lso, log0.FirstUnstableOffset())
	}
	// Another epoch of the producer is fenced by the coordinator.
	refused("a fenced epoch", 0, txnBatch(p.pid, p.epoch+1, 0, "f"), kerr.InvalidProducerEpoch)
}

// TestTxnVerifyDisabled: with transaction.partition.verification.enable
// false a batch for a partition never added is written, as before KIP-890
// (and holds the last stable offset).
func TestTxnVerifyDisabled(t *testing.T) {
	tb := startBroker(t, t.TempDir(), noTxnVerification)
	ctx := ctxTimeout(t, 60*time.Second)
	tb.createTopic(t, "v", 1)
	findTxnCoordinator(t, ctx, tb.client(t), "vt")
	rc := dialRaw(t, tb.addr)
	p, code := initTxn(rc, "vt", 60000, -1, -1)
	wantCode(t, "InitProducerId", code, nil)
	if sp := txnProduceAs(rc, "vt", "v", 0, txnBatch(p.pid, p.epoch, 0, "x")); sp.ErrorCode != 0 || sp.BaseOffset != 0 {
		t.Fatalf("unverified batch: %v at %d", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
	if fu := tb.partition("v", 0).Log.FirstUnstableOffset(); fu != 0 {
		t.Fatalf("first unstable %d, want 0", fu)
	}
}

// TestTxnVerifyConfig: the key parses as Kafka's booleans do.
func TestTxnVerifyConfig(t *testing.T) {
	var c config.Config
	if !c.Txns.VerifyPartitions() {
		t.Fatal("default off")
	}
	for v, want := range map[string]bool{"false": false, "TRUE": true, "False": false} {
		if _, err := c.Apply(map[string]string{"transaction.partition.verification.enable": v}); err != nil || c.Txns.VerifyPartitions() != want {
			t.Errorf("%q: err %v, on %v", v, err, c.Txns.VerifyPartitions())
		}
	}
	if _, err := c.Apply(map[string]string{"transaction.partition.verification.enable": "yes"}); err == nil {
		t.Error("yes accepted")
	}
}

// TestClusterTxnVerify: the partition leader asks the coordinator, another
// broker, over the network.
func TestClusterTxnVerify(t *testing.T) {
	c := startCluster(t, 3, func(cfg *config.Config) { cfg.Txns.StatePartitions = 1 })
	ctx := ctxTimeout(t, 90*time.Second)
	cl := clusterClient(t, c.bootstrap())
	findTxnCoordinator(t, ctx, cl, "cv")
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType, req.CoordinatorKey = 1, "cv"
	fc, err := req.RequestWith(ctx, cl)
	if err != nil || fc.ErrorCode != 0 {
		t.Fatalf("FindCoordinator: %v %+v", err, fc)
	}
	coord := fc.NodeID
	c.createTopic(ctx, "cvt", 3, 1)
	var leader, part int32 = -1, -1
	for id := range int32(3) {
		if id != coord {
			if p := c.ledBy(id, "cvt"); p >= 0 {
				leader, part = id, p
				break
			}
		}
	}
	if leader < 0 {
		t.Fatalf("no partition of cvt led by a broker other than the coordinator %d", coord)
	}
	crc := dialRaw(t, c.broker(coord).addr)
	p, code := initTxn(crc, "cv", 60000, -1, -1)
	wantCode(t, "InitProducerId", code, nil)
	rc := dialRaw(t, c.broker(leader).addr)
	lp := c.broker(leader).partition("cvt", part)
	sp := txnProduceAs(rc, "cv", "cvt", part, txnBatch(p.pid, p.epoch, 0, "x"))
	wantCode(t, "not added, coordinator elsewhere", sp.ErrorCode, kerr.InvalidTxnState)
	if lp.Log.EndOffset() != 0 || lp.Log.FirstUnstableOffset() != -1 {
		t.Fatalf("written: end %d, first unstable %d", lp.Log.EndOffset(), lp.Log.FirstUnstableOffset())
	}
	wantCode(t, "AddPartitionsToTxn", p.addPartitions(crc, 3, "cvt", part)[part], nil)
	if sp := txnProduceAs(rc, "cv", "cvt", part, txnBatch(p.pid, p.epoch, 0, "x")); sp.ErrorCode != 0 || sp.BaseOffset != 0 {
		t.Fatalf("added: %v at %d", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
	wantCode(t, "EndTxn", p.endTxn(crc, 3, true), nil)
	awaitStable(t, ctx, rc, "cvt", part, 2)
	sp = txnProduceSettled(ctx, rc, "cv", "cvt", part, txnBatch(p.pid, p.epoch, 1, "late"))
	wantCode(t, "late batch", sp.ErrorCode, kerr.InvalidTxnState)
	if lp.Log.EndOffset() != 2 {
		t.Fatalf("late batch written: end %d", lp.Log.EndOffset())
	}
}
