package replication

// The leader's side (Kafka's Partition as leader): followers' fetch
// states, the ISR and its changes, the high watermark, and the acks=all
// produces waiting for it.

import (
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// never is a time before every Now: a follower that has never caught up.
const never = -1 << 62

type leaderState struct {
	// isr is the committed ISR (the controller's); proposal the change in
	// flight, if any (one at a time, as Kafka's AlterPartition).
	isr      []int32
	proposal *AlterPartition
	// resend says the proposal's answer was an error worth retrying: it is
	// handed out again at every Tick and follower fetch until an answer to
	// it arrives (the driver keeps one request in flight per partition).
	resend bool
	// proposals numbers them; it is never reset.
	proposals uint64
	// followers are the fetch states of the other replicas, in assignment
	// order.
	followers []followerProgress
	// waiting are the acks=all produces waiting for the high watermark, in
	// the order registered.
	waiting []WaitProduce
	// now is the latest time seen.
	now int64
	// live are the brokers the broker's metadata says are live
	// (LiveBrokers); only their replicas may join the ISR, so a caught-up
	// follower outside the ISR whose broker died does not hold the high
	// watermark back (Kafka's isReplicaIsrEligible, ZooKeeper mode). Kept
	// across roles; nil until the first LiveBrokers: every broker is.
	live map[int32]bool
	// stickyAlterErrors is a test seam: the broken leader that leaves a
	// proposal pending after any refusal (NOT_CONTROLLER, a timeout), so
	// that no ISR change is proposed again until a new leader epoch.
	stickyAlterErrors bool
}

// eligible reports whether replica id may join the ISR.
func (l *leaderState) eligible(id int32) bool { return l.live == nil || l.live[id] }

// followerProgress is what the leader knows of one follower (Kafka's
// Replica state).
type followerProgress struct {
	id int32
	// logEnd is its last fetch offset, -1 before its first fetch of this
	// leadership.
	logEnd int64
	// lastCaughtUp is the last time it was caught up to the leader's log
	// end (Kafka's lastCaughtUpTimeMs).
	lastCaughtUp int64
	// lastFetch and lastFetchLeaderEnd are the time of its last fetch and
	// the leader's log end then.
	lastFetch, lastFetchLeaderEnd int64
	// brokerEpoch is the broker epoch of its last fetch, -1 unknown.
	brokerEpoch int64
}

func (f *followerProgress) caughtUp(leaderEnd, now, maxLag int64) bool {
	return f.logEnd == leaderEnd || now-f.lastCaughtUp <= maxLag
}

func (l *leaderState) reset(keepWaiting bool) {
	l.isr, l.proposal, l.resend, l.followers = l.isr[:0], nil, false, l.followers[:0]
	if !keepWaiting {
		l.waiting = l.waiting[:0]
	}
}

func (r *Replica) becomeLeader(ev BecomeLeader) {
	if r.role != Offline && ev.Epoch <= r.epoch {
		return // a stale LeaderAndIsr
	}
	r.changeRole(Leader, r.cfg.Self, ev.Epoch, ev.PartitionEpoch, ev.Replicas)
	r.isr = append(r.isr, ev.ISR...)
	r.now = max(r.now, ev.Now)
	r.setLog(ev.Log)
	r.epochs.assign(ev.Epoch, r.end)
	r.rd.AssignEpoch, r.rd.NewEpoch = EpochStart{Epoch: ev.Epoch, Start: r.end}, true
	for _, id := range ev.Replicas {
		if id == r.cfg.Self {
			continue
		}
		f := followerProgress{id: id, logEnd: -1, lastCaughtUp: never, lastFetch: never, lastFetchLeaderEnd: -1, brokerEpoch: -1}
		if slices.Contains(ev.ISR, id) {
			f.lastCaughtUp = r.now // a new leader gives its ISR a full lag time
		}
		r.followers = append(r.followers, f)
	}
	r.maybeAdvanceHighWatermark()
}

// liveBrokers takes the broker's list of live brokers: the others' replicas
// stop counting as about to join the ISR.
func (r *Replica) liveBrokers(ev LiveBrokers) {
	if r.live == nil {
		r.live = make(map[int32]bool, len(ev.IDs))
	}
	clear(r.live)
	for _, id := range ev.IDs {
		r.live[id] = true
	}
	r.maybeAdvanceHighWatermark()
}

func (r *Replica) appended(ev Appended) {
	if r.role != Leader {
		return
	}
	if ev.Epoch != r.epoch || ev.End < r.end {
		panic("replication: Appended at another epoch, or going back")
	}
	r.end = ev.End
	r.maybeAdvanceHighWatermark()
}

func (r *Replica) logStartAdvanced(ev LogStartAdvanced) {
	if r.role != Leader || ev.Start <= r.start {
		return
	}
	r.start = min(ev.Start, r.hw)
	r.epochs.truncateFromStart(r.start)
}

// effectiveMinISR is Kafka's effectiveMinIsr: min.insync.replicas, capped
// at the replica count.
func (r *Replica) effectiveMinISR() int { return min(r.cfg.MinInsyncReplicas, len(r.replicas)) }

// inMaximalISR reports whether id is in the committed ISR or the proposed
// one (Kafka's maximalIsr, KIP-497: the high watermark counts a replica
// being added before the controller commits it, and one being removed
// until it has).
func (r *Replica) inMaximalISR(id int32) bool {
	return slices.Contains(r.isr, id) || r.proposal != nil && slices.Contains(r.proposal.ISR, id)
}

func (r *Replica) maximalISRSize() int {
	n := len(r.isr)
	if r.proposal != nil {
		for _, id := range r.proposal.ISR {
			if !slices.Contains(r.isr, id) {
				n++
			}
		}
	}
	return n
}

// CheckProduce is the check of a produce before its append (Kafka's
// appendRecordsToLeader): kerr.NotLeaderForPartition if this replica does not
// lead; for acks=all, kerr.NotEnoughReplicas if the ISR is below
// min.insync.replicas (capped at the replica count).
func (r *Replica) CheckProduce(acksAll bool) error {
	switch {
	case r.role != Leader:
		return kerr.NotLeaderForPartition
	case acksAll && len(r.isr) < r.cfg.MinInsyncReplicas:
		// Not capped by the replica count: a topic whose
		// min.insync.replicas is above its replication factor takes no
		// acks=all produce, as Kafka answers it.
		return kerr.NotEnoughReplicas
	}
	return nil
}

// maybeAdvanceHighWatermark is Kafka's maybeIncrementLeaderHW: the
// smallest log end over the maximal ISR and the caught-up followers about
// to join it, never while the ISR is below min.insync.replicas (KIP-966's
// rule, in Kafka since 3.7), never backwards.
func (r *Replica) maybeAdvanceHighWatermark() {
	if r.role != Leader || len(r.isr) < r.effectiveMinISR() {
		return
	}
	hw := r.end
	for i := range r.followers {
		f := &r.followers[i]
		if f.logEnd < hw && (r.inMaximalISR(f.id) || f.caughtUp(r.end, r.now, r.cfg.ReplicaLagTimeMaxMs) && r.eligible(f.id)) {
			hw = f.logEnd
		}
	}
	if hw > r.hw {
		r.setHighWatermark(hw)
		r.completeWaiting()
	}
}

func (r *Replica) followerFetch(ev FollowerFetch) {
	a := FetchAnswer{Replica: ev.Replica}
	var f *followerProgress
	if r.role == Leader {
		for i := range r.followers {
			if r.followers[i].id == ev.Replica {
				f = &r.followers[i]
			}
		}
	}
	switch {
	case r.role != Leader:
		a.Err = kerr.NotLeaderForPartition
	case ev.CurrentLeaderEpoch != NoEpoch && ev.CurrentLeaderEpoch < r.epoch:
		a.Err = kerr.FencedLeaderEpoch
	case ev.CurrentLeaderEpoch > r.epoch:
		a.Err = kerr.UnknownLeaderEpoch
	case f == nil:
		a.Err = kerr.ReplicaNotAvailable
	}
	if a.Err != nil {
		r.rd.Answers = append(r.rd.Answers, a)
		return
	}
	r.now = max(r.now, ev.Now)
	r.maybeResend()
	a.LogStart, a.LogEnd = r.start, r.end
	if ev.LastFetchedEpoch != NoEpoch {
		// KIP-320: a follower whose last epoch ends earlier here, or that
		// this log does not have, diverged; it truncates before it fetches
		// on, and its position is not taken.
		if e := r.epochs.endFor(ev.LastFetchedEpoch, r.end); e.EndOffset < ev.FetchOffset || e.Epoch < ev.LastFetchedEpoch {
			a.Diverged, a.Diverging, a.HighWatermark = true, e, r.hw
			r.rd.Answers = append(r.rd.Answers, a)
			return
		}
	}
	if ev.FetchOffset < r.start || ev.FetchOffset > r.end {
		a.Err = kerr.OffsetOutOfRange
		r.rd.Answers = append(r.rd.Answers, a)
		return
	}
	// Kafka's Replica.updateFetchStateOrThrow.
	switch {
	case ev.FetchOffset >= r.end:
		f.lastCaughtUp = max(f.lastCaughtUp, ev.Now)
	case ev.FetchOffset >= f.lastFetchLeaderEnd:
		f.lastCaughtUp = max(f.lastCaughtUp, f.lastFetch)
	}
	f.logEnd, f.lastFetch, f.lastFetchLeaderEnd, f.brokerEpoch = ev.FetchOffset, ev.Now, r.end, ev.ReplicaEpoch
	r.maybeExpandISR(f)
	r.maybeAdvanceHighWatermark()
	a.From, a.HighWatermark = ev.FetchOffset, r.hw
	r.rd.Answers = append(r.rd.Answers, a)
}

// maybeExpandISR asks for f to join the ISR once it has caught up to the
// high watermark and into the leader's epoch (Kafka's isFollowerInSync).
func (r *Replica) maybeExpandISR(f *followerProgress) {
	if r.proposal != nil || slices.Contains(r.isr, f.id) || !r.eligible(f.id) {
		return
	}
	if f.logEnd >= r.hw && f.logEnd >= r.epochs.startOf(r.epoch) {
		r.propose(append(slices.Clone(r.isr), f.id))
	}
}

// maybeResend hands out the pending proposal again after a retriable
// error.
func (r *Replica) maybeResend() {
	if r.resend && r.proposal != nil {
		r.rd.AlterPartition = r.proposal
	}
}

func (r *Replica) tick(now int64) {
	if r.role != Leader {
		return
	}
	r.now = max(r.now, now)
	r.expireWaiting()
	r.maybeResend()
	if r.proposal != nil {
		return
	}
	// Kafka's maybeShrinkIsr: the followers of the ISR that have not caught
	// up for replica.lag.time.max.ms leave it.
	var out []int32
	for i := range r.followers {
		f := &r.followers[i]
		if slices.Contains(r.isr, f.id) && !f.caughtUp(r.end, r.now, r.cfg.ReplicaLagTimeMaxMs) {
			out = append(out, f.id)
		}
	}
	if len(out) > 0 {
		r.propose(slices.DeleteFunc(slices.Clone(r.isr), func(id int32) bool { return slices.Contains(out, id) }))
	}
}

func (r *Replica) propose(isr []int32) {
	epochs := make([]int64, len(isr))
	for i, id := range isr {
		epochs[i] = -1
		for _, f := range r.followers {
			if f.id == id {
				epochs[i] = f.brokerEpoch
			}
		}
	}
	r.proposals++
	r.proposal = &AlterPartition{Seq: r.proposals, Leader: r.cfg.Self, LeaderEpoch: r.epoch, PartitionEpoch: r.partitionEpoch, ISR: isr, BrokerEpochs: epochs}
	r.rd.AlterPartition = r.proposal
}

func (r *Replica) alterPartitionResult(ev AlterPartitionResult) {
	p := r.proposal
	if r.role != Leader || p == nil || ev.Request.Seq != p.Seq {
		return // an answer to another proposal
	}
	r.resend = false
	switch {
	case ev.Err == nil:
	case errors.Is(ev.Err, kerr.OperationNotAttempted) || errors.Is(ev.Err, kerr.IneligibleReplica):
		// The controller says the state is as committed and it did not
		// apply the change: back to the committed state (Kafka's
		// handleAlterPartitionError).
		r.proposal = nil
		return
	case awaitsLeaderAndIsr(ev.Err) && !r.stickyAlterErrors:
		// The controller has a newer state than this leader (or none for
		// the partition): the proposal stays pending until a LeaderAndIsr
		// brings it, as Kafka's handleAlterPartitionError.
		return
	case r.stickyAlterErrors && !errors.Is(ev.Err, ErrUnreachable):
		return // the broken variant: every refusal waits
	default:
		// No answer, or one the controller may not give next time
		// (NOT_CONTROLLER, REQUEST_TIMED_OUT, UNKNOWN_SERVER_ERROR,
		// STALE_BROKER_EPOCH, ...): sent again from the next Tick or
		// follower fetch on, as Kafka's AlterPartitionManager re-sends after
		// a backoff (the driver waits one before it steps an error).
		r.resend = true
		return
	}
	if ev.LeaderEpoch != r.epoch || ev.PartitionEpoch < r.partitionEpoch {
		return
	}
	r.isr = append(r.isr[:0], ev.ISR...)
	r.partitionEpoch, r.proposal = ev.PartitionEpoch, nil
	r.maybeAdvanceHighWatermark()
}

// awaitsLeaderAndIsr reports whether an AlterPartition error means the
// leader's state is stale, so that only a LeaderAndIsr can move it on
// (Kafka's handleAlterPartitionError: FENCED_LEADER_EPOCH,
// INVALID_UPDATE_VERSION, UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST, and
// NEW_LEADER_ELECTED: the change was applied, but this broker no longer
// leads).
func awaitsLeaderAndIsr(err error) bool {
	for _, e := range []*kerr.Error{kerr.FencedLeaderEpoch, kerr.InvalidUpdateVersion, kerr.UnknownTopicOrPartition,
		kerr.InvalidRequest, kerr.NewLeaderElected} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func (r *Replica) waitProduce(ev WaitProduce) {
	if r.role != Leader {
		r.rd.Completed = append(r.rd.Completed, Completion{Ref: ev.Ref, Err: kerr.NotLeaderForPartition})
		return
	}
	r.waiting = append(r.waiting, ev)
	r.completeWaiting()
}

// completeWaiting completes the produces the high watermark has passed
// (Kafka's checkEnoughReplicasReachOffset).
func (r *Replica) completeWaiting() {
	r.waiting = slices.DeleteFunc(r.waiting, func(w WaitProduce) bool {
		if w.Offset > r.hw {
			return false
		}
		var err error
		if r.maximalISRSize() < r.effectiveMinISR() {
			err = kerr.NotEnoughReplicasAfterAppend
		}
		r.rd.Completed = append(r.rd.Completed, Completion{Ref: w.Ref, Err: err})
		return true
	})
}

func (r *Replica) expireWaiting() {
	r.waiting = slices.DeleteFunc(r.waiting, func(w WaitProduce) bool {
		if w.Deadline > r.now {
			return false
		}
		r.rd.Completed = append(r.rd.Completed, Completion{Ref: w.Ref, Err: kerr.RequestTimedOut})
		return true
	})
}

func (r *Replica) failWaiters() {
	for _, w := range r.waiting {
		r.rd.Completed = append(r.rd.Completed, Completion{Ref: w.Ref, Err: kerr.NotLeaderForPartition})
	}
	r.waiting = r.waiting[:0]
}

// ISR returns the committed ISR (shared: do not modify); empty unless
// leader.
func (r *Replica) ISR() []int32 { return r.isr }

// Pending returns the ISR change in flight, if any.
func (r *Replica) Pending() (AlterPartition, bool) {
	if r.proposal == nil {
		return AlterPartition{}, false
	}
	return *r.proposal, true
}

// UnderReplicated reports, on the leader, an ISR smaller than the
// replicas (Kafka's UnderReplicated gauge).
func (r *Replica) UnderReplicated() bool { return r.role == Leader && len(r.isr) < len(r.replicas) }

// UnderMinISR reports, on the leader, an ISR below min.insync.replicas
// (capped at the replica count): the high watermark holds and acks=all
// produce is refused.
func (r *Replica) UnderMinISR() bool { return r.role == Leader && len(r.isr) < r.effectiveMinISR() }

// FollowerLag returns, on the leader, how many offsets follower id's last
// fetch was behind the log end (-1 if it has not fetched in this
// leadership or is not a replica).
func (r *Replica) FollowerLag(id int32) int64 {
	for _, f := range r.followers {
		if f.id == id && f.logEnd >= 0 {
			return r.end - f.logEnd
		}
	}
	return -1
}
