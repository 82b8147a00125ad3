package bench

import (
	"sync"
	"testing"
	"time"
)

func TestBucketsCoverValues(t *testing.T) {
	check := func(v uint64) {
		i := bucketOf(v)
		if i < 0 || i >= histBuckets {
			t.Fatalf("value %d: bucket %d of %d", v, i, histBuckets)
		}
		lo, hi := bucketRange(i)
		if v < lo || v > hi {
			t.Fatalf("value %d in bucket %d = [%d, %d]", v, i, lo, hi)
		}
		if v >= histSub && float64(hi-lo+1)/float64(lo) > 1.0/histHalf+1e-12 {
			t.Fatalf("bucket %d = [%d, %d] is wider than 1/%d of its values", i, lo, hi, histHalf)
		}
	}
	for v := uint64(0); v < 100_000; v++ {
		check(v)
	}
	for v := uint64(100_000); v < 1<<62; v += v/2 + 7 {
		check(v)
	}
	check(1<<64 - 1)
	// Buckets are contiguous: each starts where the previous ended.
	_, prevHi := bucketRange(0)
	for i := 1; i < histBuckets; i++ {
		lo, hi := bucketRange(i)
		if lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, previous ended at %d", i, lo, prevHi)
		}
		prevHi = hi
	}
	if prevHi != 1<<64-1 {
		t.Fatalf("last bucket ends at %d", prevHi)
	}
}

func TestQuantiles(t *testing.T) {
	var h Histogram
	if h.Quantile(0.99) != 0 || h.Max() != 0 || h.Min() != 0 || h.Mean() != 0 || h.Count() != 0 {
		t.Fatal("empty histogram is not all zero")
	}
	// 1 µs .. 10,000 µs, once each.
	for i := 1; i <= 10_000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	within := func(name string, got, want time.Duration) {
		t.Helper()
		if d := float64(got-want) / float64(want); d < 0 || d > 1.0/histHalf {
			t.Errorf("%s = %v, want %v (to within 1/%d above)", name, got, want, histHalf)
		}
	}
	within("p50", h.Quantile(0.50), 5000*time.Microsecond)
	within("p99", h.Quantile(0.99), 9900*time.Microsecond)
	within("p99.9", h.Quantile(0.999), 9990*time.Microsecond)
	if got := h.Quantile(1); got != 10*time.Millisecond {
		t.Errorf("p100 = %v, want the exact max", got)
	}
	if got := h.Quantile(0); got != time.Microsecond {
		t.Errorf("p0 = %v, want the exact min", got)
	}
	if h.Max() != 10*time.Millisecond || h.Min() != time.Microsecond || h.Count() != 10_000 {
		t.Errorf("max %v min %v count %d", h.Max(), h.Min(), h.Count())
	}
	if want := 5000500 * time.Nanosecond; h.Mean() != want {
		t.Errorf("mean %v, want %v", h.Mean(), want)
	}
	h.Record(-time.Second) // counts as 0
	if h.Min() != 0 || h.Count() != 10_001 {
		t.Errorf("after a negative duration: min %v count %d", h.Min(), h.Count())
	}
	h.Reset()
	if h.Count() != 0 || h.Quantile(0.5) != 0 || h.Max() != 0 {
		t.Error("Reset left values")
	}
}

func TestHistogramConcurrent(t *testing.T) {
	var h Histogram
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10_000 {
				h.Record(time.Duration(g*10_000+i+1) * time.Nanosecond)
			}
		}()
	}
	wg.Wait()
	if h.Count() != 40_000 || h.Max() != 40_000 || h.Min() != 1 {
		t.Fatalf("count %d max %v min %v", h.Count(), h.Max(), h.Min())
	}
}
