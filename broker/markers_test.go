package broker

// The partition side of transactions, driven with raw requests (no
// transaction coordinator): transactional batches, WriteTxnMarkers,
// read_committed Fetch and ListOffsets, DescribeProducers, and the
// group coordinator's transactional offsets.

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
)

// txnBatchOf is idempotentBatch with the transactional attribute (bit 4).
func txnBatchOf(pid int64, epoch int16, seq int32, values ...string) []byte {
	b := idempotentBatch(pid, epoch, seq, values...)
	be := binary.BigEndian
	be.PutUint16(b[21:], be.Uint16(b[21:])|0x10)
	return fixBatchCRC(b)
}

// txnProduce sends one transactional Produce (v11, a transactional id)
// and returns the partition's code and base offset.
func txnProduce(rc *rawConn, topic string, partition int32, records []byte) (int16, int64) {
	rc.t.Helper()
	req := produceReq(topic, partition, -1, records)
	req.TransactionID = kmsg.StringPtr("tx")
	p := rc.roundTrip(req, 11).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	return p.ErrorCode, p.BaseOffset
}

// markerReq is a WriteTxnMarkers request of one marker.
func markerReq(pid int64, epoch int16, commit bool, coordEpoch int32, topic string, partitions ...int32) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = pid, epoch, commit, coordEpoch
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topic, partitions
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	return req
}

// writeMarker sends one marker over rc (v1) and returns its partitions'
// codes.
func writeMarker(rc *rawConn, pid int64, epoch int16, commit bool, coordEpoch int32, topic string, partitions ...int32) []int16 {
	rc.t.Helper()
	resp := rc.roundTrip(markerReq(pid, epoch, commit, coordEpoch, topic, partitions...), 1).(*kmsg.WriteTxnMarkersResponse)
	var out []int16
	for _, m := range resp.Markers {
		if m.ProducerID != pid {
			rc.t.Fatalf("marker answered for producer %d, want %d", m.ProducerID, pid)
		}
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				out = append(out, p.ErrorCode)
			}
		}
	}
	return out
}

func mustMark(t *testing.T, rc *rawConn, pid int64, epoch int16, commit bool, coordEpoch int32, topic string, partition int32) {
	t.Helper()
	if codes := writeMarker(rc, pid, epoch, commit, coordEpoch, topic, partition); len(codes) != 1 || codes[0] != 0 {
		t.Fatalf("marker for producer %d (commit %v) on %s-%d: %v", pid, commit, topic, partition, codes)
	}
}

// listLatest answers ListOffsets latest for one partition at isolation.
func listLatest(rc *rawConn, topic string, partition int32, isolation int8) int64 {
	rc.t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID, req.IsolationLevel = -1, isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = partition, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	p := rc.roundTrip(req, 9).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		rc.t.Fatalf("ListOffsets %s-%d: %v", topic, partition, kerr.ErrorForCode(p.ErrorCode))
	}
	return p.Offset
}

// rawFetch fetches one partition from offset at isolation and returns the
// partition's answer.
func rawFetch(rc *rawConn, topic string, id [16]byte, offset int64, isolation int8) kmsg.FetchResponseTopicPartition {
	rc.t.Helper()
	req := fetchReq(topic, id, 0, offset, 1<<20)
	req.IsolationLevel = isolation
	resp := rc.roundTrip(req, 17).(*kmsg.FetchResponse)
	return resp.Topics[0].Partitions[0]
}

// consumeUntil reads partition 0 of topic with kgo at isolation from the
// start until it has seen the value last, and returns the values.
func (tb *testBroker) consumeUntil(t *testing.T, topic string, committed bool, last string) []string {
	t.Helper()
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl := tb.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}), kgo.FetchIsolationLevel(iso))
	defer cl.Close()
	ctx := ctxTimeout(t, 10*time.Second)
	var out []string
	for !slices.Contains(out, last) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consuming %s (read_committed %v): got %v, never %q", topic, committed, out, last)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("consuming %s-%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return out
}

// TestReadCommitted: transactional batches hold the last stable offset at
// the oldest open transaction; COMMIT and ABORT markers move it;
// read_committed consumers (franz-go) see committed records only and
// read_uncommitted ones everything; ListOffsets read_committed answers the
// last stable offset; a restart keeps it all.
func TestReadCommitted(t *testing.T) {
	dir := t.TempDir()
	tb := serveBroker(t, dir, noTxnVerification)
	defer func() { tb.stop(t) }()
	id := tb.createTopic(t, "rc", 1)
	rc := dialRaw(t, tb.addr)
	pidA := rc.roundTrip(initProducerIDReq(nil, -1, -1), 5).(*kmsg.InitProducerIDResponse).ProducerID
	pidB := rc.roundTrip(initProducerIDReq(nil, -1, -1), 5).(*kmsg.InitProducerIDResponse).ProducerID

	for _, s := range []struct {
		batch []byte
		base  int64
	}{
		{txnBatchOf(pidA, 0, 0, "a1", "a2"), 0},
		{txnBatchOf(pidB, 0, 0, "b1"), 2},
	} {
		if code, base := txnProduce(rc, "rc", 0, s.batch); code != 0 || base != s.base {
			t.Fatalf("transactional produce: %v at %d, want %d", kerr.ErrorForCode(code), base, s.base)
		}
	}
	if code, _ := rc.produceCode(11, "rc", 0, batch("p1")); code != 0 { // 3
		t.Fatal(kerr.ErrorForCode(code))
	}
	wantStable := func(what string, lso int64) {
		t.Helper()
		if got := listLatest(rc, "rc", 0, 1); got != lso {
			t.Errorf("%s: ListOffsets read_committed %d, want %d", what, got, lso)
		}
		if got := rawFetch(rc, "rc", id, 0, 0).LastStableOffset; got != lso {
			t.Errorf("%s: Fetch's last stable offset %d, want %d", what, got, lso)
		}
	}
	wantStable("both open", 0)
	if got := listLatest(rc, "rc", 0, 0); got != 4 {
		t.Errorf("ListOffsets read_uncommitted %d, want 4", got)
	}
	if p := rawFetch(rc, "rc", id, 0, 1); len(p.RecordBatches) != 0 || p.HighWatermark != 4 {
		t.Errorf("read_committed fetch below the first open transaction: %d bytes, high watermark %d", len(p.RecordBatches), p.HighWatermark)
	}
	mustMark(t, rc, pidA, 0, true, 0, "rc", 0) // 4
	wantStable("A committed", 2)
	mustMark(t, rc, pidB, 0, false, 0, "rc", 0) // 5
	wantStable("B aborted", 6)
	if code, _ := rc.produceCode(11, "rc", 0, batch("end")); code != 0 { // 6
		t.Fatal(kerr.ErrorForCode(code))
	}
	check := func(what string, open ...string) {
		t.Helper()
		if got, want := tb.consumeUntil(t, "rc", true, "end"), []string{"a1", "a2", "p1", "end"}; !slices.Equal(got, want) {
			t.Errorf("%s: read_committed %v, want %v", what, got, want)
		}
		want := append([]string{"a1", "a2", "b1", "p1", "end"}, open...)
		if got := tb.consumeUntil(t, "rc", false, want[len(want)-1]); !slices.Equal(got, want) {
			t.Errorf("%s: read_uncommitted %v, want %v", what, got, want)
		}
		p := rawFetch(rc, "rc", id, 0, 1)
		if len(p.AbortedTransactions) != 1 || p.AbortedTransactions[0].ProducerID != pidB || p.AbortedTransactions[0].FirstOffset != 2 {
			t.Errorf("%s: aborted transactions %+v, want B's from 2", what, p.AbortedTransactions)
		}
		if p := rawFetch(rc, "rc", id, 6, 1); len(p.AbortedTransactions) != 0 {
			t.Errorf("%s: aborted transactions after the abort marker: %+v", what, p.AbortedTransactions)
		}
		if p := rawFetch(rc, "rc", id, 0, 0); len(p.AbortedTransactions) != 0 {
			t.Errorf("%s: read_uncommitted fetch told of aborted transactions: %+v", what, p.AbortedTransactions)
		}
	}
	check("live")

	// A transaction left open over a restart keeps holding the last
	// stable offset; its marker releases it after.
	if code, base := txnProduce(rc, "rc", 0, txnBatchOf(pidA, 0, 2, "a3")); code != 0 || base != 7 {
		t.Fatalf("A's second transaction: %v at %d", kerr.ErrorForCode(code), base)
	}
	tb.stop(t)
	tb = serveBroker(t, dir, noTxnVerification)
	rc = dialRaw(t, tb.addr)
	wantStable("restarted, A open", 7)
	check("restarted", "a3")
	// The partition remembers the producers: A's retry is a duplicate and
	// its non-transactional batch during its open transaction refused.
	if code, base := txnProduce(rc, "rc", 0, txnBatchOf(pidA, 0, 2, "a3")); code != 0 || base != 7 {
		t.Errorf("A's retry after the restart: %v at %d, want its first offset 7", kerr.ErrorForCode(code), base)
	}
	code, _ := rc.produceCode(11, "rc", 0, idempotentBatch(pidA, 0, 3, "not in the txn"))
	wantCode(t, "a non-transactional batch during the transaction", code, kerr.InvalidTxnState)
	mustMark(t, rc, pidA, 0, true, 0, "rc", 0)
	wantStable("A's second committed", 9)
	if got := tb.consumeUntil(t, "rc", true, "a3"); !slices.Equal(got, []string{"a1", "a2", "p1", "end", "a3"}) {
		t.Errorf("after the restart's commit: %v", got)
	}
}

// TestWriteTxnMarkersErrors: fenced producer and coordinator epochs,
// unknown partitions, and Produce's whole-request checks.
func TestWriteTxnMarkersErrors(t *testing.T) {
	tb := startBroker(t, t.TempDir(), noTxnVerification)
	tb.createTopic(t, "m", 2)
	rc := dialRaw(t, tb.addr)
	pid := rc.roundTrip(initProducerIDReq(nil, -1, -1), 5).(*kmsg.InitProducerIDResponse).ProducerID

	if code, _ := txnProduce(rc, "m", 0, txnBatchOf(pid, 1, 0, "x")); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	codes := writeMarker(rc, pid, 0, true, 3, "m", 0)
	wantCode(t, "marker of an older producer epoch", codes[0], kerr.InvalidProducerEpoch)
	mustMark(t, rc, pid, 1, false, 3, "m", 0)
	codes = writeMarker(rc, pid, 1, true, 2, "m", 0)
	wantCode(t, "marker of an older coordinator epoch", codes[0], kerr.TransactionCoordinatorFenced)
	// A marker for a producer with no open transaction is written, and a
	// marker of partition 1 (never written by pid) too.
	codes = writeMarker(rc, pid, 1, true, 3, "m", 0, 1, 7)
	if len(codes) != 3 || codes[0] != 0 || codes[1] != 0 || codes[2] != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("markers for partitions 0, 1 and 7: %v", codes)
	}
	codes = writeMarker(rc, pid, 1, true, 3, "nope", 0)
	wantCode(t, "marker for an unknown topic", codes[0], kerr.UnknownTopicOrPartition)
	if end := tb.partition("m", 0).Log.EndOffset(); end != 3 {
		t.Errorf("partition 0 ends at %d, want 3 (the batch and two markers)", end)
	}

	// Produce: transactional batches without a transactional id, and of
	// two producers in one request, are refused whole.
	req := produceReq("m", 0, -1, txnBatchOf(pid, 1, 1, "y"))
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 1, batch("plain")
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
	for _, p := range rc.roundTrip(req, 11).(*kmsg.ProduceResponse).Topics[0].Partitions {
		wantCode(t, fmt.Sprintf("no transactional id, partition %d", p.Partition), p.ErrorCode, kerr.TransactionalIDAuthorizationFailed)
	}
	req = produceReq("m", 0, -1, txnBatchOf(pid, 1, 1, "y"))
	req.TransactionID = kmsg.StringPtr("tx")
	rp.Records = txnBatchOf(pid+1, 0, 0, "other producer")
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
	for _, p := range rc.roundTrip(req, 11).(*kmsg.ProduceResponse).Topics[0].Partitions {
		wantCode(t, fmt.Sprintf("two producers, partition %d", p.Partition), p.ErrorCode, kerr.InvalidProducerIDMapping)
	}
	// A transactional id with a plain batch is accepted.
	req = produceReq("m", 1, -1, batch("plain"))
	req.TransactionID = kmsg.StringPtr("tx")
	wantCode(t, "transactional id, plain batch", rc.roundTrip(req, 11).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode, nil)
	// A client's control batch is still refused.
	code, _ := txnProduce(rc, "m", 0, engine.AppendControlBatch(nil, pid, 1, engine.ControlCommit, 9, time.Now().UnixMilli()))
	wantCode(t, "a client's marker", code, kerr.InvalidRecord)
}

// TestDescribeProducers: a partition's producers, the open transaction's
// first offset, the coordinator epoch of the last marker.
func TestDescribeProducers(t *testing.T) {
	tb := startBroker(t, t.TempDir(), noTxnVerification)
	tb.createTopic(t, "dp", 1)
	rc := dialRaw(t, tb.addr)
	pid := rc.roundTrip(initProducerIDReq(nil, -1, -1), 5).(*kmsg.InitProducerIDResponse).ProducerID
	if code, _ := rc.produceCode(11, "dp", 0, idempotentBatch(pid, 0, 0, "a", "b")); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	mustMark(t, rc, pid, 0, false, 4, "dp", 0) // no transaction open: written, sets the epoch
	if code, _ := txnProduce(rc, "dp", 0, txnBatchOf(pid, 0, 2, "c")); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	describe := func(topic string, partitions ...int32) []kmsg.DescribeProducersResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrDescribeProducersRequest()
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = topic, partitions
		req.Topics = append(req.Topics, rt)
		return rc.roundTrip(req, 0).(*kmsg.DescribeProducersResponse).Topics[0].Partitions
	}
	got := describe("dp", 0, 5)
	if len(got) != 2 || got[0].ErrorCode != 0 || len(got[0].ActiveProducers) != 1 {
		t.Fatalf("DescribeProducers: %+v", got)
	}
	ap := got[0].ActiveProducers[0]
	if ap.ProducerID != pid || ap.ProducerEpoch != 0 || ap.LastSequence != 2 || ap.CoordinatorEpoch != 4 || ap.CurrentTxnStartOffset != 3 || ap.LastTimestamp <= 0 {
		t.Errorf("producer %+v, want %d epoch 0, last sequence 2, coordinator epoch 4, transaction from 3", ap, pid)
	}
	wantCode(t, "unknown partition", got[1].ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "unknown topic", describe("nope", 0)[0].ErrorCode, kerr.UnknownTopicOrPartition)
}

// TestReadCommittedLongPoll: a read_committed fetch parked at the last
// stable offset, with an open transaction's records above it, is answered
// when the marker moves the last stable offset.
func TestReadCommittedLongPoll(t *testing.T) {
	tb := startBroker(t, t.TempDir(), noTxnVerification)
	id := tb.createTopic(t, "lpc", 1)
	rc := dialRaw(t, tb.addr)
	pid := rc.roundTrip(initProducerIDReq(nil, -1, -1), 5).(*kmsg.InitProducerIDResponse).ProducerID
	if code, _ := txnProduce(rc, "lpc", 0, txnBatchOf(pid, 0, 0, "t1", "t2")); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	req := fetchReq("lpc", id, 0, 0, 1<<20)
	req.IsolationLevel, req.MaxWaitMillis, req.MinBytes = 1, 30000, 1
	res := fetchAsync(ctxTimeout(t, 40*time.Second), tb, t, req)
	notAnswered(t, res, 300*time.Millisecond)
	mustMark(t, rc, pid, 0, true, 0, "lpc", 0)
	select {
	case r := <-res:
		if got := fetchedValues(t, r); !slices.Equal(got, []string{"t1", "t2"}) || r.took > 10*time.Second {
			t.Errorf("woken fetch: %v after %v", got, r.took)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the marker did not wake the read_committed fetch")
	}
}

// TestTxnOffsetCommitThroughMarkers: offsets committed in a transaction
// are invisible to OffsetFetch (UNSTABLE_OFFSET_COMMIT with RequireStable)
// until the producer's COMMIT marker lands on the group's
// __consumer_offsets partition, never after an ABORT, and stay pending
// across a restart until their marker.
func TestTxnOffsetCommitThroughMarkers(t *testing.T) {
	dir := t.TempDir()
	tb := serveBroker(t, dir, noTxnVerification)
	defer func() { tb.stop(t) }()
	tb.createTopic(t, "in", 2)
	rc := dialRaw(t, tb.addr)
	pid := rc.roundTrip(initProducerIDReq(nil, -1, -1), 5).(*kmsg.InitProducerIDResponse).ProducerID

	commit := func(offset int64, partitions ...int32) {
		t.Helper()
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx", "eos", pid, 0
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "in"
		for _, p := range partitions {
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, offset
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		for _, p := range rc.roundTrip(req, 3).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions {
			if p.ErrorCode != 0 {
				t.Fatalf("TxnOffsetCommit partition %d: %v", p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	}
	// fetched answers partitions 0 and 1's offsets and codes.
	fetched := func(stable bool) ([2]int64, [2]int16) {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		req.RequireStable = stable
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = "eos"
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.Partitions = "in", []int32{0, 1}
		rg.Topics = append(rg.Topics, rt)
		req.Groups = append(req.Groups, rg)
		g := rc.roundTrip(req, 9).(*kmsg.OffsetFetchResponse).Groups[0]
		if g.ErrorCode != 0 {
			t.Fatalf("OffsetFetch: %v", kerr.ErrorForCode(g.ErrorCode))
		}
		var offs [2]int64
		var codes [2]int16
		for _, p := range g.Topics[0].Partitions {
			offs[p.Partition], codes[p.Partition] = p.Offset, p.ErrorCode
		}
		return offs, codes
	}
	want := func(what string, stable bool, offs [2]int64, codes [2]int16) {
		t.Helper()
		if o, c := fetched(stable); o != offs || c != codes {
			t.Errorf("%s: offsets %v codes %v, want %v %v", what, o, c, offs, codes)
		}
	}
	unstable := kerr.UnstableOffsetCommit.Code
	commit(10, 0, 1)
	g, err := tb.groupCoordinator()
	if err != nil {
		t.Fatal(err)
	}
	gp := int32(-1)
	for p := range g.Partitions() {
		if tb.partition(offsetsTopic, p).Log.FirstUnstableOffset() >= 0 {
			gp = p
		}
	}
	if gp < 0 {
		t.Fatal("no __consumer_offsets partition holds the open transaction")
	}
	want("pending", false, [2]int64{-1, -1}, [2]int16{})
	want("pending, stable", true, [2]int64{-1, -1}, [2]int16{unstable, unstable})
	mustMark(t, rc, pid, 0, true, 0, offsetsTopic, gp)
	want("committed", true, [2]int64{10, 10}, [2]int16{})

	commit(20, 0)
	mustMark(t, rc, pid, 0, false, 0, offsetsTopic, gp)
	want("aborted", true, [2]int64{10, 10}, [2]int16{})

	// Pending over a restart: reloaded pending, completed by the marker.
	commit(30, 1)
	tb.stop(t)
	tb = serveBroker(t, dir, noTxnVerification)
	rc = dialRaw(t, tb.addr)
	want("pending after the restart", true, [2]int64{10, -1}, [2]int16{0, unstable})
	mustMark(t, rc, pid, 0, true, 0, offsetsTopic, gp)
	want("committed after the restart", true, [2]int64{10, 30}, [2]int16{})
	// And that survives another restart.
	tb.stop(t)
	tb = serveBroker(t, dir, noTxnVerification)
	rc = dialRaw(t, tb.addr)
	want("reloaded", true, [2]int64{10, 30}, [2]int16{})
}

// TestWriteTxnMarkersInProcess: the transaction coordinator's driver calls
// writeTxnMarkers directly, with the network handler's semantics; a
// partition whose ISR is below min.insync.replicas refuses the marker
// (NOT_ENOUGH_REPLICAS) before writing it.
func TestWriteTxnMarkersInProcess(t *testing.T) {
	tb := startBroker(t, t.TempDir(), noTxnVerification)
	tb.createTopic(t, "ip", 1)
	tb.createTopicWith(t, "isr2", "min.insync.replicas", "2")
	rc := dialRaw(t, tb.addr)
	pid := rc.roundTrip(initProducerIDReq(nil, -1, -1), 5).(*kmsg.InitProducerIDResponse).ProducerID
	if code, _ := txnProduce(rc, "ip", 0, txnBatchOf(pid, 0, 0, "x")); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	req := markerReq(pid, 0, true, 1, "ip", 0)
	m2 := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	m2.Topic, m2.Partitions = "isr2", []int32{0}
	req.Markers[0].Topics = append(req.Markers[0].Topics, m2)
	resp := tb.writeTxnMarkers(ctxTimeout(t, 10*time.Second), req)
	if len(resp.Markers) != 1 || len(resp.Markers[0].Topics) != 2 {
		t.Fatalf("response %+v", resp)
	}
	wantCode(t, "the marker", resp.Markers[0].Topics[0].Partitions[0].ErrorCode, nil)
	wantCode(t, "min.insync.replicas=2 on one broker", resp.Markers[0].Topics[1].Partitions[0].ErrorCode, kerr.NotEnoughReplicas)
	if p := tb.partition("ip", 0); p.Log.FirstUnstableOffset() != -1 || p.LastStableOffset(p.HighWatermark()) != 2 {
		t.Errorf("after the in-process marker: first unstable %d, last stable %d", p.Log.FirstUnstableOffset(), p.LastStableOffset(p.HighWatermark()))
	}
	if end := tb.partition("isr2", 0).Log.EndOffset(); end != 0 {
		t.Errorf("the refused marker was written: isr2-0 ends at %d", end)
	}
}
