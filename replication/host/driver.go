package host

// The broker's side of a partition's replication: each hosted partition
// has a replication.Replica (the deterministic core, package replication),
// driven here as etcd raft's RawNode is: events are stepped under the
// partition's replica lock, and what the core decides (Ready) is performed
// before the lock is released.
//
// Events come from LeaderAndIsr (the broker's hosting, through owner.go: BecomeLeader,
// BecomeFollower, under the partition's role lock), from appends
// (Appended, right after the log took the batch, under the role lock, so
// the high watermark follows before the flush policy's wait, as a single
// node's records have always been readable at once), from
// acks=all produces (WaitProduce, answered by the core's Completed), and
// from the clock (Tick: ISR shrinks every replica.lag.time.max.ms / 2, as
// Kafka's isr-expiration task; an acks=all produce's own timer at its
// deadline).
//
// Effects performed: the high watermark (into the log, which checkpoints
// it, and into hw, which consumers' fetches, ListOffsets and the group
// coordinator read; waiting fetches are woken), and acks=all completions.
// A follower's Fetch (replica id set) is stepped as FollowerFetch and
// answered from the core's answer (FollowerFetch, from the broker's Fetch
// handler). Also wired
// (fetcher.go: this broker's fetching as follower, Ready.Fetch and
// FetchResult; isrchange.go: Ready.AlterPartition to the controller).
//
// A follower's append is stepped back into the core as its outcome
// (FetchAppended) before the lock is released; a follower the log fails
// (replication.Replica.Failed) is published for metrics and resumed after
// failedFollowerRetry (noteFailure).
//
// Lock order (doc.go): partition.role (owner.go), then replicaDriver.mu,
// before the engine Log's lock and partition.mu (effects take them);
// nothing is taken while an effect waits.

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/replication"
)

// replicaDriver drives a partition's replication.Replica.
type replicaDriver struct {
	// hw is the high watermark the core last decided.
	hw atomic.Int64
	// failed: as follower, the log could not take the leader's records
	// (replication.Replica.Failed); it fetches nothing until it resumes
	// (noteFailure). Read by metrics.
	failed atomic.Bool
	mu     struct {
		sync.Mutex
		r       *replication.Replica
		nextRef uint64
		waiters map[uint64]chan error     // acks=all produces, by WaitProduce.Ref
		answers []replication.FetchAnswer // followerFetch's, reused
		// The follower's pending fetch (Ready.Fetch), for its fetcher.
		fetch    replication.FetchRequest
		fetching bool
		// The fetch answer being stepped: its bytes, each batch's span in
		// them, and the batches as the core was told (fetcher.go).
		batches    []byte
		spans      [][2]int
		batchIndex []replication.Batch
		// probing: a failed follower resumed (resumeFollower), still
		// published as failed until an append succeeds.
		probing bool
		// alterInFlight is the Seq of the ISR change sent and not yet
		// answered (isrchange.go), 0 none.
		alterInFlight uint64
		// inSync: as follower, the last answer's records reached the
		// leader's high watermark (Kafka's PartitionFetchState
		// isReplicaInSync); false until the first answer after
		// becoming a follower. The follower's throttle spares it.
		inSync bool
	}
}

// Tick steps the clock into the core: an ISR shrink of followers that
// stopped fetching, acks=all produces past their deadline.
func (p *Partition) Tick() { p.step(replication.Tick{Now: now()}) }

// SetLiveBrokers tells the core the live brokers, sorted
// (replication.LiveBrokers: a dead broker's caught-up replica outside the
// ISR no longer holds the high watermark back).
func (p *Partition) SetLiveBrokers(ids []int32) { p.step(replication.LiveBrokers{IDs: ids}) }

// Failed reports whether, as follower, the log could not take the leader's
// records: it fetches nothing until it resumes.
func (p *Partition) Failed() bool { return p.rep.failed.Load() }

// Health is the core's view of the ISR: fewer in-sync replicas than
// replicas (under-replicated), fewer than min.insync.replicas.
func (p *Partition) Health() (underReplicated, underMinISR bool) {
	p.rep.mu.Lock()
	defer p.rep.mu.Unlock()
	return p.rep.mu.r.UnderReplicated(), p.rep.mu.r.UnderMinISR()
}

// PendingFetch is the fetch the core wants sent as follower next: its
// sequence number and offset (what the follower asks of the leader).
func (p *Partition) PendingFetch() (seq uint64, offset int64) {
	p.rep.mu.Lock()
	defer p.rep.mu.Unlock()
	return p.rep.mu.fetch.Seq, p.rep.mu.fetch.Offset
}

// now is the core's clock, in Unix milliseconds.
func now() int64 { return time.Now().UnixMilli() }

// logState is p's log as the core takes it at a role change.
func logState(l *engine.Log) replication.LogState {
	s := replication.LogState{Start: l.StartOffset(), End: l.EndOffset(), HighWatermark: l.HighWatermark()}
	for _, e := range l.Epochs() {
		s.Epochs = append(s.Epochs, replication.EpochStart{Epoch: e.Epoch, Start: e.StartOffset})
	}
	return s
}

// step feeds the core ev and performs what it decides.
func (p *Partition) step(ev replication.Event) {
	p.rep.mu.Lock()
	defer p.rep.mu.Unlock()
	p.stepLocked(ev)
}

func (p *Partition) stepLocked(ev replication.Event) {
	r := p.rep.mu.r
	switch ev.(type) {
	case replication.BecomeLeader, replication.BecomeFollower, replication.Stop:
		p.rep.mu.probing = false // a role change ends a failure (noteFailure)
	}
	r.Step(ev)
	for {
		rd := r.Ready()
		if rd.Empty() {
			p.noteFailure()
			return
		}
		outcome, appended := p.performFollower(&rd)
		if ap := rd.AlterPartition; ap != nil && p.m.o.Controller != nil && ap.Seq != p.rep.mu.alterInFlight {
			// One request in flight per partition: the core hands a
			// proposal out again after an error until it is answered.
			p.rep.mu.alterInFlight = ap.Seq
			p.proposeISR(*ap)
		}
		if rd.Fetching {
			p.rep.mu.fetch, p.rep.mu.fetching = rd.Fetch, true
			if p.m.fetchers != nil {
				p.m.fetchers.want(rd.Fetch.Leader, p)
			}
		}
		if rd.HighWatermarkChanged {
			p.Log.SetHighWatermark(rd.HighWatermark)
			p.rep.hw.Store(rd.HighWatermark)
			// Consumers' fetches waiting for records the high watermark
			// now passes (appended before they waited) read them now,
			// not at their MaxWaitMs or the next append.
			p.Notify()
		}
		for _, c := range rd.Completed {
			if ch := p.rep.mu.waiters[c.Ref]; ch != nil {
				delete(p.rep.mu.waiters, c.Ref)
				ch <- c.Err
			}
		}
		p.rep.mu.answers = append(p.rep.mu.answers, rd.Answers...)
		r.Advance()
		if appended {
			r.Step(outcome)
			if outcome.Err == nil {
				p.rep.mu.probing = false // a resumed follower's log takes writes again
			}
		}
	}
}

// FollowerFetch steps a follower's fetch of p, now, and returns the
// leader's answer: an error, a diverging epoch, or the records [From,
// LogEnd) to send (not capped at the high watermark: the follower copies
// what the leader has, KIP-101's rule that the high watermark follows);
// and whether the follower is in the committed ISR after it (the leader's
// replication throttle spares it).
func (p *Partition) FollowerFetch(ev replication.FollowerFetch) (replication.FetchAnswer, bool) {
	ev.Now = now()
	p.rep.mu.Lock()
	defer p.rep.mu.Unlock()
	p.rep.mu.answers = p.rep.mu.answers[:0]
	p.stepLocked(ev)
	for i := len(p.rep.mu.answers) - 1; i >= 0; i-- {
		if a := p.rep.mu.answers[i]; a.Replica == ev.Replica {
			return a, slices.Contains(p.rep.mu.r.ISR(), ev.Replica)
		}
	}
	return replication.FetchAnswer{Replica: ev.Replica, Err: kerr.NotLeaderForPartition}, false
}

// roleLogLevel is the level of leadership changes in the log: info in a
// cluster, as Kafka logs them, debug on the single node, which leads
// every partition from the start.
func (p *Partition) roleLogLevel() slog.Level {
	if p.m.fetchers == nil {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// appended tells the core the log's end, read under its lock so that
// concurrent appends report ends that only grow (a producer's retried
// batch is answered from its first append and ends nothing).
func (p *Partition) appended() {
	p.rep.mu.Lock()
	defer p.rep.mu.Unlock()
	r := p.rep.mu.r
	if end := p.Log.EndOffset(); r.Role() == replication.Leader && end > r.LogEnd() {
		p.stepLocked(replication.Appended{End: end, Epoch: r.LeaderEpoch()})
	}
}

// CheckAcksAll refuses an acks=all produce the ISR cannot take: fewer
// in-sync replicas than min.insync.replicas (NOT_ENOUGH_REPLICAS), or no
// longer the leader.
func (p *Partition) CheckAcksAll() error {
	p.rep.mu.Lock()
	defer p.rep.mu.Unlock()
	return p.rep.mu.r.CheckProduce(true)
}

// AwaitReplicated waits until the high watermark passes end (the offset
// after an acks=all produce's last record), the request's timeout passes
// (REQUEST_TIMED_OUT), the core fails it (NOT_ENOUGH_REPLICAS_AFTER_APPEND,
// NOT_LEADER_OR_FOLLOWER) or closing closes (NOT_LEADER_OR_FOLLOWER): a
// broker shutting down reads no more follower fetches, so the high
// watermark cannot move, and the wait would hold the shutdown, and the
// broker's registration with the partition's leadership, until the
// timeout. The client retries on the next leader; an idempotent producer's
// retry is deduplicated there if a follower had the batch. It does not
// poll: the core completes it.
func (p *Partition) AwaitReplicated(end int64, timeout time.Duration, closing <-chan struct{}) error {
	if p.rep.hw.Load() >= end {
		return nil
	}
	ch := make(chan error, 1)
	deadline := now() + timeout.Milliseconds()
	p.rep.mu.Lock()
	p.rep.mu.nextRef++
	ref := p.rep.mu.nextRef
	p.rep.mu.waiters[ref] = ch
	p.stepLocked(replication.WaitProduce{Ref: ref, Offset: end, Deadline: deadline})
	p.rep.mu.Unlock()
	t := time.AfterFunc(timeout, func() { p.step(replication.Tick{Now: now()}) })
	defer t.Stop()
	select {
	case err := <-ch:
		return err
	case <-closing:
		// The core completes the waiter later, into its buffered channel,
		// or never: the broker is closing.
		return fmt.Errorf("%w: the broker is shutting down", kerr.NotLeaderForPartition)
	}
}

// failedFollowerRetry is how long a follower whose log could not take the
// leader's records waits before it reads its log again and resumes
// fetching. Kafka leaves such a partition failed until a LeaderAndIsr adds
// it again; a log whose disk came back (or whose stray records a
// truncation removed) follows again here without one.
const failedFollowerRetry = 5 * time.Second

// noteFailure publishes the core's failed state (metrics, the log) and, on
// a failure, schedules the retry. Under p's replica lock.
func (p *Partition) noteFailure() {
	failed, why := p.rep.mu.r.Failed()
	switch {
	case failed && p.rep.mu.probing:
		// Resumed, and failed again: still failed, tried again later.
		p.rep.mu.probing = false
		time.AfterFunc(failedFollowerRetry, p.resumeFollower)
		return
	case !failed && p.rep.mu.probing:
		return // resumed: failed until an append succeeds
	case failed == p.rep.failed.Load():
		return
	}
	p.rep.failed.Store(failed)
	if p.m.o.LogDirChanged != nil {
		p.m.o.LogDirChanged()
	}
	if !failed {
		p.m.o.Logger.Info("following the leader again", "topic", p.Topic, "partition", p.Index, "log_end", p.Log.EndOffset())
		return
	}
	p.m.o.Logger.Error("the log cannot take the leader's records: the replica stops fetching (it leaves the ISR) and retries",
		"topic", p.Topic, "partition", p.Index, "log_end", p.Log.EndOffset(), "retry_in", failedFollowerRetry, "err", why)
	time.AfterFunc(failedFollowerRetry, p.resumeFollower)
}

// resumeFollower resumes a failed follower from its log as it is now. A log
// failed by a storage error (engine.Log.Failure: its page cache may have
// lost writes) stays failed until the broker opens it again at its next
// start, which recovers it from what reached the disk.
func (p *Partition) resumeFollower() {
	select {
	case <-p.m.o.Closing:
		return
	default:
	}
	p.role.RLock()
	defer p.role.RUnlock()
	p.rep.mu.Lock()
	defer p.rep.mu.Unlock()
	if failed, _ := p.rep.mu.r.Failed(); !failed {
		return // a role change since
	}
	if err := p.Log.Failure(); err != nil {
		p.m.o.Logger.Error("the log failed: the replica follows again once the broker restarts", "topic", p.Topic, "partition", p.Index, "err", err)
		return
	}
	p.rep.mu.probing = true
	p.stepLocked(replication.Resume{Log: logState(p.Log)})
}
