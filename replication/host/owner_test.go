package host

// The owner of a partition's log and role (owner.go) under concurrent
// writers and role changes, and a follower whose disk refuses the
// leader's records: the project's own regression tests of the defects
// reproduced in repro_test.go, on the real driver.

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
)

// Writers racing a role change: once the LeaderAndIsr making the broker a
// follower is answered, no append lands in the log, the log ends where the
// core's view of it does, and every append that succeeded lies below that
// end (TestReproStaleLeaderAppendAfterBecomeFollower's scenario, with
// writers in flight instead of a direct log append).
func TestOwnerNoLeaderAppendAfterBecomingFollower(t *testing.T) {
	p := leaderPartition(t, nil)
	var (
		wg      sync.WaitGroup
		stop    atomic.Bool
		maxAckd atomic.Int64
		refused atomic.Int64
	)
	maxAckd.Store(-1)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				res, err := p.AppendAsLeader(batch("x"), AppendHow{})
				switch {
				case err == nil:
					for {
						m := maxAckd.Load()
						if res.LastOffset <= m || maxAckd.CompareAndSwap(m, res.LastOffset) {
							break
						}
					}
				case errors.Is(err, kerr.NotLeaderForPartition):
					refused.Add(1)
				default:
					t.Errorf("append: %v", err)
					return
				}
			}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for p.Log.EndOffset() < 200 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	p.BecomeFollower(1, 6, 0, []int32{0, 1}) // as a LeaderAndIsr making it a follower of 1 at epoch 6
	end := p.Log.EndOffset()
	p.rep.mu.Lock()
	coreEnd := p.rep.mu.r.LogEnd()
	p.rep.mu.Unlock()
	for refused.Load() < 100 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // the writers go on, refused
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("log end at the role change %d (core %d), after %d refused appends %d; highest acknowledged offset %d",
		end, coreEnd, refused.Load(), p.Log.EndOffset(), maxAckd.Load())
	switch {
	case end < 200:
		t.Fatalf("only %d records appended before the role change", end)
	case coreEnd != end:
		t.Errorf("as follower the core counts on a log end of %d, the log ends at %d", coreEnd, end)
	case p.Log.EndOffset() != end:
		t.Errorf("the log grew from %d to %d after the broker became a follower", end, p.Log.EndOffset())
	case maxAckd.Load() >= end:
		t.Errorf("an append acknowledged at %d, past the log end %d at the role change", maxAckd.Load(), end)
	case refused.Load() == 0:
		t.Errorf("no append refused after the role change")
	}
}

// A follower whose disk is full stops fetching (the leader no longer sees
// it caught up), reports itself failed, and follows again once the disk
// has room, from where its log ends: nothing it did not write is counted
// as replicated.
func TestOwnerFollowerDiskFullFailsThenResumes(t *testing.T) {
	var full atomic.Bool
	p := leaderPartition(t, engine.FullDisk{FS: engine.OSFS, Full: &full})
	p.BecomeFollower(1, 6, 0, []int32{0, 1}) // as a LeaderAndIsr making it a follower of 1 at epoch 6
	// A batch large enough to need a reservation past the segment's first.
	big := make([]byte, 300<<10)
	var bb engine.BatchBuilder
	bb.Add(engine.Record{Timestamp: time.Now().UnixMilli(), Key: []byte("k"), Value: big})
	answer := func(base int64) {
		seq, _ := nextFetch(p)
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.HighWatermark, rp.RecordBatches = base+1, replicatedBatchOf(bb.Build(), base, 6)
		(&fetcher{}).fetched(p, seq, &rp, 1<<63-1)
	}
	full.Store(true)
	seq, _ := nextFetch(p)
	answer(0)
	seqAfter, next := nextFetch(p)
	p.rep.mu.Lock()
	failed, why := p.rep.mu.r.Failed()
	p.rep.mu.Unlock()
	if !failed || !p.Failed() || p.Log.EndOffset() != 0 || next != 0 {
		t.Fatalf("after a refused append on a full disk: failed %v (%v, published %v), log end %d, next fetch from %d",
			failed, why, p.Failed(), p.Log.EndOffset(), next)
	}
	if seqAfter != seq {
		t.Fatal("a failed follower asks for another fetch")
	}
	full.Store(false) // room again: the retry resumes it, and asks again
	deadline := time.Now().Add(failedFollowerRetry + 10*time.Second)
	for {
		if s, _ := nextFetch(p); s != seq {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no fetch %v after the disk has room", failedFollowerRetry+10*time.Second)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !p.Failed() {
		t.Fatal("resumed and reported healthy before its log took a write")
	}
	answer(0)
	if _, next := nextFetch(p); p.Log.EndOffset() != 1 || next != 1 || p.Failed() {
		t.Fatalf("resumed: log end %d, next fetch from %d, failed %v; want 1, 1 and false", p.Log.EndOffset(), next, p.Failed())
	}
}
