package broker

// The transaction coordinator through franz-go and raw requests: commits
// and aborts end with their markers in every partition of the
// transaction; a second producer with the same transactional id fences
// the first, with each API's code; a transaction left open past its
// timeout is aborted; bad requests get Kafka's codes.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator/group"
	"github.com/sluice-io/sluice/engine"
)

// txnClient is a franz-go transactional producer, closed at cleanup.
func txnClient(t testing.TB, addr, id string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{kgo.SeedBrokers(addr), kgo.TransactionalID(id), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner())}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produceTxn produces values to topic's partition in one transaction and
// ends it with commit.
func produceTxn(t testing.TB, ctx context.Context, cl *kgo.Client, topic string, commit bool, values map[int32][]string) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for p, vs := range values {
		for _, v := range vs {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %q to %s-%d: %v", v, topic, p, err)
			}
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("end transaction (commit %v): %v", commit, err)
	}
}

// awaitTxnState waits until DescribeTransactions shows id in state.
func awaitTxnState(t testing.TB, ctx context.Context, adm *kadm.Client, id, state string) kadm.DescribedTransaction {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var last kadm.DescribedTransaction
	for {
		ds, err := adm.DescribeTransactions(ctx, id)
		if err == nil {
			if d, ok := ds[id]; ok && d.Err == nil {
				last = d
				if d.State == state {
					return d
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("transactional id %s: still %+v (err %v), want state %s", id, last, err, state)
		case <-tick.C:
		}
	}
}

// marker is a control batch read from a log.
type marker struct {
	engine.ControlRecord
	ProducerID    int64
	ProducerEpoch int16
	Offset        int64
}

// markers reads a partition's log and returns its markers in order.
func (tb *testBroker) markers(t testing.TB, topic string, partition int32) []marker {
	t.Helper()
	p := tb.partition(topic, partition)
	if p == nil {
		t.Fatalf("%s-%d is not hosted", topic, partition)
	}
	var out []marker
	end := p.Log.EndOffset()
	for off := p.Log.StartOffset(); off < end; {
		v, err := p.Log.Read(off, 1<<20, end)
		if err != nil {
			t.Fatal(err)
		}
		buf, err := v.AppendTo(nil)
		v.Release()
		if err != nil {
			t.Fatal(err)
		}
		for pos := 0; pos < len(buf); {
			h, err := engine.ParseBatchHeader(buf[pos:])
			if err != nil {
				t.Fatal(err)
			}
			b := buf[pos : pos+int(h.Size())]
			if h.Control() {
				cr, err := engine.ParseControlBatch(b)
				if err != nil {
					t.Fatalf("%s-%d at %d: %v", topic, partition, h.BaseOffset, err)
				}
				out = append(out, marker{cr, h.ProducerID, h.ProducerEpoch, h.BaseOffset})
			}
			off = h.LastOffset() + 1
			pos += int(h.Size())
		}
	}
	return out
}

func TestTxnCommitAndAbortWriteMarkers(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := ctxTimeout(t, 60*time.Second)
	adm := tb.admin(t)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	cl := txnClient(t, tb.addr, "writer")
	produceTxn(t, ctx, cl, "orders", true, map[int32][]string{0: {"a", "b"}, 1: {"c"}})
	d := awaitTxnState(t, ctx, adm, "writer", "CompleteCommit")
	if d.ProducerEpoch != 0 || len(d.Topics) != 0 {
		t.Errorf("after commit: %+v, want epoch 0 and no partitions", d)
	}
	produceTxn(t, ctx, cl, "orders", false, map[int32][]string{1: {"d"}, 2: {"e"}})
	awaitTxnState(t, ctx, adm, "writer", "CompleteAbort")

	want := map[int32][]engine.ControlType{0: {engine.ControlCommit}, 1: {engine.ControlCommit, engine.ControlAbort}, 2: {engine.ControlAbort}}
	for p, types := range want {
		ms := tb.markers(t, "orders", p)
		if len(ms) != len(types) {
			t.Fatalf("orders-%d has %d markers (%+v), want %v", p, len(ms), ms, types)
		}
		for i, m := range ms {
			if m.Type != types[i] || m.ProducerID != d.ProducerID || m.ProducerEpoch != 0 {
				t.Errorf("orders-%d marker %d: %+v, want %v from producer %d epoch 0", p, i, m, types[i], d.ProducerID)
			}
		}
	}
	ls, err := adm.ListTransactions(ctx, nil, []string{"CompleteAbort"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ls["writer"]; !ok || len(ls) != 1 {
		t.Errorf("ListTransactions CompleteAbort: %+v, want writer", ls)
	}
	if ls, err := adm.ListTransactions(ctx, nil, []string{"Ongoing"}); err != nil || len(ls) != 0 {
		t.Errorf("ListTransactions Ongoing: %+v (%v), want none", ls, err)
	}
}

// rawTxn is a transactional producer's identity for raw requests.
type rawTxn struct {
	id    string
	pid   int64
	epoch int16
}

func (rt rawTxn) endTxn(rc *rawConn, v int16, commit bool) int16 {
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = rt.id, rt.pid, rt.epoch, commit
	return rc.roundTrip(req, v).(*kmsg.EndTxnResponse).ErrorCode
}

func (rt rawTxn) addOffsets(rc *rawConn, v int16, group string) int16 {
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = rt.id, rt.pid, rt.epoch, group
	return rc.roundTrip(req, v).(*kmsg.AddOffsetsToTxnResponse).ErrorCode
}

// addPartitions sends AddPartitionsToTxn v3 and returns each partition's
// code by "topic-partition".
func (rt rawTxn) addPartitions(rc *rawConn, v int16, topic string, partitions ...int32) map[int32]int16 {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = rt.id, rt.pid, rt.epoch
	t := kmsg.NewAddPartitionsToTxnRequestTopic()
	t.Topic, t.Partitions = topic, partitions
	req.Topics = append(req.Topics, t)
	resp := rc.roundTrip(req, v).(*kmsg.AddPartitionsToTxnResponse)
	out := map[int32]int16{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			out[rp.Partition] = rp.ErrorCode
		}
	}
	return out
}

// initTxn sends InitProducerId v4 for id with the KIP-360 producer id and
// epoch (-1, -1 for none).
func initTxn(rc *rawConn, id string, timeoutMs int32, pid int64, epoch int16) (rawTxn, int16) {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = &id, timeoutMs, pid, epoch
	resp := rc.roundTrip(req, 4).(*kmsg.InitProducerIDResponse)
	return rawTxn{id, resp.ProducerID, resp.ProducerEpoch}, resp.ErrorCode
}

// findTxnCoordinator sends FindCoordinator for a transactional id until
// it is answered (the first creates __transaction_state).
func findTxnCoordinator(t testing.TB, ctx context.Context, cl *kgo.Client, id string) {
	t.Helper()
	for {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKey = 1, id
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && resp.ErrorCode == 0 {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("FindCoordinator %s: %v %+v", id, err, resp)
		}
	}
}

func TestTxnFencing(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := ctxTimeout(t, 60*time.Second)
	adm := tb.admin(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "f"); err != nil {
		t.Fatal(err)
	}
	old := txnClient(t, tb.addr, "fenced")
	if err := old.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := old.ProduceSync(ctx, &kgo.Record{Topic: "f", Value: []byte("old")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	d := awaitTxnState(t, ctx, adm, "fenced", "Ongoing")
	stale := rawTxn{"fenced", d.ProducerID, d.ProducerEpoch}

	// The second producer's InitProducerId aborts the first one's
	// transaction under a bumped epoch; it then commits its own.
	newer := txnClient(t, tb.addr, "fenced")
	produceTxn(t, ctx, newer, "f", true, map[int32][]string{0: {"new"}})
	now := awaitTxnState(t, ctx, adm, "fenced", "CompleteCommit")
	if now.ProducerID != stale.pid || now.ProducerEpoch != stale.epoch+2 {
		t.Fatalf("after the fence: producer %d epoch %d, want %d epoch %d", now.ProducerID, now.ProducerEpoch, stale.pid, stale.epoch+2)
	}
	ms := tb.markers(t, "f", 0)
	if len(ms) != 2 || ms[0].Type != engine.ControlAbort || ms[0].ProducerEpoch != stale.epoch+1 ||
		ms[1].Type != engine.ControlCommit || ms[1].ProducerEpoch != stale.epoch+2 {
		t.Fatalf("markers of f-0: %+v, want the fence's abort at epoch %d then the commit at %d", ms, stale.epoch+1, stale.epoch+2)
	}

	// Every API refuses the fenced epoch with Kafka 3.9's code.
	rc := dialRaw(t, tb.addr)
	wantCode(t, "EndTxn v3 from the fenced producer", stale.endTxn(rc, 3, true), kerr.ProducerFenced)
	wantCode(t, "EndTxn v1 from the fenced producer", stale.endTxn(rc, 1, true), kerr.InvalidProducerEpoch)
	wantCode(t, "AddPartitionsToTxn v3 from the fenced producer", stale.addPartitions(rc, 3, "f", 0)[0], kerr.ProducerFenced)
	wantCode(t, "AddOffsetsToTxn v3 from the fenced producer", stale.addOffsets(rc, 3, "g"), kerr.ProducerFenced)
	_, code := initTxn(rc, "fenced", 60000, stale.pid, stale.epoch)
	wantCode(t, "InitProducerId v4 with the fenced epoch", code, kerr.ProducerFenced)
	txnID := "fenced"
	req := produceReq("f", 0, -1, txnBatch(stale.pid, stale.epoch, 1, "late"))
	req.TransactionID = &txnID
	resp := rc.roundTrip(req, 9).(*kmsg.ProduceResponse)
	wantCode(t, "Produce from the fenced producer", resp.Topics[0].Partitions[0].ErrorCode, kerr.InvalidProducerEpoch)

	// The old client can write nothing more.
	if err := old.ProduceSync(ctx, &kgo.Record{Topic: "f", Value: []byte("old again")}).FirstErr(); err == nil {
		t.Error("the fenced client produced a record")
	}
	if err := old.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Error("the fenced client committed")
	}
	if got := tb.partition("f", 0).Log.EndOffset(); got != 4 {
		t.Errorf("f-0 ends at %d, want 4 (old, abort, new, commit)", got)
	}
}

// txnBatch is a transactional batch of values from producer pid at epoch.
func txnBatch(pid int64, epoch int16, seq int32, values ...string) []byte {
	b := batch(values...)
	b[22] |= 0x10 // attributes: transactional
	return withProducer(b, pid, epoch, seq)
}

func TestTxnTimedOutIsAborted(t *testing.T) {
	tb := startBroker(t, t.TempDir(), func(c *config.Config) { c.Txns.AbortCheck = 20 * time.Millisecond })
	ctx := ctxTimeout(t, 60*time.Second)
	adm := tb.admin(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "s"); err != nil {
		t.Fatal(err)
	}
	cl := txnClient(t, tb.addr, "slow", kgo.TransactionTimeout(time.Second))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "s", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	open := awaitTxnState(t, ctx, adm, "slow", "Ongoing")
	if open.TimeoutMillis != 1000 {
		t.Errorf("timeout %d ms, want 1000", open.TimeoutMillis)
	}
	if lso := tb.partition("s", 0).Log.LastStableOffset(); lso != 0 {
		t.Errorf("s-0's last stable offset with the transaction open: %d, want 0", lso)
	}
	d := awaitTxnState(t, ctx, adm, "slow", "CompleteAbort")
	if d.ProducerEpoch != open.ProducerEpoch+1 {
		t.Errorf("after the timeout: epoch %d, want %d", d.ProducerEpoch, open.ProducerEpoch+1)
	}
	ms := tb.markers(t, "s", 0)
	if len(ms) != 1 || ms[0].Type != engine.ControlAbort || ms[0].ProducerEpoch != open.ProducerEpoch+1 {
		t.Fatalf("markers of s-0: %+v, want one abort at epoch %d", ms, open.ProducerEpoch+1)
	}
	// The last stable offset moved past the aborted transaction: a
	// read_committed ListOffsets says so.
	lsos, err := adm.ListCommittedOffsets(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := lsos.Lookup("s", 0); o.Offset != 2 {
		t.Errorf("s-0's read_committed end after the abort: %+v, want 2 (the record and its abort marker)", o)
	}
	rc := dialRaw(t, tb.addr)
	wantCode(t, "EndTxn after the timeout", rawTxn{"slow", open.ProducerID, open.ProducerEpoch}.endTxn(rc, 3, true), kerr.ProducerFenced)
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Error("the timed-out transaction committed")
	}
}

func TestTxnBadRequests(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := ctxTimeout(t, 60*time.Second)
	tb.createTopic(t, "b", 2)
	findTxnCoordinator(t, ctx, tb.client(t), "bad")
	rc := dialRaw(t, tb.addr)

	_, code := initTxn(rc, "bad", 0, -1, -1)
	wantCode(t, "InitProducerId with timeout 0", code, kerr.InvalidTransactionTimeout)
	_, code = initTxn(rc, "bad", 900001, -1, -1)
	wantCode(t, "InitProducerId above transaction.max.timeout.ms", code, kerr.InvalidTransactionTimeout)
	p, code := initTxn(rc, "bad", 60000, -1, -1)
	wantCode(t, "InitProducerId", code, nil)

	wantCode(t, "EndTxn before any AddPartitionsToTxn", p.endTxn(rc, 3, true), kerr.InvalidTxnState)
	codes := p.addPartitions(rc, 3, "nope", 0)
	wantCode(t, "AddPartitionsToTxn of an unknown topic", codes[0], kerr.UnknownTopicOrPartition)
	codes = p.addPartitions(rc, 3, "b", 0, 7)
	wantCode(t, "AddPartitionsToTxn of an unknown partition", codes[7], kerr.UnknownTopicOrPartition)
	wantCode(t, "AddPartitionsToTxn beside an unknown partition", codes[0], kerr.OperationNotAttempted)
	wantCode(t, "AddPartitionsToTxn from another producer id", rawTxn{"bad", p.pid + 1, 0}.addPartitions(rc, 3, "b", 0)[0], kerr.InvalidProducerIDMapping)
	wantCode(t, "AddPartitionsToTxn", p.addPartitions(rc, 3, "b", 0)[0], nil)

	// The broker-side verification form (v4+).
	verify := func(rt rawTxn, partitions ...int32) map[int32]int16 {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = rt.id, rt.pid, rt.epoch, true
		tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		tt.Topic, tt.Partitions = "b", partitions
		tx.Topics = append(tx.Topics, tt)
		req.Transactions = append(req.Transactions, tx)
		resp := rc.roundTrip(req, 5).(*kmsg.AddPartitionsToTxnResponse)
		out := map[int32]int16{}
		for _, rtx := range resp.Transactions {
			for _, rt := range rtx.Topics {
				for _, rp := range rt.Partitions {
					out[rp.Partition] = rp.ErrorCode
				}
			}
		}
		return out
	}
	got := verify(p, 0, 1)
	wantCode(t, "verifying a partition in the transaction", got[0], nil)
	wantCode(t, "verifying a partition not in the transaction", got[1], kerr.InvalidTxnState)
	wantCode(t, "verifying with another epoch", verify(rawTxn{p.id, p.pid, p.epoch + 1}, 0)[0], kerr.ProducerFenced)

	wantCode(t, "EndTxn from another producer id", rawTxn{"bad", p.pid + 1, p.epoch}.endTxn(rc, 3, true), kerr.InvalidProducerIDMapping)
	wantCode(t, "EndTxn with a newer epoch", rawTxn{"bad", p.pid, p.epoch + 1}.endTxn(rc, 3, true), kerr.ProducerFenced)
	wantCode(t, "EndTxn of an unknown transactional id", rawTxn{"unknown", p.pid, p.epoch}.endTxn(rc, 3, true), kerr.InvalidProducerIDMapping)
	wantCode(t, "EndTxn with an empty transactional id", rawTxn{"", p.pid, p.epoch}.endTxn(rc, 3, true), kerr.InvalidRequest)
	wantCode(t, "EndTxn abort", p.endTxn(rc, 3, false), nil)
	wantCode(t, "EndTxn commit after the abort", p.endTxn(rc, 3, true), kerr.InvalidTxnState)

	// A re-init bumps the epoch: the older one is fenced. While the abort's
	// markers are being written it is CONCURRENT_TRANSACTIONS, which
	// clients retry.
	var p2 rawTxn
	for {
		p2, code = initTxn(rc, "bad", 60000, p.pid, p.epoch)
		if code != kerr.ConcurrentTransactions.Code || ctx.Err() != nil {
			break
		}
	}
	wantCode(t, "InitProducerId with the current epoch", code, nil)
	if p2.pid != p.pid || p2.epoch != p.epoch+1 {
		t.Fatalf("re-init: producer %d epoch %d, want %d epoch %d", p2.pid, p2.epoch, p.pid, p.epoch+1)
	}
	wantCode(t, "AddPartitionsToTxn with the stale epoch", p.addPartitions(rc, 3, "b", 1)[1], kerr.ProducerFenced)
	wantCode(t, "EndTxn with the stale epoch", p.endTxn(rc, 3, false), kerr.ProducerFenced)

	dreq := kmsg.NewPtrDescribeTransactionsRequest()
	dreq.TransactionalIDs = []string{"bad", "never"}
	dresp := rc.roundTrip(dreq, 0).(*kmsg.DescribeTransactionsResponse)
	for _, ts := range dresp.TransactionStates {
		switch ts.TransactionalID {
		case "bad":
			if ts.ErrorCode != 0 || ts.State != "Empty" || ts.ProducerEpoch != p2.epoch || ts.StartTimestamp != -1 {
				t.Errorf("DescribeTransactions bad: %+v, want Empty at epoch %d", ts, p2.epoch)
			}
		case "never":
			wantCode(t, "DescribeTransactions of an unknown id", ts.ErrorCode, kerr.TransactionalIDNotFound)
		}
	}
}

// The coordinator's state is loaded again from __transaction_state after
// a restart: a committed transaction stays committed, an open one stays
// open until its producer's successor aborts it.
func TestTxnStateSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	tb := serveBroker(t, dir, nil)
	ctx := ctxTimeout(t, 60*time.Second)
	adm := kadm.NewClient(tb.ownClient(t))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "r"); err != nil {
		t.Fatal(err)
	}
	done := txnClient(t, tb.addr, "done")
	produceTxn(t, ctx, done, "r", true, map[int32][]string{0: {"committed"}})
	awaitTxnState(t, ctx, adm, "done", "CompleteCommit")
	open := txnClient(t, tb.addr, "open")
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := open.ProduceSync(ctx, &kgo.Record{Topic: "r", Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	before := awaitTxnState(t, ctx, adm, "open", "Ongoing")
	adm.Close()
	tb.stop(t)

	tb = startBroker(t, dir, nil)
	adm = tb.admin(t)
	if d := awaitTxnState(t, ctx, adm, "done", "CompleteCommit"); d.ProducerEpoch != 0 {
		t.Errorf("done after the restart: %+v", d)
	}
	after := awaitTxnState(t, ctx, adm, "open", "Ongoing")
	if after.ProducerID != before.ProducerID || after.ProducerEpoch != before.ProducerEpoch || len(after.Topics["r"]) != 1 {
		t.Errorf("open after the restart: %+v, want %+v", after, before)
	}
	next := txnClient(t, tb.addr, "open")
	produceTxn(t, ctx, next, "r", true, map[int32][]string{0: {"next"}})
	awaitTxnState(t, ctx, adm, "open", "CompleteCommit")
	ms := tb.markers(t, "r", 0)
	if len(ms) != 3 || ms[0].Type != engine.ControlCommit || ms[1].Type != engine.ControlAbort || ms[1].ProducerID != before.ProducerID || ms[2].Type != engine.ControlCommit {
		t.Errorf("markers of r-0: %+v, want done's commit, open's abort, next's commit", ms)
	}
}

// An idle transactional id expires after transactional.id.expiration.ms:
// its state is tombstoned and it is no longer known.
func TestTxnIDExpires(t *testing.T) {
	tb := startBroker(t, t.TempDir(), func(c *config.Config) {
		c.Txns.IDExpiration, c.Txns.ExpireCheck = 200*time.Millisecond, 20*time.Millisecond
	})
	ctx := ctxTimeout(t, 30*time.Second)
	tb.createTopic(t, "x", 1)
	cl := txnClient(t, tb.addr, "short-lived")
	produceTxn(t, ctx, cl, "x", true, map[int32][]string{0: {"v"}})
	adm := tb.admin(t)
	awaitTxnState(t, ctx, adm, "short-lived", "CompleteCommit")
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ds, err := adm.DescribeTransactions(ctx, "short-lived")
		var d kadm.DescribedTransaction
		if err == nil {
			d = ds["short-lived"]
		}
		if err == nil && errors.Is(d.Err, kerr.TransactionalIDNotFound) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("short-lived never expired: %+v %v", d, err)
		case <-tick.C:
		}
	}
	// Its records and its tombstone are in __transaction_state.
	p := group.PartitionFor("short-lived", 50)
	if got := tb.partition(txnStateTopic, p).Log.EndOffset(); got < 4 {
		t.Errorf("%s-%d ends at %d: want the id's records and its tombstone", txnStateTopic, p, got)
	}
}

// A coordinator that wrote PrepareCommit but no marker before it stopped
// (its markers held) sends them when it loads the partition again after a
// restart: the transaction ends committed in every partition, none left
// open, even though the broker learns the topics (UpdateMetadata) after it
// is made the leader (LeaderAndIsr).
func TestTxnMarkersResentAfterRestart(t *testing.T) {
	dir := t.TempDir()
	tb := serveBroker(t, dir, nil)
	ctx := ctxTimeout(t, 60*time.Second)
	tb.createTopic(t, "held", 2)
	tb.coords.txns.HoldMarkers(true)
	cl := txnClient(t, tb.addr, "held")
	produceTxn(t, ctx, cl, "held", true, map[int32][]string{0: {"a"}, 1: {"b"}})
	adm := kadm.NewClient(tb.ownClient(t))
	awaitTxnState(t, ctx, adm, "held", "PrepareCommit")
	for p := range int32(2) {
		if ms := tb.markers(t, "held", p); len(ms) != 0 {
			t.Fatalf("held-%d has markers %+v while they are held", p, ms)
		}
	}
	adm.Close()
	cl.Close()
	tb.stop(t)

	tb = startBroker(t, dir, nil)
	awaitTxnState(t, ctx, tb.admin(t), "held", "CompleteCommit")
	for p := range int32(2) {
		ms := tb.markers(t, "held", p)
		if len(ms) != 1 || ms[0].Type != engine.ControlCommit {
			t.Errorf("held-%d: markers %+v, want one commit", p, ms)
		}
		if fu := tb.partition("held", p).Log.FirstUnstableOffset(); fu != -1 {
			t.Errorf("held-%d: a transaction is still open at %d", p, fu)
		}
	}
}
