package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/engine"
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

// verifyTxn is a VerifyOnly transaction of topic t's partitions.
func verifyTxn(id string, epoch int16, topic string, partitions ...int32) kmsg.AddPartitionsToTxnRequestTransaction {
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch = id, 1, epoch
	tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	tt.Topic, tt.Partitions = topic, partitions
	tx.Topics = append(tx.Topics, tt)
	return tx
}

// TestTxnVerifierBatches: while a request to a coordinator is in flight,
// the next verifications queue and go as one request; a second
// verification of a queued transactional id replaces it (the first gets
// NETWORK_EXCEPTION, or INVALID_PRODUCER_EPOCH when the second has a newer
// epoch); an older epoch than the queued one is refused at once.
func TestTxnVerifierBatches(t *testing.T) {
	type call struct {
		req   *kmsg.AddPartitionsToTxnRequest
		reply chan *kmsg.AddPartitionsToTxnResponse
	}
	calls := make(chan call)
	v := &txnVerifier{send: func(_ context.Context, _ int32, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
		c := call{req, make(chan *kmsg.AddPartitionsToTxnResponse)}
		calls <- c
		if r := <-c.reply; r != nil {
			return r, nil
		}
		return nil, errors.New("connection refused")
	}}
	recv := func() call {
		t.Helper()
		select {
		case c := <-calls:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("no request sent")
			return call{}
		}
	}
	got := func(ch <-chan verifyCodes) verifyCodes {
		t.Helper()
		select {
		case c := <-ch:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("no answer")
			return nil
		}
	}
	first := v.verify(7, verifyTxn("a", 0, "t", 0))
	c1 := recv() // in flight
	b0 := v.verify(7, verifyTxn("b", 0, "t", 1))
	b1 := v.verify(7, verifyTxn("b", 0, "t", 1)) // a retry replaces it
	if c := got(b0); c[engine.Partition{Topic: "t", Partition: 1}] != kerr.NetworkException.Code {
		t.Fatalf("replaced verification: %v", c)
	}
	b2 := v.verify(7, verifyTxn("b", 1, "t", 1)) // a newer epoch fences it
	if c := got(b1); c[engine.Partition{Topic: "t", Partition: 1}] != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("fenced verification: %v", c)
	}
	if c := got(v.verify(7, verifyTxn("b", 0, "t", 1))); c[engine.Partition{Topic: "t", Partition: 1}] != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("older epoch: %v", c)
	}
	cc := v.verify(7, verifyTxn("c", 0, "t", 2))
	resp := c1.req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
	rt.TransactionalID = "a"
	rt.Topics = txnTopicsFailed(&c1.req.Transactions[0], kerr.InvalidTxnState.Code)
	resp.Transactions = append(resp.Transactions, rt)
	c1.reply <- resp
	if c := got(first); c[engine.Partition{Topic: "t", Partition: 0}] != kerr.InvalidTxnState.Code {
		t.Fatalf("a: %v", c)
	}
	c2 := recv()
	if n := len(c2.req.Transactions); n != 2 || !c2.req.Transactions[0].VerifyOnly || c2.req.Version < 4 {
		t.Fatalf("second request: %d transactions (%+v)", n, c2.req)
	}
	c2.reply <- nil // the request fails
	for _, ch := range []<-chan verifyCodes{b2, cc} {
		c := got(ch)
		if len(c) != 1 {
			t.Fatalf("failed request: %v", c)
		}
		for _, code := range c {
			if code != kerr.NetworkException.Code {
				t.Fatalf("failed request: %v", c)
			}
		}
	}
}

// TestVerifyAnswers: the coordinator's codes as Kafka's
// AddPartitionsToTxnManager and ReplicaManager translate them.
func TestVerifyAnswers(t *testing.T) {
	txns := []kmsg.AddPartitionsToTxnRequestTransaction{verifyTxn("a", 0, "t", 0, 1)}
	tp0, tp1 := engine.Partition{Topic: "t", Partition: 0}, engine.Partition{Topic: "t", Partition: 1}
	resp := kmsg.NewPtrAddPartitionsToTxnResponse()
	resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	if got := verifyAnswers(txns, resp, nil)["a"]; got[tp0] != kerr.InvalidTxnState.Code || got[tp1] != kerr.InvalidTxnState.Code {
		t.Errorf("CLUSTER_AUTHORIZATION_FAILED: %v", got)
	}
	resp.ErrorCode = 0
	rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
	rt.TransactionalID = "a"
	rt.Topics = txnTopicsFailed(&txns[0], kerr.ProducerFenced.Code)
	rt.Topics[0].Partitions[1].ErrorCode = 0
	resp.Transactions = append(resp.Transactions, rt)
	if got := verifyAnswers(txns, resp, nil)["a"]; len(got) != 1 || got[tp0] != kerr.InvalidProducerEpoch.Code {
		t.Errorf("PRODUCER_FENCED and verified: %v", got)
	}
	for code, want := range map[int16]int16{
		kerr.InvalidTxnState.Code:           kerr.InvalidTxnState.Code,
		kerr.NotCoordinator.Code:            kerr.NotEnoughReplicas.Code,
		kerr.ConcurrentTransactions.Code:    kerr.NotEnoughReplicas.Code,
		kerr.CoordinatorNotAvailable.Code:   kerr.NotEnoughReplicas.Code,
		kerr.NetworkException.Code:          kerr.NotEnoughReplicas.Code,
		kerr.CoordinatorLoadInProgress.Code: kerr.NotEnoughReplicas.Code,
		kerr.InvalidProducerEpoch.Code:      kerr.InvalidProducerEpoch.Code,
	} {
		if got, _ := verifyProduceError(code); got != want {
			t.Errorf("%v: answered %v, want %v", kerr.ErrorForCode(code), kerr.ErrorForCode(got), kerr.ErrorForCode(want))
		}
	}
}
