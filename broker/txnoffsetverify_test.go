package broker

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnOffsetCommitAs sends TxnOffsetCommit v3 of offset for topic's
// partitions under rt's transaction and returns each partition's code.
func txnOffsetCommitAs(rc *rawConn, rt rawTxn, group, topic string, offset int64, partitions ...int32) map[int32]int16 {
	rc.t.Helper()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = rt.id, group, rt.pid, rt.epoch
	req.Generation = -1
	t := kmsg.NewTxnOffsetCommitRequestTopic()
	t.Topic = topic
	for _, p := range partitions {
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, offset
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = append(req.Topics, t)
	out := map[int32]int16{}
	for _, p := range rc.roundTrip(req, 3).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions {
		out[p.Partition] = p.ErrorCode
	}
	return out
}

// stableOffset is OffsetFetch v9 with RequireStable of group's offset of
// topic-partition and its code.
func stableOffset(rc *rawConn, group, topic string, partition int32) (int64, int16) {
	rc.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.RequireStable = true
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	rg.Topics = append(rg.Topics, rt)
	req.Groups = append(req.Groups, rg)
	g := rc.roundTrip(req, 9).(*kmsg.OffsetFetchResponse).Groups[0]
	if g.ErrorCode != 0 {
		rc.t.Fatalf("OffsetFetch %s: %v", group, kerr.ErrorForCode(g.ErrorCode))
	}
	p := g.Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

// openOffsetsTxns counts the partitions of __consumer_offsets holding an
// open transaction.
func openOffsetsTxns(t *testing.T, tb *testBroker) int {
	t.Helper()
	g, err := tb.groupCoordinator()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for p := range g.Partitions() {
		if tb.partition(offsetsTopic, p).Log.FirstUnstableOffset() >= 0 {
			n++
		}
	}
	return n
}

// TestTxnOffsetCommitVerify: a TxnOffsetCommit of a transaction that never
// added the group's partition (no AddOffsetsToTxn) is refused
// INVALID_TXN_STATE and nothing is written or pending; after
// AddOffsetsToTxn it is written, pending until the transaction commits.
func TestTxnOffsetCommitVerify(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := ctxTimeout(t, 60*time.Second)
	tb.createTopic(t, "in", 1)
	findTxnCoordinator(t, ctx, tb.client(t), "ot")
	rc := dialRaw(t, tb.addr)
	p, code := initTxn(rc, "ot", 60000, -1, -1)
	wantCode(t, "InitProducerId", code, nil)

	wantCode(t, "TxnOffsetCommit without AddOffsetsToTxn", txnOffsetCommitAs(rc, p, "eos", "in", 10, 0)[0], kerr.InvalidTxnState)
	if off, code := stableOffset(rc, "eos", "in", 0); off != -1 || code != 0 {
		t.Fatalf("after the refusal: offset %d, %v; want none, stable", off, kerr.ErrorForCode(code))
	}
	if n := openOffsetsTxns(t, tb); n != 0 {
		t.Fatalf("%d __consumer_offsets partitions hold an open transaction after the refusal", n)
	}
	// A data partition's AddPartitionsToTxn does not add the group's.
	wantCode(t, "AddPartitionsToTxn", p.addPartitions(rc, 3, "in", 0)[0], nil)
	wantCode(t, "TxnOffsetCommit, only in-0 added", txnOffsetCommitAs(rc, p, "eos", "in", 10, 0)[0], kerr.InvalidTxnState)

	wantCode(t, "AddOffsetsToTxn", p.addOffsets(rc, 3, "eos"), nil)
	wantCode(t, "TxnOffsetCommit after AddOffsetsToTxn", txnOffsetCommitAs(rc, p, "eos", "in", 10, 0)[0], nil)
	if _, code := stableOffset(rc, "eos", "in", 0); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("pending offsets: %v, want UNSTABLE_OFFSET_COMMIT", kerr.ErrorForCode(code))
	}
	// The transaction is open there now: a second commit needs no verification.
	wantCode(t, "second TxnOffsetCommit", txnOffsetCommitAs(rc, p, "eos", "in", 11, 0)[0], nil)
	wantCode(t, "EndTxn commit", p.endTxn(rc, 3, true), nil)
	awaitCommitted(t, ctx, rc, "eos", "in", 0, 11)
}

// awaitCommitted waits until group's stable offset of topic-partition is
// want (the transaction's marker landed).
func awaitCommitted(t *testing.T, ctx context.Context, rc *rawConn, group, topic string, partition int32, want int64) {
	t.Helper()
	for {
		off, code := stableOffset(rc, group, topic, partition)
		if off == want && code == 0 {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%s %s-%d: offset %d (%v), never %d", group, topic, partition, off, kerr.ErrorForCode(code), want)
		}
	}
}

// TestTxnOffsetCommitVerifyDisabled: with
// transaction.partition.verification.enable false a TxnOffsetCommit
// without AddOffsetsToTxn is written, as before KIP-890.
func TestTxnOffsetCommitVerifyDisabled(t *testing.T) {
	tb := startBroker(t, t.TempDir(), noTxnVerification)
	ctx := ctxTimeout(t, 60*time.Second)
	tb.createTopic(t, "in", 1)
	findTxnCoordinator(t, ctx, tb.client(t), "ot")
	rc := dialRaw(t, tb.addr)
	p, code := initTxn(rc, "ot", 60000, -1, -1)
	wantCode(t, "InitProducerId", code, nil)
	wantCode(t, "TxnOffsetCommit without AddOffsetsToTxn", txnOffsetCommitAs(rc, p, "eos", "in", 10, 0)[0], nil)
	if _, code := stableOffset(rc, "eos", "in", 0); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("pending offsets: %v, want UNSTABLE_OFFSET_COMMIT", kerr.ErrorForCode(code))
	}
	if n := openOffsetsTxns(t, tb); n != 1 {
		t.Fatalf("%d __consumer_offsets partitions hold an open transaction, want 1", n)
	}
}

// groupCoordinatorNode is the node FindCoordinator names for group,
// asked until it answers (the first creates __consumer_offsets).
func groupCoordinatorNode(t *testing.T, ctx context.Context, cl *kgo.Client, group string) int32 {
	t.Helper()
	for {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = group
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && resp.ErrorCode == 0 {
			return resp.NodeID
		}
		if ctx.Err() != nil {
			t.Fatalf("FindCoordinator %s: %v %+v", group, err, resp)
		}
	}
}

// TestClusterTxnOffsetCommitVerify: the group coordinator asks the
// transaction coordinator, another broker, over the network.
func TestClusterTxnOffsetCommitVerify(t *testing.T) {
	c := startCluster(t, 3, func(cfg *config.Config) { cfg.Txns.StatePartitions = 1 })
	ctx := ctxTimeout(t, 90*time.Second)
	cl := clusterClient(t, c.bootstrap())
	coord := txnCoordinatorOf(t, ctx, cl, "cov")
	group, gc := "", int32(-1)
	for i := 0; gc < 0 || gc == coord; i++ {
		if i == 100 {
			t.Fatalf("no group of the first 100 coordinated by a broker other than %d", coord)
		}
		group = "cog" + strconv.Itoa(i)
		gc = groupCoordinatorNode(t, ctx, cl, group)
	}
	c.createTopic(ctx, "coi", 1, 1)
	crc := dialRaw(t, c.broker(coord).addr)
	p, code := initTxn(crc, "cov", 60000, -1, -1)
	wantCode(t, "InitProducerId", code, nil)
	grc := dialRaw(t, c.broker(gc).addr)
	wantCode(t, "TxnOffsetCommit without AddOffsetsToTxn", txnOffsetCommitAs(grc, p, group, "coi", 5, 0)[0], kerr.InvalidTxnState)
	if off, code := stableOffset(grc, group, "coi", 0); off != -1 || code != 0 {
		t.Fatalf("after the refusal: offset %d, %v; want none, stable", off, kerr.ErrorForCode(code))
	}
	wantCode(t, "AddOffsetsToTxn", p.addOffsets(crc, 3, group), nil)
	wantCode(t, "TxnOffsetCommit after AddOffsetsToTxn", txnOffsetCommitAs(grc, p, group, "coi", 5, 0)[0], nil)
	wantCode(t, "EndTxn commit", p.endTxn(crc, 3, true), nil)
	awaitCommitted(t, ctx, grc, group, "coi", 0, 5)
}

// txnCoordinatorOf is the node FindCoordinator names for transactional
// id, asked until it answers.
func txnCoordinatorOf(t *testing.T, ctx context.Context, cl *kgo.Client, id string) int32 {
	t.Helper()
	findTxnCoordinator(t, ctx, cl, id)
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType, req.CoordinatorKey = 1, id
	fc, err := req.RequestWith(ctx, cl)
	if err != nil || fc.ErrorCode != 0 {
		t.Fatalf("FindCoordinator %s: %v %+v", id, err, fc)
	}
	return fc.NodeID
}
