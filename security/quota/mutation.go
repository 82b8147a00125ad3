package quota

// controller_mutation_rate (KIP-599), as Kafka's ControllerMutationQuotaManager
// keeps it: partitions created or deleted per second, counted in a token
// bucket (Kafka's TokenBucket stat) rather than a windowed rate.
//
//   - The bucket holds at most a burst of MutationSamples *
//     MutationWindow (seconds) * quota tokens (controller.quota.window.num
//     and controller.quota.window.size.seconds) and refills at quota tokens
//     a second; a new one starts full. A mutation of n partitions takes n
//     tokens, and the bucket may go below zero.
//   - Strict (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+):
//     a mutation is refused when the bucket is already below zero, and
//     otherwise taken whole, however far below zero that takes it (so the
//     first topic of a burst is accepted even alone over the quota).
//   - Permissive (older versions): every mutation is taken.
//   - The throttle time, once the bucket is found below zero, is the time to
//     refill it to zero: -tokens / quota seconds, rounded to the millisecond
//     (Kafka's ControllerMutationQuotaManager.throttleTimeMs), less the time
//     since it was found (Kafka's AbstractControllerMutationQuota.throttleTime).

import (
	"math"
	"time"
)

// bucket is a token bucket (Kafka's TokenBucket). Guarded by its rate's mu.
type bucket struct {
	tokens float64
	last   int64 // ns of the last refill
	fresh  bool  // never refilled: it starts full
}

// refill adds the tokens of the time since the last refill, up to burst.
func (b *bucket) refill(bound, burst float64, now int64) {
	if !b.fresh {
		b.tokens, b.fresh = burst, true
	} else {
		b.tokens = math.Min(burst, b.tokens+bound*float64(now-b.last)/float64(time.Second))
	}
	b.last = now
}

// Mutations is one request's controller mutation quota (Kafka's
// ControllerMutationQuota, made for each request). The zero value is
// unbounded (no quota applies). Not safe for concurrent use.
type Mutations struct {
	m      *Manager
	r      *rate
	strict bool
	// throttle, found at throttleAt: the last throttle time found.
	throttle   time.Duration
	throttleAt int64
}

// Mutations is c's controller mutation quota for one request: strict (a
// mutation over the quota is refused) or permissive (taken, only
// throttled). Resolve first.
func (m *Manager) Mutations(c *Client, strict bool) Mutations {
	r := c.rates[ControllerMutationRate]
	if r == nil {
		return Mutations{}
	}
	return Mutations{m: m, r: r, strict: strict}
}

// Record takes n partitions created or deleted at now, and reports whether
// they are allowed: false only when strict and the quota was already
// exceeded (Kafka's THROTTLING_QUOTA_EXCEEDED).
func (q *Mutations) Record(n float64, now int64) bool {
	r := q.r
	if r == nil {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	burst := float64(q.m.cfg.MutationSamples) * q.m.cfg.MutationWindow.Seconds() * r.bound
	r.b.refill(r.bound, burst, now)
	r.last = now
	if q.strict && r.b.tokens < 0 {
		q.exceeded(r.b.tokens, r.bound, now)
		return false
	}
	r.b.tokens = math.Min(burst, r.b.tokens-n)
	if !q.strict && r.b.tokens < 0 {
		q.exceeded(r.b.tokens, r.bound, now)
	}
	return true
}

// exceeded notes the throttle time of a bucket found at tokens below zero.
func (q *Mutations) exceeded(tokens, bound float64, now int64) {
	ms := math.Round(-tokens / bound * 1000)
	if bound <= 0 || ms >= 1<<31-1 {
		ms = 1<<31 - 1
	}
	q.throttle, q.throttleAt = time.Duration(ms)*time.Millisecond, now
}

// Throttle is how long the client is to be throttled, at now: the last
// throttle time found less the time since (0 when none was found).
func (q *Mutations) Throttle(now int64) time.Duration {
	return max(q.throttle-time.Duration(now-q.throttleAt), 0)
}
