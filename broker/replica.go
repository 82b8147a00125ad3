package broker

// The broker's side of a partition's replication: each hosted partition
// has a replication.Replica (the deterministic core, package replication),
// driven here as etcd raft's RawNode is: events are stepped under the
// partition's replica lock, and what the core decides (Ready) is performed
// before the lock is released.
//
// Events come from LeaderAndIsr (hosting.go and owner.go: BecomeLeader,
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
// answered from the core's answer (01_fetch.go). Also wired
// (fetcher.go: this broker's fetching as follower, Ready.Fetch and
// FetchResult; isrchange.go: Ready.AlterPartition to the controller).
//
// A follower's append is stepped back into the core as its outcome
// (FetchAppended) before the lock is released; a follower the log fails
// (replication.Replica.Failed) is published for metrics and resumed after
// failedFollowerRetry (noteFailure).
//
// Lock order: partition.role (owner.go), then replicaDriver.mu, after
// Broker.admin and controlState.mu (hosting steps under them), before the
// engine Log's lock and partition.mu (effects take them); nothing is taken
// while an effect waits.

import (
	"errors"
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
	// fetchers fetch for this broker as follower (fetcher.go); nil on the
	// single node, which follows nothing.
	fetchers *fetchers
	log      *slog.Logger
	b        *Broker // ISR changes go to its controller (isrchange.go)

	mu struct {
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

// now is the core's clock, in Unix milliseconds.
func now() int64 { return time.Now().UnixMilli() }

// initReplica gives p its core, offline until LeaderAndIsr.
func (b *Broker) initReplica(p *partition, minInsync int32) {
	p.rep.mu.r = replication.New(replication.Config{Self: b.cfg.ID, MinInsyncReplicas: int(minInsync),
		ReplicaLagTimeMaxMs: b.cfg.Cluster.LagTimeMax().Milliseconds()})
	p.rep.log = b.log
	if b.cluster != nil {
		p.rep.fetchers, p.rep.b = b.cluster.fetchers, b
	}
	p.rep.mu.waiters = map[uint64]chan error{}
	p.rep.hw.Store(p.log.HighWatermark())
}

// logState is p's log as the core takes it at a role change.
func logState(l *engine.Log) replication.LogState {
	s := replication.LogState{Start: l.StartOffset(), End: l.EndOffset(), HighWatermark: l.HighWatermark()}
	for _, e := range l.Epochs() {
		s.Epochs = append(s.Epochs, replication.EpochStart{Epoch: e.Epoch, Start: e.StartOffset})
	}
	return s
}

// step feeds the core ev and performs what it decides.
func (p *partition) step(ev replication.Event) {
	p.rep.mu.Lock()
	defer p.rep.mu.Unlock()
	p.stepLocked(ev)
}

func (p *partition) stepLocked(ev replication.Event) {
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
		if ap := rd.AlterPartition; ap != nil && p.rep.b != nil && ap.Seq != p.rep.mu.alterInFlight {
			// One request in flight per partition: the core hands a
			// proposal out again after an error until it is answered.
			p.rep.mu.alterInFlight = ap.Seq
			p.proposeISR(p.rep.b, *ap)
		}
		if rd.Fetching {
			p.rep.mu.fetch, p.rep.mu.fetching = rd.Fetch, true
			if p.rep.fetchers != nil {
				p.rep.fetchers.want(rd.Fetch.Leader, p)
			}
		}
		if rd.HighWatermarkChanged {
			p.log.SetHighWatermark(rd.HighWatermark)
			p.rep.hw.Store(rd.HighWatermark)
			// Consumers' fetches waiting for records the high watermark
			// now passes (appended before they waited) read them now,
			// not at their MaxWaitMs or the next append.
			p.notify()
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

// followerFetch steps a follower's fetch of p and returns the leader's
// answer: an error, a diverging epoch, or the records [From, LogEnd) to
// send (not capped at the high watermark: the follower copies what the
// leader has, KIP-101's rule that the high watermark follows); and whether
// the follower is in the committed ISR after it (the leader's throttle
// spares it, throttle.go).
func (p *partition) followerFetch(ev replication.FollowerFetch) (replication.FetchAnswer, bool) {
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
func (p *partition) roleLogLevel() slog.Level {
	if p.rep.fetchers == nil {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// appended tells the core the log's end, read under its lock so that
// concurrent appends report ends that only grow (a producer's retried
// batch is answered from its first append and ends nothing).
func (p *partition) appended() {
	p.rep.mu.Lock()
	defer p.rep.mu.Unlock()
	r := p.rep.mu.r
	if end := p.log.EndOffset(); r.Role() == replication.Leader && end > r.LogEnd() {
		p.stepLocked(replication.Appended{End: end, Epoch: r.LeaderEpoch()})
	}
}

// checkAcksAll refuses an acks=all produce the ISR cannot take: fewer
// in-sync replicas than min.insync.replicas (NOT_ENOUGH_REPLICAS), or no
// longer the leader.
func (p *partition) checkAcksAll() error {
	p.rep.mu.Lock()
	defer p.rep.mu.Unlock()
	return p.rep.mu.r.CheckProduce(true)
}

// awaitReplicated waits until the high watermark passes end (the offset
// after an acks=all produce's last record), the request's timeout passes
// (REQUEST_TIMED_OUT), the core fails it (NOT_ENOUGH_REPLICAS_AFTER_APPEND,
// NOT_LEADER_OR_FOLLOWER) or closing closes (NOT_LEADER_OR_FOLLOWER): a
// broker shutting down reads no more follower fetches, so the high
// watermark cannot move, and the wait would hold the shutdown, and the
// broker's registration with the partition's leadership, until the
// timeout. The client retries on the next leader; an idempotent producer's
// retry is deduplicated there if a follower had the batch. It does not
// poll: the core completes it.
func (p *partition) awaitReplicated(end int64, timeout time.Duration, closing <-chan struct{}) error {
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

// tickReplicas steps the clock into every hosted partition's core: ISR
// shrinks of followers that stopped fetching. Every lag/2, as Kafka's
// isr-expiration task.
func (b *Broker) tickReplicas(lag time.Duration) {
	t := time.NewTicker(lag / 2)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-b.closing:
			return
		}
		b.mu.RLock()
		var ps []*partition
		for _, ts := range b.mu.topics {
			for _, p := range ts.partitions {
				if p != nil && p.leader.Load() {
					ps = append(ps, p)
				}
			}
		}
		b.mu.RUnlock()
		n := now()
		for _, p := range ps {
			p.step(replication.Tick{Now: n})
		}
	}
}

// errorCode is the Kafka code of an error the replication core decided
// (a kerr value), UNKNOWN_SERVER_ERROR for any other.
func errorCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// liveBrokers is the set of live brokers (from the metadata cache) the
// partitions' cores were last told, so that only a change is stepped into
// every partition. Lock order: mu before Broker.mu and the partitions'
// replica locks.
type liveBrokers struct {
	mu  sync.Mutex
	ids []int32
}

// liveIDs is the metadata cache's live brokers, sorted.
func (b *Broker) liveIDs() []int32 {
	snap := b.ctl.cache.load()
	ids := make([]int32, 0, len(snap.brokers))
	for _, br := range snap.brokers {
		ids = append(ids, br.id)
	}
	slices.Sort(ids)
	return ids
}

// liveBrokersChanged tells every hosted partition's core the live brokers
// when they changed (replication.LiveBrokers: a dead broker's caught-up
// replica outside the ISR no longer holds the high watermark back).
func (b *Broker) liveBrokersChanged() {
	ids := b.liveIDs()
	b.live.mu.Lock()
	defer b.live.mu.Unlock()
	if len(ids) == 0 || slices.Equal(ids, b.live.ids) {
		return
	}
	b.live.ids = ids
	b.mu.RLock()
	parts := b.hostedLocked()
	b.mu.RUnlock()
	for _, p := range parts {
		p.step(replication.LiveBrokers{IDs: ids})
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
func (p *partition) noteFailure() {
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
	if p.rep.b != nil {
		p.rep.b.cluster.logDirChanged()
	}
	if !failed {
		p.rep.log.Info("following the leader again", "topic", p.topic, "partition", p.index, "log_end", p.log.EndOffset())
		return
	}
	p.rep.log.Error("the log cannot take the leader's records: the replica stops fetching (it leaves the ISR) and retries",
		"topic", p.topic, "partition", p.index, "log_end", p.log.EndOffset(), "retry_in", failedFollowerRetry, "err", why)
	time.AfterFunc(failedFollowerRetry, p.resumeFollower)
}

// resumeFollower resumes a failed follower from its log as it is now. A log
// failed by a storage error (engine.Log.Failure: its page cache may have
// lost writes) stays failed until the broker opens it again at its next
// start, which recovers it from what reached the disk.
func (p *partition) resumeFollower() {
	if b := p.rep.b; b != nil {
		select {
		case <-b.closing:
			return
		default:
		}
	}
	p.role.RLock()
	defer p.role.RUnlock()
	p.rep.mu.Lock()
	defer p.rep.mu.Unlock()
	if failed, _ := p.rep.mu.r.Failed(); !failed {
		return // a role change since
	}
	if err := p.log.Failure(); err != nil {
		p.rep.log.Error("the log failed: the replica follows again once the broker restarts", "topic", p.topic, "partition", p.index, "err", err)
		return
	}
	p.rep.mu.probing = true
	p.stepLocked(replication.Resume{Log: logState(p.log)})
}
