package quota

import (
	"math"
	"testing"
	"time"
)

// The meter is Kafka's SimpleRate over sampled windows: bytes over the
// time since the oldest sample began, at least one window; samples a ring
// old are dropped.
func TestRateMeter(t *testing.T) {
	m := newRateMeter(11, time.Second)
	if r := m.rate(0); r != 0 {
		t.Fatalf("empty meter: rate %v, want 0", r)
	}
	if d := m.over(0, 0); d != 0 {
		t.Fatalf("empty meter over a bound of 0 for %v, want not over", d)
	}
	// The first window counts as a whole one: 1000 bytes at once are
	// 1000 B/s, at the bound and not above it.
	m.record(0, 1000)
	if r := m.rate(0); r != 1000 {
		t.Fatalf("1000 bytes at 0: rate %v, want 1000", r)
	}
	if d := m.over(0, 1000); d != 0 {
		t.Fatalf("1000 B/s against a bound of 1000: over for %v, want not over", d)
	}
	m.record(sec/2, 1) // the same sample
	if d, want := m.over(sec/2, 1000), time.Duration(1001*time.Millisecond-500*time.Millisecond); d != want {
		t.Fatalf("1001 bytes since 0 at 0.5 s against 1000 B/s: over for %v, want %v (until 1.001 s)", d, want)
	}
	if d := m.over(1001*sec/1000, 1000); d != 0 {
		t.Fatalf("at 1.001 s: over for %v, want not over", d)
	}
	// A steady 1000 B each second: the ring keeps 11 samples, begun 10 s
	// apart at most, so the rate reads 11000 / 10 s.
	for s := int64(1); s <= 20; s++ {
		m.record(s*sec, 1000)
	}
	if r := m.rate(20 * sec); r != 1100 {
		t.Fatalf("steady 1000 B/s at 20 s: rate %v, want 1100", r)
	}
	// Idle a whole ring: nothing is left.
	if r := m.rate(31 * sec); r != 0 {
		t.Fatalf("11 s idle: rate %v, want 0", r)
	}
}

// With a bound of 0 nothing is allowed while any sample is kept: over
// lasts until the oldest one leaves the ring, not forever.
func TestRateMeterZeroBound(t *testing.T) {
	m := newRateMeter(3, time.Second)
	m.record(0, 1)
	m.record(2*sec, 1)
	if d := m.over(sec, 0); d != 2*time.Second {
		t.Fatalf("bound 0: over for %v at 1 s, want 2 s (the first sample leaves at 3 s)", d)
	}
	if d := m.over(3*sec, 0); d != 2*time.Second {
		t.Fatalf("bound 0: over for %v at 3 s, want 2 s (the second sample leaves at 5 s)", d)
	}
	if d := m.over(5*sec, 0); d != 0 {
		t.Fatalf("bound 0, every sample gone: over for %v, want not over", d)
	}
	if d := m.over(5*sec, math.MaxInt64); d != 0 {
		t.Fatalf("no bound: over for %v", d)
	}
}

// A copier that takes a chunk whenever the meter allows and otherwise
// waits as long as over says (the leader's and the follower's loops)
// copies at the bound: 5 MiB at 1 MiB/s in 64 KiB chunks takes 5 s less
// the first chunk, never less, with 11 windows of 1 s as Kafka's defaults.
func TestRateMeterPacesACopier(t *testing.T) {
	for _, chunk := range []int64{64 << 10, 256 << 10, 1 << 20} {
		m := newRateMeter(11, time.Second)
		const total, bound = 5 << 20, 1 << 20
		var now, copied int64
		waits := 0
		for copied < total {
			if d := m.over(now, bound); d > 0 {
				now += int64(d)
				waits++
				continue
			}
			n := min(chunk, total-copied)
			m.record(now, n)
			copied += n
		}
		// The last chunk leaves at once: the time is that of the rest.
		want := time.Duration(float64(total-chunk) / bound * float64(time.Second))
		if got := time.Duration(now); got < want-time.Millisecond || got > want+10*time.Millisecond {
			t.Errorf("chunk %d: 5 MiB at 1 MiB/s took %v, want %v", chunk, got, want)
		}
		if waits > int(total/chunk)+1 {
			t.Errorf("chunk %d: %d waits for %d chunks: over's waits are too short", chunk, waits, total/chunk)
		}
	}
}

// A quota reads its clock through the seam, and its bound as set.
func TestReplication(t *testing.T) {
	q := NewReplication(11, time.Second)
	var clock int64
	q.clock = func() int64 { return clock }
	q.Record(10 << 20)
	if d := q.Exceeded(); d != 0 {
		t.Fatalf("no bound: exceeded for %v", d)
	}
	q.SetBound(1 << 20)
	if d := q.Exceeded(); d != 10*time.Second {
		t.Fatalf("10 MiB at 0 against 1 MiB/s: exceeded for %v, want 10 s", d)
	}
	clock = 4 * sec
	if d := q.Exceeded(); d != 6*time.Second {
		t.Fatalf("at 4 s: exceeded for %v, want 6 s", d)
	}
	q.SetBound(math.MaxInt64)
	if d := q.Exceeded(); d != 0 {
		t.Fatalf("bound removed: exceeded for %v", d)
	}
}
