package quota

// The replication quotas' measure (KIP-73): the leader's and the
// follower's byte rates of throttled partitions, Kafka's SimpleRate over
// replication.quota.window.num samples of
// replication.quota.window.size.seconds (rateMeter): the bytes of the
// samples kept, over the time since the oldest began (at least one
// window). A quota is exceeded while that rate is above its bound. Which
// partitions are throttled, and the bounds, are the broker's (its
// throttle.go); a check is an atomic load when unbounded and the mutex
// once per fetch otherwise; nothing allocates.

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
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

// Replication is one side's replication quota (leader or follower) of a
// broker: its bound and the rate of the throttled partitions' bytes. Its
// mutex nests no other lock.
type Replication struct {
	bound atomic.Int64 // bytes/s; math.MaxInt64: none
	clock func() int64 // monotonic ns (Now; tests inject theirs)

	mu struct {
		sync.Mutex
		m rateMeter
	}
}

// NewReplication is an unbounded quota measured over windows samples of
// size (replication.quota.window.num, replication.quota.window.size.seconds).
func NewReplication(windows int, size time.Duration) *Replication {
	q := &Replication{clock: Now}
	q.bound.Store(math.MaxInt64)
	q.mu.m = newRateMeter(windows, size)
	return q
}

// SetBound sets the bound in bytes/s (math.MaxInt64: none) and returns
// the previous one.
func (q *Replication) SetBound(bytesPerSecond int64) int64 { return q.bound.Swap(bytesPerSecond) }

// Bound is the bound in bytes/s.
func (q *Replication) Bound() int64 { return q.bound.Load() }

// Windows are the samples the rate is measured over and their size.
func (q *Replication) Windows() (n int, size time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.mu.m.samples), time.Duration(q.mu.m.window)
}

// Record counts n bytes of throttled partitions, copied now.
func (q *Replication) Record(n int64) {
	if n <= 0 {
		return
	}
	q.mu.Lock()
	q.mu.m.record(q.clock(), n)
	q.mu.Unlock()
}

// Exceeded returns how long the quota stays exceeded from now (0: it is
// not). Unbounded, it takes no lock.
func (q *Replication) Exceeded() time.Duration {
	bound := q.bound.Load()
	if bound == math.MaxInt64 {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.mu.m.over(q.clock(), bound)
}

// processStart anchors Now: time.Since reads the monotonic clock, so
// a wall clock step does not move a quota's windows.
var processStart = time.Now()

// Now is the time quotas are measured in: monotonic nanoseconds since the
// process started.
func Now() int64 { return int64(time.Since(processStart)) }
