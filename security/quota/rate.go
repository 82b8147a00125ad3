package quota

// Kafka's Rate over a WindowedSum (org.apache.kafka.common.metrics.stats
// Rate and SampledStat), the measure every client quota is checked
// against:
//
//   - Values are summed into samples of Config.Window each; the ring holds
//     Config.Samples+1 of them (Kafka keeps one more than the configured
//     number, for the sample that overlaps the start of the measured span).
//     A sample is complete once Window has passed since it began; the next
//     record then starts the next sample, resetting the oldest slot.
//   - A sample whose last record is Samples*Window old or more is obsolete:
//     it is reset (empty, starting now) before any measure.
//   - The rate is the sum of the samples over the span since the oldest
//     began, where a span shorter than Samples-1 whole windows counts as
//     Samples-1 windows (so a first burst is not measured over a few
//     milliseconds), and at least 1 ns.
//
// Times are nanoseconds of any monotonic clock, given by the caller.

import "time"

// Config is how rates are measured (Kafka's ClientQuotaManagerConfig).
type Config struct {
	// Samples is quota.window.num (default 11).
	Samples int
	// Window is quota.window.size.seconds (default 1 s).
	Window time.Duration
	// MutationSamples and MutationWindow are controller.quota.window.num
	// and controller.quota.window.size.seconds (default 11 and 1 s), the
	// burst of controller_mutation_rate (mutation.go).
	MutationSamples int
	MutationWindow  time.Duration
}

// withDefaults fills the zero fields with Kafka's defaults.
func (c Config) withDefaults() Config {
	if c.Samples <= 0 {
		c.Samples = 11
	}
	if c.Window <= 0 {
		c.Window = time.Second
	}
	if c.MutationSamples <= 0 {
		c.MutationSamples = 11
	}
	if c.MutationWindow <= 0 {
		c.MutationWindow = time.Second
	}
	return c
}

// sample is one window's sum.
type sample struct {
	start, last int64 // ns: when it began, its last record
	value       float64
	events      int64
}

func (s *sample) reset(now int64) { *s = sample{start: now, last: now} }

// Rate is one measured rate. Its ring is allocated once, by NewRate; no
// method allocates. Not safe for concurrent use.
type Rate struct {
	cfg     Config
	samples []sample // the ring; the first used of them are in use
	used    int      // Kafka's list grows to Samples+1 as windows pass
	cur     int
}

// NewRate makes an empty rate measured as cfg says.
func NewRate(cfg Config) *Rate {
	cfg = cfg.withDefaults()
	return &Rate{cfg: cfg, samples: make([]sample, cfg.Samples+1)}
}

// current is the sample being filled, the first one made at now.
func (r *Rate) current(now int64) *sample {
	if r.used == 0 {
		r.samples[0].reset(now)
		r.used = 1
	}
	return &r.samples[r.cur]
}

// Record adds v at now.
func (r *Rate) Record(v float64, now int64) {
	s := r.current(now)
	if now-s.start >= int64(r.cfg.Window) {
		r.cur = (r.cur + 1) % len(r.samples)
		if r.cur >= r.used {
			r.used = r.cur + 1
		}
		s = &r.samples[r.cur]
		s.reset(now)
	}
	s.value += v
	s.events++
	s.last = now
}

// purge resets the obsolete samples.
func (r *Rate) purge(now int64) {
	expire := int64(r.cfg.Samples) * int64(r.cfg.Window)
	for i := 0; i < r.used; i++ {
		if now-r.samples[i].last >= expire {
			r.samples[i].reset(now)
		}
	}
}

// WindowSize is the span, in ns, the rate is measured over at now
// (Kafka's Rate.windowSize), obsolete samples purged first.
func (r *Rate) WindowSize(now int64) int64 {
	r.purge(now)
	oldest := r.current(now).start
	for i := 0; i < r.used; i++ {
		oldest = min(oldest, r.samples[i].start)
	}
	total := now - oldest
	window := int64(r.cfg.Window)
	full := total / window
	if minFull := int64(r.cfg.Samples - 1); full < minFull {
		total += (minFull - full) * window
	}
	return max(total, 1)
}

// Measure is the rate at now, per second.
func (r *Rate) Measure(now int64) float64 {
	r.purge(now)
	var sum float64
	for i := 0; i < r.used; i++ {
		sum += r.samples[i].value
	}
	return sum / (float64(r.WindowSize(now)) / float64(time.Second))
}

// ThrottleTime is how long a client whose rate is observed, measured over
// window (ns), must wait to bring it down to bound if it records nothing
// more (Kafka's QuotaUtils.throttleTime): O*W/(W+X) = T gives
// X = (O-T)/T*W, rounded to the millisecond as Kafka rounds it. Zero when
// observed is not above bound.
func ThrottleTime(observed, bound float64, window int64) time.Duration {
	if observed <= bound || bound <= 0 && observed <= 0 {
		return 0
	}
	if bound <= 0 {
		// A zero quota: Kafka's formula divides by zero (infinity, which
		// its toInt makes Int.MaxValue ms).
		return time.Duration(1<<31-1) * time.Millisecond
	}
	ms := (observed - bound) / bound * float64(window) / float64(time.Millisecond)
	if ms >= 1<<31-1 {
		return time.Duration(1<<31-1) * time.Millisecond
	}
	return time.Duration(int64(ms+0.5)) * time.Millisecond
}
