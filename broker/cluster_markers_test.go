package broker

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Followers copy transactional batches and markers: their producer state
// (open transactions, coordinator epochs), last stable offset and aborted
// transaction index match the leader's; a follower made leader then serves
// read_committed at the same last stable offset and accepts the open
// transaction's marker.
func TestClusterFollowersTrackTransactions(t *testing.T) {
	c := startCluster(t, 3, noTxnVerification) // no coordinator: raw batches and markers
	ctx := ctxTimeout(t, 60*time.Second)
	c.createTopic(ctx, "ctxn", 1, 3)
	leader := topicOf(metadataOf(t, c.broker(0)), "ctxn").Partitions[0].Leader
	rc := dialRaw(t, c.broker(leader).addr)
	pids := make([]int64, 3)
	for i := range pids {
		resp := rc.roundTrip(initProducerIDReq(nil, -1, -1), 5).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(resp.ErrorCode))
		}
		pids[i] = resp.ProducerID
	}
	a, bp, cp := pids[0], pids[1], pids[2]
	for _, s := range [][]byte{txnBatchOf(a, 0, 0, "a1", "a2"), txnBatchOf(bp, 0, 0, "b1"), txnBatchOf(cp, 0, 0, "c1")} {
		if code, _ := txnProduce(rc, "ctxn", 0, s); code != 0 {
			t.Fatal(kerr.ErrorForCode(code))
		}
	}
	mustMark(t, rc, a, 0, true, 3, "ctxn", 0)
	mustMark(t, rc, bp, 0, false, 4, "ctxn", 0)
	lp := c.broker(leader).partition("ctxn", 0)
	end := lp.Log.EndOffset()
	if lp.Log.FirstUnstableOffset() != 3 {
		t.Fatalf("the leader's first unstable offset %d, want 3 (c's transaction)", lp.Log.FirstUnstableOffset())
	}
	wantProducers := lp.Log.Producers(nil)
	wantAborted := lp.Log.AbortedTxns(nil, 0, end)
	if len(wantAborted) != 1 || wantAborted[0].ProducerID != bp {
		t.Fatalf("the leader's aborted transactions %+v", wantAborted)
	}
	var follower int32 = -1
	deadline := time.Now().Add(30 * time.Second)
	for _, tb := range c.live() {
		if tb.cfg.ID == leader {
			continue
		}
		follower = tb.cfg.ID
		p := tb.partition("ctxn", 0)
		for p.Log.EndOffset() < end || p.HighWatermark() < end {
			if time.Now().After(deadline) {
				t.Fatalf("broker %d has %d of %d (high watermark %d)", tb.cfg.ID, p.Log.EndOffset(), end, p.HighWatermark())
			}
			time.Sleep(20 * time.Millisecond) // the follower fetches on its own schedule
		}
		if got := p.Log.FirstUnstableOffset(); got != 3 {
			t.Errorf("broker %d: first unstable offset %d, want 3", tb.cfg.ID, got)
		}
		if got := p.Log.Producers(nil); !slices.Equal(got, wantProducers) {
			t.Errorf("broker %d: producers %+v, the leader's %+v", tb.cfg.ID, got, wantProducers)
		}
		if got := p.Log.AbortedTxns(nil, 0, end); !slices.Equal(got, wantAborted) {
			t.Errorf("broker %d: aborted %+v, the leader's %+v", tb.cfg.ID, got, wantAborted)
		}
	}
	// The leader goes; a follower leads at the same last stable offset,
	// takes c's marker and fences a marker from a coordinator epoch below
	// the one it copied for a.
	c.stopBroker(leader)
	var nl int32 = -1
	for nl < 0 || nl == leader {
		if time.Now().After(deadline) {
			t.Fatal("no new leader")
		}
		if tp := topicOf(metadataOf(t, c.broker(follower)), "ctxn"); tp != nil {
			nl = tp.Partitions[0].Leader
		}
		time.Sleep(20 * time.Millisecond) // the controller elects on its own schedule
	}
	rc = dialRaw(t, c.broker(nl).addr)
	id := topicOf(metadataOf(t, c.broker(nl)), "ctxn").TopicID
	p := rawFetch(rc, "ctxn", id, 0, 1)
	for p.ErrorCode == kerr.NotLeaderForPartition.Code && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // the LeaderAndIsr is on its way
		p = rawFetch(rc, "ctxn", id, 0, 1)
	}
	if p.ErrorCode != 0 || p.LastStableOffset != 3 {
		t.Fatalf("the new leader %d: %v, last stable offset %d, want 3", nl, kerr.ErrorForCode(p.ErrorCode), p.LastStableOffset)
	}
	waitCode := func(what string, want *kerr.Error, m func() int16) {
		t.Helper()
		for {
			code := m()
			if code != kerr.NotLeaderForPartition.Code && code != kerr.NotEnoughReplicas.Code || time.Now().After(deadline) {
				wantCode(t, what, code, want)
				return
			}
			time.Sleep(50 * time.Millisecond) // the new leader's ISR settles
		}
	}
	for _, tb := range c.live() {
		if tb.cfg.ID != nl {
			codes := writeMarker(dialRaw(t, tb.addr), cp, 0, true, 5, "ctxn", 0)
			wantCode(t, "a marker sent to a follower", codes[0], kerr.NotLeaderForPartition)
		}
	}
	waitCode("c's commit", nil, func() int16 { return writeMarker(rc, cp, 0, true, 5, "ctxn", 0)[0] })
	waitCode("a's marker from an older coordinator", kerr.TransactionCoordinatorFenced, func() int16 { return writeMarker(rc, a, 0, true, 2, "ctxn", 0)[0] })
	p = rawFetch(rc, "ctxn", id, 0, 1)
	_, values := valuesIn(t, p.RecordBatches)
	if p.LastStableOffset != p.HighWatermark || !slices.Equal(values, []string{"a1", "a2", "b1", "c1"}) || len(p.AbortedTransactions) != 1 || p.AbortedTransactions[0].ProducerID != bp {
		t.Errorf("after c's commit: last stable %d (high watermark %d), records %v, aborted %+v", p.LastStableOffset, p.HighWatermark, values, p.AbortedTransactions)
	}
}
