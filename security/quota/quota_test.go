package quota

import (
	"math"
	"testing"
	"time"
)

const sec = int64(time.Second)

// A first burst is measured over Samples-1 windows, so 1000 bytes at once
// read as 100 B/s with the defaults; later the span since the oldest sample
// counts, and obsolete samples drop out.
func TestRateMeasure(t *testing.T) {
	r := NewRate(Config{})
	r.Record(1000, 0)
	if got := r.Measure(0); got != 100 {
		t.Fatalf("rate after a burst = %v, want 100", got)
	}
	// 15 s later the one sample is 15 s old (>= 11 windows): obsolete.
	if got := r.Measure(15 * sec); got != 0 {
		t.Fatalf("rate after 15 s = %v, want 0", got)
	}
	// A steady 500 B every 100 ms for 20 s measures 5000 B/s.
	r = NewRate(Config{})
	var now int64
	for i := 0; i < 200; i++ {
		r.Record(500, now)
		now += sec / 10
	}
	if got := r.Measure(now); math.Abs(got-5000) > 5000*0.06 {
		t.Fatalf("steady rate = %v, want about 5000", got)
	}
	if ws := r.WindowSize(now); ws < 10*sec || ws > 12*sec {
		t.Fatalf("window size %v, want 10-12 s", time.Duration(ws))
	}
}

func TestThrottleTime(t *testing.T) {
	for _, c := range []struct {
		observed, bound float64
		window          int64
		want            time.Duration
	}{
		{2000, 1000, 10 * sec, 10 * time.Second},
		{1000, 1000, 10 * sec, 0},
		{999, 1000, 10 * sec, 0},
		{1100, 1000, 10 * sec, time.Second},
		{1000.06, 1000, 10 * sec, time.Millisecond}, // 0.6 ms rounds to 1, as Math.round
		{1000.04, 1000, 10 * sec, 0},
		{1, 0, 10 * sec, (1<<31 - 1) * time.Millisecond},
	} {
		if got := ThrottleTime(c.observed, c.bound, c.window); got != c.want {
			t.Errorf("ThrottleTime(%v, %v, %v) = %v, want %v", c.observed, c.bound, time.Duration(c.window), got, c.want)
		}
	}
}

// Kafka's eight levels, each shadowed by the one above it.
func TestPrecedence(t *testing.T) {
	m := NewManager(Config{})
	levels := []Entity{
		{"u", "c"}, {"u", Default}, {"u", ""}, {Default, "c"},
		{Default, Default}, {Default, ""}, {"", "c"}, {"", Default},
	}
	if _, ok := m.Quota(ProducerByteRate, "u", "c"); ok {
		t.Fatal("a quota with none set")
	}
	for i := len(levels) - 1; i >= 0; i-- {
		m.Set(ProducerByteRate, levels[i], float64(i+1), true)
		if got, ok := m.Quota(ProducerByteRate, "u", "c"); !ok || got != float64(i+1) {
			t.Fatalf("with levels %d..8 set: quota %v %v, want level %d's", i+1, got, ok, i+1)
		}
	}
	// Others fall to their own levels: another user with client c gets
	// (<default>, c); another client of u gets (u, <default>).
	if got, _ := m.Quota(ProducerByteRate, "v", "c"); got != 4 {
		t.Errorf("user v client c: %v, want 4", got)
	}
	if got, _ := m.Quota(ProducerByteRate, "u", "d"); got != 2 {
		t.Errorf("user u client d: %v, want 2", got)
	}
	// Removing levels uncovers the next.
	for i := 0; i < len(levels); i++ {
		m.Set(ProducerByteRate, levels[i], 0, false)
		got, ok := m.Quota(ProducerByteRate, "u", "c")
		if i == len(levels)-1 {
			if ok {
				t.Fatalf("all removed: quota %v", got)
			}
		} else if !ok || got != float64(i+2) {
			t.Fatalf("levels 1..%d removed: quota %v %v, want %d", i+1, got, ok, i+2)
		}
	}
	// Types are separate.
	m.Set(ConsumerByteRate, Entity{"u", ""}, 7, true)
	if _, ok := m.Quota(ProducerByteRate, "u", "c"); ok {
		t.Error("a consumer quota applied to produce")
	}
}

// Clients of one client-id quota share its rate; with a user quota each
// user has its own.
func TestSharedRate(t *testing.T) {
	m := NewManager(Config{})
	m.Set(ProducerByteRate, Entity{"", "c"}, 1000, true)
	var a, b Client
	m.Resolve(&a, "alice", "c", 0)
	m.Resolve(&b, "bob", "c", 0)
	if m.Record(&a, ProducerByteRate, 10000, 0) != 0 {
		t.Fatal("throttled at the bound")
	}
	if d := m.Record(&b, ProducerByteRate, 10000, 0); d != 10*time.Second {
		t.Fatalf("second client of the shared rate: throttle %v, want 10s", d)
	}
	m.Set(ProducerByteRate, Entity{"bob", ""}, 1000, true)
	m.Resolve(&b, "bob", "c", 0)
	if d := m.Record(&b, ProducerByteRate, 10000, 0); d != 0 {
		t.Fatalf("bob's own rate: throttle %v, want 0", d)
	}
}

// Produce bytes over the bound throttle by Kafka's formula; removing the
// quota lifts it; request time is capped at one window.
func TestRecordThrottle(t *testing.T) {
	m := NewManager(Config{})
	var c Client
	m.Resolve(&c, "u", "c", 0)
	if d := m.Record(&c, ProducerByteRate, 1e9, 0); d != 0 || c.Limited(ProducerByteRate) {
		t.Fatalf("no quota: throttle %v", d)
	}
	m.Set(ProducerByteRate, Entity{"u", "c"}, 1000, true)
	m.Resolve(&c, "u", "c", 0)
	if d := m.Record(&c, ProducerByteRate, 20000, 0); d != 10*time.Second {
		t.Fatalf("2x the bound: throttle %v, want 10s", d)
	}
	m.Unrecord(&c, ProducerByteRate, 20000, 0)
	if d := m.Record(&c, ProducerByteRate, 0, 0); d != 0 {
		t.Fatalf("after unrecord: throttle %v", d)
	}
	if got := m.MaxInWindow(&c, ProducerByteRate); got != 10000 {
		t.Fatalf("MaxInWindow %v, want 10000", got)
	}
	m.Set(ProducerByteRate, Entity{"u", "c"}, 0, false)
	if d := m.Record(&c, ProducerByteRate, 1e9, 0); d != 0 { // stale client: bound lifted at once
		t.Fatalf("removed quota still throttles: %v", d)
	}
	m.Set(RequestPercentage, Entity{"u", ""}, 1, true)
	m.Resolve(&c, "u", "c", 0)
	if d := m.Record(&c, RequestPercentage, float64(5*sec)*NanosToPercent, 0); d != time.Second {
		t.Fatalf("request time far over: throttle %v, want the 1 s cap", d)
	}
}

func TestSweep(t *testing.T) {
	m := NewManager(Config{})
	m.Set(ProducerByteRate, Entity{"", Default}, 1000, true)
	var c, d Client
	m.Resolve(&c, "u", "c", 0)
	m.Record(&c, ProducerByteRate, 5000, 0)
	m.Resolve(&d, "u", "other", 2*int64(time.Hour))
	m.mu.Lock()
	n := len(m.mu.rates)
	m.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d rates after an idle hour, want 1 (the new one)", n)
	}
}

// The per-request path: resolve (unchanged) and record, no allocation.
func BenchmarkRecord(b *testing.B) {
	m := NewManager(Config{})
	m.Set(ProducerByteRate, Entity{"", "c"}, 1<<20, true)
	m.Set(RequestPercentage, Entity{"", "c"}, 50, true)
	var c Client
	user, id := "ANONYMOUS", "c"
	b.ReportAllocs()
	now := int64(0)
	for i := 0; i < b.N; i++ {
		now += 1000
		m.Resolve(&c, user, id, now)
		m.Record(&c, ProducerByteRate, 1000, now)
		m.Record(&c, RequestPercentage, 1000*NanosToPercent, now)
	}
}

func TestRecordAllocs(t *testing.T) {
	m := NewManager(Config{})
	m.Set(ProducerByteRate, Entity{"", "c"}, 1<<20, true)
	var c Client
	m.Resolve(&c, "u", "c", 0)
	now := int64(0)
	if n := testing.AllocsPerRun(1000, func() {
		now += int64(time.Millisecond)
		m.Resolve(&c, "u", "c", now)
		m.Record(&c, ProducerByteRate, 1000, now)
	}); n != 0 {
		t.Fatalf("%v allocations per request", n)
	}
}
