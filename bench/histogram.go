package bench

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// Histogram records durations in log-linear buckets: exact below 128 ns,
// then 64 buckets per power of two, so a reported quantile is within 1/64
// (1.6 %) of the true value. Recording is lock-free (atomic adds) and
// allocation-free, so producer callbacks and the consumer loop can share
// one histogram.
//
// Bucket index of a value v (in nanoseconds):
//
//	v < 128:  v
//	v >= 128: shift = bits.Len64(v) - 7 (so v>>shift is in [64, 128)),
//	          128 + (shift-1)*64 + (v>>shift - 64)
type Histogram struct {
	counts [histBuckets]atomic.Uint64
	n      atomic.Uint64
	sum    atomic.Uint64
	min    atomic.Uint64 // stored as value+1, 0 = unset
	max    atomic.Uint64
}

const (
	histSubBits = 7
	histSub     = 1 << histSubBits // 128: exact values below this
	histHalf    = histSub / 2      // 64 buckets per power of two
	histShifts  = 64 - histSubBits // shifts 1..57
	histBuckets = histSub + histShifts*histHalf
)

// bucketOf returns the bucket index of v.
func bucketOf(v uint64) int {
	if v < histSub {
		return int(v)
	}
	shift := bits.Len64(v) - histSubBits
	return histSub + (shift-1)*histHalf + int(v>>shift) - histHalf
}

// bucketRange returns the smallest and largest values of bucket i.
func bucketRange(i int) (lo, hi uint64) {
	if i < histSub {
		return uint64(i), uint64(i)
	}
	j := i - histSub
	shift := j/histHalf + 1
	top := uint64(j%histHalf + histHalf)
	lo = top << shift
	return lo, lo + (1 << shift) - 1
}

// Record adds one duration; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := uint64(max(d, 0))
	h.counts[bucketOf(v)].Add(1)
	h.n.Add(1)
	h.sum.Add(v)
	for {
		cur := h.max.Load()
		if v <= cur || h.max.CompareAndSwap(cur, v) {
			break
		}
	}
	for {
		cur := h.min.Load()
		if (cur != 0 && v+1 >= cur) || h.min.CompareAndSwap(cur, v+1) {
			break
		}
	}
}

// Count is the number of recorded durations.
func (h *Histogram) Count() int64 { return int64(h.n.Load()) }

// Max is the largest recorded duration (exact).
func (h *Histogram) Max() time.Duration { return time.Duration(h.max.Load()) }

// Min is the smallest recorded duration (exact), 0 when empty.
func (h *Histogram) Min() time.Duration {
	m := h.min.Load()
	if m == 0 {
		return 0
	}
	return time.Duration(m - 1)
}

// Mean is the average recorded duration (exact), 0 when empty.
func (h *Histogram) Mean() time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	return time.Duration(h.sum.Load() / n)
}

// Quantile returns the duration at or below which a fraction q (0 to 1) of
// the recorded durations lie: the value of the ceil(q*count)-th smallest,
// reported as the upper end of its bucket, clamped to the exact minimum
// and maximum (q <= 0 is the minimum). It is 0 when the histogram is
// empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	var counts [histBuckets]uint64
	var total uint64
	for i := range counts {
		counts[i] = h.counts[i].Load()
		total += counts[i]
	}
	if total == 0 {
		return 0
	}
	if q <= 0 {
		return h.Min()
	}
	rank := uint64(math.Ceil(q * float64(total)))
	rank = min(max(rank, 1), total)
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			_, hi := bucketRange(i)
			return min(max(time.Duration(hi), h.Min()), h.Max())
		}
	}
	return h.Max()
}

// Reset empties the histogram. It must not run concurrently with Record.
func (h *Histogram) Reset() {
	for i := range h.counts {
		h.counts[i].Store(0)
	}
	h.n.Store(0)
	h.sum.Store(0)
	h.min.Store(0)
	h.max.Store(0)
}
