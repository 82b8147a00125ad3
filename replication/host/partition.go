package host

import (
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/metrics"
	"github.com/sluice-io/sluice/replication"
)

// Partition is one partition a broker hosts: its log, and the owner of
// the log and of the replication role (owner.go). The controller's
// LeaderAndIsr says whether it leads, at which leader epoch (the broker's
// hosting; the single node leads every one, at epoch 0).
type Partition struct {
	Topic string
	Index int32
	Log   *engine.Log
	// Metrics are the topic's and the broker's counters, set when the
	// partition is made; nil without metrics.
	Metrics *metrics.Topic
	m       *Manager
	// leader: this broker serves produce and fetch for the partition, as
	// LeaderAndIsr said.
	leader atomic.Bool
	// epoch is the leader epoch clients' CurrentLeaderEpoch is checked
	// against (0 on the single node); the log stamps it into batches.
	epoch atomic.Int32
	// epochStart is where the log's current leader epoch starts while
	// this broker leads (-1 otherwise): until the high watermark reaches it
	// the leader is new and its high watermark still the one it learnt as
	// a follower, so clients' ListOffsets get OFFSET_NOT_AVAILABLE (KIP-207).
	epochStart atomic.Int64
	// role is the owner lock of the log and the role (owner.go): read by
	// appends and fetch answers, written by role changes.
	role sync.RWMutex
	// rep drives the partition's replication core (driver.go): its high
	// watermark, acks=all waits.
	rep replicaDriver
	// DurableHW: with flush.messages=1 only what is on disk is readable, as
	// Kafka flushes before it advances the high watermark; otherwise a
	// machine crash would reuse offsets consumers already read. It follows
	// the topic's configuration (refreshPartition) and is read on the fetch
	// path.
	DurableHW atomic.Bool
	// minInsync is the topic's min.insync.replicas: above the in-sync
	// replica count (1 on a single node) acks=all produces are refused
	// (SetMinInsync).
	minInsync atomic.Int32
	// The broker's settings of the partition from its topic's
	// configuration, read on the produce and fetch paths without a lock.
	//
	// Compacted: the topic's cleanup.policy includes compact, so produce
	// refuses records without a key. It follows the log's options
	// (refreshPartition) and is read on the produce path.
	Compacted atomic.Bool
	// LeaderThrottled and FollowerThrottled: the topic's
	// leader.replication.throttled.replicas and
	// follower.replication.throttled.replicas name this broker's replica
	// (refreshThrottles, throttle.go); read on the fetch paths.
	LeaderThrottled, FollowerThrottled atomic.Bool
	mu                                 struct {
		sync.Mutex
		waiters []chan struct{} // fetches waiting for data; each buffered 1
	}
}

// Leads reports whether this broker leads the partition now (serves its
// produce and fetch).
func (p *Partition) Leads() bool { return p.leader.Load() }

// Epoch is the partition's leader epoch as this broker last learnt it.
func (p *Partition) Epoch() int32 { return p.epoch.Load() }

// MinInsync is the topic's min.insync.replicas as the partition applies it.
func (p *Partition) MinInsync() int32 { return p.minInsync.Load() }

// SetMinInsync applies a new min.insync.replicas.
func (p *Partition) SetMinInsync(n int32) {
	if p.minInsync.Swap(n) != n {
		p.step(replication.MinInsyncChanged{MinInsyncReplicas: int(n)})
	}
}

// OffsetsAvailable reports whether the high watermark has reached the
// start of the leader's epoch (KIP-207): before, a client's ListOffsets
// could be answered offsets the previous leader already passed.
func (p *Partition) OffsetsAvailable() bool {
	return p.epochStart.Load() <= p.HighWatermark()
}

// epochStartOffset is where epoch starts in l's epoch cache, -1 if l has
// no such epoch.
func epochStartOffset(l *engine.Log, epoch int32) int64 {
	for _, e := range l.Epochs() {
		if e.Epoch == epoch {
			return e.StartOffset
		}
	}
	return -1
}

// CheckLeaderEpoch checks a request's CurrentLeaderEpoch (-1: none) as
// Kafka's Partition.checkCurrentLeaderEpoch: older than the partition's is
// FENCED_LEADER_EPOCH (the client's leader is gone), newer
// UNKNOWN_LEADER_EPOCH (this broker has not heard of it yet).
func (p *Partition) CheckLeaderEpoch(current int32) int16 {
	epoch := p.epoch.Load()
	switch {
	case current == -1:
		return 0
	case current < epoch:
		return kerr.FencedLeaderEpoch.Code
	case current > epoch:
		return kerr.UnknownLeaderEpoch.Code
	}
	return 0
}

// HighWatermark is the offset below which records are readable: the
// replication core's (driver.go; on a single node, or with the ISR the
// leader alone, the log end once a batch is appended), and with
// flush.messages=1 no more than what is on disk.
func (p *Partition) HighWatermark() int64 {
	hw := p.rep.hw.Load()
	if p.DurableHW.Load() {
		return min(hw, p.Log.RecoveryPoint())
	}
	return hw
}

// LastStableOffset is the offset below which every record is committed or
// aborted and readable, given the high watermark hw: the first offset of
// the log's oldest open transaction if below hw, else hw (Kafka's
// UnifiedLog.LastStableOffset). A read_committed fetch reads up to it.
func (p *Partition) LastStableOffset(hw int64) int64 {
	if fu := p.Log.FirstUnstableOffset(); fu >= 0 && fu < hw {
		return fu
	}
	return hw
}

// Wait registers ch to be signalled at the next append. Registering before
// reading means an append after the read cannot be missed.
func (p *Partition) Wait(ch chan struct{}) {
	p.mu.Lock()
	for _, w := range p.mu.waiters {
		if w == ch {
			p.mu.Unlock()
			return
		}
	}
	p.mu.waiters = append(p.mu.waiters, ch)
	p.mu.Unlock()
}

// Waiting is how many fetches wait for the partition's next append (the
// fetch purgatory's size, in Kafka's words).
func (p *Partition) Waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.mu.waiters)
}

// Notify wakes every registered fetch.
func (p *Partition) Notify() {
	p.mu.Lock()
	for i, w := range p.mu.waiters {
		select {
		case w <- struct{}{}:
		default:
		}
		p.mu.waiters[i] = nil
	}
	p.mu.waiters = p.mu.waiters[:0]
	p.mu.Unlock()
}
