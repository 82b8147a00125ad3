package replication

// The follower's side (Kafka's AbstractFetcherThread for one partition,
// with KIP-320's truncation on the fetch response): what to fetch next,
// where to truncate when the leader says the log diverged, the log start
// catch-up, and the high watermark learnt from the leader.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

type followerState struct {
	// seq numbers fetches; it is never reset, so an answer to a fetch of an
	// earlier role is told apart.
	seq uint64
	// inflight says fetch seq is out and unanswered.
	inflight bool
	// fenced says the leader answered FENCED_LEADER_EPOCH: this replica's
	// epoch is stale and it waits for a LeaderAndIsr.
	fenced bool
	// truncateToHW is a test seam: the pre-KIP-101 follower, which
	// truncates to its high watermark on becoming follower and fetches
	// without its last epoch (so the leader never says it diverged).
	truncateToHW bool
}

func (f *followerState) reset() { f.inflight, f.fenced = false, false }

func (r *Replica) becomeFollower(ev BecomeFollower) {
	if r.role != Offline && ev.Epoch <= r.epoch {
		return
	}
	r.changeRole(Follower, ev.Leader, ev.Epoch, ev.PartitionEpoch, ev.Replicas)
	r.setLog(ev.Log)
	if r.truncateToHW {
		r.truncate(r.hw)
	}
	r.maybeFetch()
}

// maybeFetch hands out the next fetch unless one is out: from the log
// end, with the epoch of the last record (KIP-320).
func (r *Replica) maybeFetch() {
	if r.role != Follower || r.leader < 0 || r.inflight || r.fenced {
		return
	}
	r.seq++
	r.inflight = true
	last := r.epochs.latest()
	if r.truncateToHW {
		last = NoEpoch
	}
	r.rd.Fetch = FetchRequest{Seq: r.seq, Leader: r.leader, Offset: r.end, LastFetchedEpoch: last, CurrentLeaderEpoch: r.epoch}
	r.rd.Fetching = true
}

func (r *Replica) fetchResult(ev FetchResult) {
	if r.role != Follower || !r.inflight || ev.Seq != r.seq {
		return // an answer to another fetch
	}
	r.inflight = false
	switch {
	case errors.Is(ev.Err, kerr.OffsetOutOfRange):
		// Kafka's handleOutOfRangeError: a leader whose log ends before
		// ours (an unclean election) is followed to its end; one whose log
		// starts after ours is followed from its start, our log dropped.
		switch {
		case ev.LeaderLogEnd < r.end:
			r.truncate(max(ev.LeaderLogEnd, r.start))
		case ev.LeaderLogStart > r.end:
			r.truncateFully(ev.LeaderLogStart)
		}
	case errors.Is(ev.Err, kerr.FencedLeaderEpoch):
		r.fenced = true
		return
	case ev.Err != nil:
		// Retried; the fetcher applies replica.fetch.backoff.ms.
	case ev.Diverged:
		r.truncate(r.divergencePoint(ev.Diverging))
	default:
		r.appendBatches(ev)
	}
	r.maybeFetch()
}

// divergencePoint is where the follower truncates for the leader's
// DivergingEpoch d (Kafka's getOffsetTruncationState): where the epoch
// both logs have ends on both. When this log does not have d's epoch, it
// truncates to the end of its own largest epoch below, and the next fetch
// asks again (KIP-279: several fast leader changes are resolved one epoch
// at a time). Never to the high watermark (KIP-101), except for an
// undefined answer, which only an old leader gives.
func (r *Replica) divergencePoint(d EpochEnd) int64 {
	switch {
	case d.EndOffset < 0:
		return min(r.hw, r.end)
	case d.Epoch == NoEpoch:
		return min(d.EndOffset, r.end)
	}
	own := r.epochs.endFor(d.Epoch, r.end)
	switch {
	case own.EndOffset < 0:
		return min(d.EndOffset, r.end)
	case own.Epoch != d.Epoch:
		return min(own.EndOffset, r.end)
	}
	return min(d.EndOffset, own.EndOffset, r.end)
}

// truncate decides the truncation of the log to [.., off). The epoch cache
// loses the entries from off on even when the log does not shrink (an
// epoch a former leader recorded at its log end without writing in it).
func (r *Replica) truncate(off int64) {
	if len(r.rd.Append) > 0 {
		panic("replication: truncation after an append in one Ready")
	}
	off = max(off, r.start)
	if r.rd.Truncated {
		off = min(off, r.rd.Truncate.Offset)
	}
	r.rd.Truncated, r.rd.Truncate = true, Truncation{Offset: off, Fully: r.rd.Truncate.Fully && r.rd.Truncated}
	r.end = min(r.end, off)
	r.epochs.truncateFromEnd(off)
	if r.hw > r.end {
		r.setHighWatermark(r.end)
	}
}

// truncateFully decides dropping the whole log and starting it at off.
func (r *Replica) truncateFully(off int64) {
	r.rd.Truncated, r.rd.Truncate = true, Truncation{Offset: off, Fully: true}
	r.start, r.end = off, off
	r.epochs = r.epochs[:0]
	r.setHighWatermark(off)
	r.rd.LogStart, r.rd.LogStartChanged = off, true
}

// appendBatches takes a fetch's records, if they continue the log, and the
// leader's high watermark (capped at our log end) and log start.
func (r *Replica) appendBatches(ev FetchResult) {
	if len(ev.Batches) > 0 && ev.Batches[0].Base != r.end {
		return // not where the log ends: an answer the log has moved past
	}
	for _, b := range ev.Batches {
		if b.Base != r.end || b.End <= b.Base {
			panic("replication: fetched batches not contiguous")
		}
		r.epochs.assign(b.Epoch, b.Base)
		r.end = b.End
	}
	r.rd.Append = ev.Batches
	if hw := min(ev.HighWatermark, r.end); hw > r.hw {
		r.setHighWatermark(hw)
	}
	if s := min(ev.LeaderLogStart, r.hw); s > r.start {
		r.start = s
		r.epochs.truncateFromStart(s)
		r.rd.LogStart, r.rd.LogStartChanged = s, true
	}
}
