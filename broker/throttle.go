package broker

// Replication throttles (Kafka's replication quotas, KIP-73), which bound
// the bytes/s a partition move copies so that clients keep their latency:
//
//   - The rates are dynamic broker configs, leader.replication.throttled.rate
//     and follower.replication.throttled.rate (bytes/s; default
//     Long.MAX_VALUE, no bound), for one broker (resource "<id>") or as the
//     cluster-wide default (resource ""); a change applies at once
//     (refreshAllLocked, after a local or a ZooKeeper change). Deliberate
//     difference: Kafka's brokers accept the cluster-wide default of these
//     two keys but apply only their own entity's (KAFKA-10190); sluice
//     applies the default, as it does for every other dynamic key. As in
//     Kafka they are dynamic only: the configuration file does not set
//     them.
//   - Which replicas they apply to are the topic configs
//     leader.replication.throttled.replicas and
//     follower.replication.throttled.replicas: "*" (every replica) or
//     partition:broker entries, of which each broker takes those naming it
//     (Kafka's TopicConfigHandler.parseThrottledPartitions). They become
//     two flags of the partition (refreshThrottles), read on the fetch paths
//     without a lock.
//   - Leader side (01_fetch.go, Kafka's ReplicaManager.shouldLeaderThrottle):
//     a follower's fetch of a leader-throttled partition gets no records
//     while the follower is outside the ISR and the leader quota is
//     exceeded; the fetch waits (long poll) until the quota allows again or
//     its MaxWaitMs passes. Follower side (replication/host/fetcher.go,
//     ReplicaFetcherThread.shouldFollowerThrottle): a follower-throttled
//     partition not in sync (its last fetch did not reach the leader's high
//     watermark) is left out of the fetch while the follower quota is
//     exceeded. In-sync replicas are never held back, but their bytes
//     count: every byte of a throttled partition is recorded, in sync or
//     not, as Kafka records them, so the quota bounds the replication
//     traffic of those partitions as a whole.
//   - The rate is measured as Kafka's SimpleRate over
//     replication.quota.window.num samples of
//     replication.quota.window.size.seconds (rateMeter): the bytes of the
//     samples kept, over the time since the oldest began (at least one
//     window). The quota is exceeded while that rate is above the bound.
//
// A throttle check is an atomic load per partition, and a quota's mutex
// once per fetch when a throttled partition is in it; nothing allocates.

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/replication/host"
)

// rateMeter is a byte rate over a ring of sampled windows (Kafka's
// SampledStat with SimpleRate's window). The caller gives the time, in
// nanoseconds of any monotonic clock, to every call: no clock inside.
type rateMeter struct {
	window  int64        // ns a sample covers
	samples []rateSample // the ring
	cur     int          // the sample being filled
}

// rateSample is one window's bytes, from its first record.
type rateSample struct {
	start int64 // ns of its first record
	bytes int64
	used  bool
}

func newRateMeter(windows int, size time.Duration) rateMeter {
	return rateMeter{window: int64(max(size, time.Nanosecond)), samples: make([]rateSample, max(windows, 1))}
}

// Record adds n bytes at now, in a new sample if the current one is a
// window old.
func (m *rateMeter) record(now, n int64) {
	s := &m.samples[m.cur]
	if s.used && now-s.start >= m.window {
		m.cur = (m.cur + 1) % len(m.samples)
		s = &m.samples[m.cur]
		*s = rateSample{}
	}
	if !s.used {
		*s = rateSample{start: now, used: true}
	}
	s.bytes += n
}

// measure drops the samples older than the whole ring and returns the
// bytes of the rest and when the oldest began (now if none).
func (m *rateMeter) measure(now int64) (bytes, oldest int64) {
	age := m.window * int64(len(m.samples))
	oldest = now
	for i := range m.samples {
		s := &m.samples[i]
		if !s.used {
			continue
		}
		if now-s.start >= age {
			*s = rateSample{}
			continue
		}
		bytes += s.bytes
		oldest = min(oldest, s.start)
	}
	return bytes, oldest
}

// rate is the bytes per second at now: the samples' bytes over the time
// since the oldest began, at least one window.
func (m *rateMeter) rate(now int64) float64 {
	bytes, oldest := m.measure(now)
	return float64(bytes) * 1e9 / float64(max(now-oldest, m.window))
}

// over returns how long from now the rate stays above bound if nothing
// more is recorded (0: it is not above): until the time since the oldest
// sample makes the rate the bound, or that sample leaves the ring, when
// the rest is to be measured again. At least a millisecond when above, so
// that a caller waiting for it does not spin.
func (m *rateMeter) over(now, bound int64) time.Duration {
	if bound == math.MaxInt64 {
		return 0
	}
	bytes, oldest := m.measure(now)
	if float64(bytes)*1e9 <= float64(bound)*float64(max(now-oldest, m.window)) {
		return 0
	}
	until := oldest + m.window*int64(len(m.samples)) // the oldest sample leaves
	if bound > 0 {
		if at := float64(oldest) + math.Ceil(float64(bytes)*1e9/float64(bound)); at < float64(until) {
			until = int64(at)
		}
	}
	return max(time.Duration(until-now), time.Millisecond)
}

// replicationQuota is one side's quota (leader or follower) of this
// broker: its bound and the rate of the throttled partitions' bytes.
type replicationQuota struct {
	bound atomic.Int64 // bytes/s; math.MaxInt64: none
	clock func() int64 // monotonic ns (monoNow; tests inject theirs)

	mu struct {
		sync.Mutex
		m rateMeter
	}
}

func (q *replicationQuota) init(windows int, size time.Duration) {
	q.bound.Store(math.MaxInt64)
	q.clock = monoNow
	q.mu.m = newRateMeter(windows, size)
}

// record counts n bytes of throttled partitions, copied now.
func (q *replicationQuota) Record(n int64) {
	if n <= 0 {
		return
	}
	q.mu.Lock()
	q.mu.m.record(q.clock(), n)
	q.mu.Unlock()
}

// Exceeded returns how long the quota stays exceeded from now (0: it is
// not). Unbounded, it takes no lock.
func (q *replicationQuota) Exceeded() time.Duration {
	bound := q.bound.Load()
	if bound == math.MaxInt64 {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.mu.m.over(q.clock(), bound)
}

// processStart anchors monoNow: time.Since reads the monotonic clock, so
// a wall clock step does not move a quota's windows.
var processStart = time.Now()

func monoNow() int64 { return int64(time.Since(processStart)) }

// replicationQuotas are a broker's two quotas.
type replicationQuotas struct {
	leader, follower replicationQuota
}

func (r *replicationQuotas) init(c config.ClusterConfig) {
	n, size := c.QuotaWindows()
	r.leader.init(n, size)
	r.follower.init(n, size)
}

// applyReplicationRates sets the quotas' bounds from the broker's layers
// (config.Layers.ReplicationRates), logging a change.
func (b *Broker) applyReplicationRates() {
	leader, follower := b.cfgs.layers().ReplicationRates()
	for i, q := range [2]*replicationQuota{&b.repl.leader, &b.repl.follower} {
		rate := [2]int64{leader, follower}[i]
		if old := q.bound.Swap(rate); old != rate {
			b.log.Info("replication throttle", "key", config.ReplicationRateKeys[i], "bytes_per_second", rate)
		}
	}
}

// refreshThrottles sets p's throttle flags from its topic's configs.
func (b *Broker) refreshThrottles(p *host.Partition, topicConfigs map[string]string) {
	leader, follower := config.ThrottledReplicas(topicConfigs, p.Index, b.cfg.ID)
	p.LeaderThrottled.Store(leader)
	p.FollowerThrottled.Store(follower)
}
