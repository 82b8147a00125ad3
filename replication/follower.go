package replication

// The follower's side (Kafka's AbstractFetcherThread for one partition,
// with KIP-320's truncation on the fetch response): what to fetch next,
// where to truncate when the leader says the log diverged, the log start
// catch-up, and the high watermark learnt from the leader.

import (
	"errors"
	"fmt"
	"slices"

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
	// appending says fetch seq's batches were handed to the log
	// (Ready.Append) and their outcome (FetchAppended) is awaited: the log
	// end, the epochs, the high watermark and the next fetch wait for it.
	// pending are those batches (a copy), pendingHW and pendingLogStart
	// the leader's high watermark and log start of the same answer.
	appending                  bool
	pending                    []Batch
	pendingHW, pendingLogStart int64
	// backoff says the last fetch's records were refused (damaged): the
	// next fetch, from the same offset, waits replica.fetch.backoff.ms.
	backoff bool
	// failed says the log could not take the leader's records (a storage
	// error, or a log that does not continue where this view of it ends):
	// no fetch until Resume or a role change (Kafka's failed partitions).
	failed bool
	// failure is why, for the driver's log and metrics.
	failure error
	// truncateToHW is a test seam: the pre-KIP-101 follower, which
	// truncates to its high watermark on becoming follower and fetches
	// without its last epoch (so the leader never says it diverged).
	truncateToHW bool
	// advanceOnFetch is a test seam: the broken follower whose view of the
	// log takes a fetch's batches when they are handed to the log, not
	// when the log took them, so a refused append is counted as held.
	advanceOnFetch bool
}

func (f *followerState) reset() {
	f.inflight, f.fenced, f.appending, f.backoff, f.failed, f.failure = false, false, false, false, false, nil
}

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

// maybeFetch hands out the next fetch unless one is out, or its records
// are being appended: from the log end, with the epoch of the last record
// (KIP-320).
func (r *Replica) maybeFetch() {
	if r.role != Follower || r.leader < 0 || r.inflight || r.appending || r.fenced || r.failed {
		return
	}
	r.seq++
	r.inflight = true
	last := r.epochs.latest()
	if r.truncateToHW {
		last = NoEpoch
	}
	r.rd.Fetch = FetchRequest{Seq: r.seq, Leader: r.leader, Offset: r.end, LastFetchedEpoch: last, CurrentLeaderEpoch: r.epoch, Backoff: r.backoff}
	r.rd.Fetching, r.backoff = true, false
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

// appendBatches hands a fetch's records to the log, if they continue it;
// the log end, epochs, high watermark and log start move when the log has
// taken them (fetchAppended). An answer without records is taken at once.
func (r *Replica) appendBatches(ev FetchResult) {
	if len(ev.Batches) == 0 {
		r.learnLeader(ev.HighWatermark, ev.LeaderLogStart)
		return
	}
	if ev.Batches[0].Base != r.end {
		return // not where the log ends: an answer the log has moved past
	}
	end := r.end
	for _, b := range ev.Batches {
		// Ascending; a compacted leader's batches may leave gaps.
		if b.Base < end || b.End <= b.Base {
			panic("replication: fetched batches not in order")
		}
		end = b.End
	}
	r.pending = append(r.pending[:0], ev.Batches...)
	r.appending, r.pendingHW, r.pendingLogStart = true, ev.HighWatermark, ev.LeaderLogStart
	r.rd.Append, r.rd.AppendSeq = r.pending, ev.Seq
	if r.advanceOnFetch {
		r.take(len(r.pending))
	}
}

// take moves the log view over the first n pending batches.
func (r *Replica) take(n int) {
	for _, b := range r.pending[:n] {
		r.epochs.assign(b.Epoch, b.Base)
		r.end = b.End
	}
}

// fetchAppended takes the log's outcome of a Ready.Append (Kafka's
// AbstractFetcherThread, processPartitionData and its catch): the batches
// the log took move the log view; records refused as damaged are fetched
// again from where the log ends, after the backoff (a transient fault, a
// fetch cut mid-batch); any other failure fails the replica until Resume
// or a role change, and the leader, which no longer hears from it, takes
// it out of the ISR.
func (r *Replica) fetchAppended(ev FetchAppended) {
	if r.role != Follower || !r.appending || ev.Seq != r.seq {
		return // the outcome of another fetch's append
	}
	r.appending = false
	if r.advanceOnFetch {
		// The broken follower took everything already.
		if ev.Err == nil {
			r.learnLeader(r.pendingHW, r.pendingLogStart)
		}
		r.maybeFetch()
		return
	}
	n := 0 // batches the log took
	if ev.End != r.end {
		n = slices.IndexFunc(r.pending, func(b Batch) bool { return b.End == ev.End }) + 1
	}
	switch {
	case ev.End != r.end && n == 0, ev.Err == nil && n != len(r.pending):
		r.fail(fmt.Errorf("%w: the log says it took the fetched batches to %d of [%d, %d)", ErrLogMismatch, ev.End, r.end, r.pending[len(r.pending)-1].End))
		return
	}
	r.take(n)
	switch {
	case ev.Err == nil:
		r.learnLeader(r.pendingHW, r.pendingLogStart)
	case errors.Is(ev.Err, ErrRecordsRefused):
		r.learnLeader(r.pendingHW, r.pendingLogStart)
		r.backoff = true
	default:
		r.fail(ev.Err)
		return
	}
	r.maybeFetch()
}

// fail stops the follower: its log cannot follow the leader.
func (r *Replica) fail(err error) {
	r.failed, r.failure = true, err
}

// resume starts a failed follower again from its log as it is now.
func (r *Replica) resume(ev Resume) {
	if r.role != Follower || !r.failed {
		return
	}
	r.failed, r.failure = false, nil
	r.setLog(ev.Log)
	r.maybeFetch()
}

// learnLeader takes the leader's high watermark (capped at our log end)
// and log start.
func (r *Replica) learnLeader(hw, logStart int64) {
	if hw := min(hw, r.end); hw > r.hw {
		r.setHighWatermark(hw)
	}
	if s := min(logStart, r.hw); s > r.start {
		r.start = s
		r.epochs.truncateFromStart(s)
		r.rd.LogStart, r.rd.LogStartChanged = s, true
	}
}

// Failed reports, on a follower, that its log could not take the leader's
// records, and why: it fetches nothing until Resume or a role change.
func (r *Replica) Failed() (bool, error) { return r.role == Follower && r.failed, r.failure }
