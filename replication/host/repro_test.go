package host

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func nextFetch(p *Partition) (uint64, int64) { return p.PendingFetch() }

// A fetched batch the follower's log refuses (here a damaged CRC) is
// skipped: the core's next fetch is past it, so the leader counts the
// follower as holding it.
func TestReproFollowerAppendFailureAdvancesFetchOffset(t *testing.T) {
	p := followerPartition(t)
	seq, off := nextFetch(p)
	b := replicatedBatch(0, 5, "acked")
	b[len(b)-1] ^= 0xff // CRC mismatch
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.HighWatermark, rp.RecordBatches = 0, b
	(&fetcher{}).fetched(p, seq, &rp, 1<<63-1)
	_, next := nextFetch(p)
	t.Logf("fetch offset before %d; after a refused append: log end %d, next fetch offset %d", off, p.Log.EndOffset(), next)
	if next > p.Log.EndOffset() {
		t.Errorf("the follower asks from %d while its log ends at %d: the leader will count records it does not have", next, p.Log.EndOffset())
	}
}

// A record appended as leader after the core took its log view as
// follower (an in-flight acks=1 produce: host() swaps p.leader only after
// becomeFollower) makes the follower's log and core disagree for good.
func TestReproStaleLeaderAppendAfterBecomeFollower(t *testing.T) {
	p := followerPartition(t)
	seq, _ := nextFetch(p)
	if _, err := p.Log.AppendNoWait(batch("stale")); err != nil { // as produceOne would
		t.Fatal(err)
	}
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.HighWatermark, rp.RecordBatches = 1, replicatedBatch(0, 5, "leader's acked record")
	(&fetcher{}).fetched(p, seq, &rp, 1<<63-1)
	_, next := nextFetch(p)
	t.Logf("log end %d, core log end %d, next fetch offset %d, epochs %v", p.Log.EndOffset(), p.rep.mu.r.LogEnd(), next, p.Log.Epochs())
	if next == 1 && p.Log.EndOffset() == 1 {
		t.Errorf("the follower reports offset 0 replicated while its log holds the stale record there, not the leader's")
	}
}

// A fetch answer of the old leader stepped while host() is between
// recordLeaderEpochs (log.BecomeLeader, outside the replica lock) and the
// core's BecomeLeader: the old epoch's batch rewrites the epoch cache.
func TestReproFetchAnswerBetweenLogAndCoreBecomeLeader(t *testing.T) {
	p := followerPartition(t)
	seq, _ := nextFetch(p)
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.HighWatermark, rp.RecordBatches = 0, replicatedBatch(0, 5, "r0")
	(&fetcher{}).fetched(p, seq, &rp, 1<<63-1)
	seq, _ = nextFetch(p)
	t.Logf("after the first fetch: log end %d epochs %v", p.Log.EndOffset(), p.Log.Epochs())
	if err := p.Log.BecomeLeader(6); err != nil { // recordLeaderEpochs of a LeaderAndIsr making it leader at 6
		t.Fatal(err)
	}
	t.Logf("after log.BecomeLeader(6): epochs %v", p.Log.Epochs())
	rp.HighWatermark, rp.RecordBatches = 1, replicatedBatch(1, 5, "r1") // the old leader's answer, in flight
	(&fetcher{}).fetched(p, seq, &rp, 1<<63-1)
	t.Logf("after the in-flight answer: log end %d epochs %v core role %v", p.Log.EndOffset(), p.Log.Epochs(), p.rep.mu.r.Role())
	if es := p.Log.Epochs(); len(es) == 0 || es[len(es)-1].Epoch != 6 {
		t.Errorf("an old leader's answer, stepped after the log became leader at epoch 6, rewrote the epoch cache: %v", es)
	}
}
