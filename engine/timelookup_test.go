package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// tsRec is a record of the reference model: its offset and the timestamp a
// consumer sees.
type tsRec struct{ off, ts int64 }

// tsLog is a log under test with the model of what it holds.
type tsLog struct {
	t    *testing.T
	l    *Log
	recs []tsRec
}

func newTSLog(t *testing.T, dir string, opts Options) *tsLog {
	t.Helper()
	return &tsLog{t: t, l: mustOpen(t, dir, opts)}
}

// append writes one batch of records with timestamps tss, compressed with
// c. logAppendTime >= 0 makes it a LogAppendTime batch with that max
// timestamp, which every record then carries.
func (tl *tsLog) append(c Compression, logAppendTime int64, tss ...int64) AppendResult {
	tl.t.Helper()
	var bb BatchBuilder
	for i, ts := range tss {
		bb.Add(Record{Timestamp: ts, Key: fmt.Appendf(nil, "k%d", i), Value: bytes.Repeat([]byte{'v'}, 20+i%7)})
	}
	b, err := bb.BuildCompressed(c)
	if err != nil {
		tl.t.Fatal(err)
	}
	if logAppendTime >= 0 {
		binary.BigEndian.PutUint16(b[offAttributes:], binary.BigEndian.Uint16(b[offAttributes:])|attrLogAppendTime)
		binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(logAppendTime))
		fixCRC(b)
	}
	res, err := tl.l.Append(b)
	if err != nil {
		tl.t.Fatal(err)
	}
	for i, ts := range tss {
		if logAppendTime >= 0 {
			ts = logAppendTime
		}
		tl.recs = append(tl.recs, tsRec{res.FirstOffset + int64(i), ts})
	}
	return res
}

// wantForTimestamp is the model's answer: the first record in offset order
// at or after start with timestamp >= ts.
func (tl *tsLog) wantForTimestamp(ts, start int64) (int64, int64) {
	for _, r := range tl.recs {
		if r.off >= start && r.ts >= ts {
			return r.off, r.ts
		}
	}
	return -1, -1
}

// wantMax is the model's MAX_TIMESTAMP answer: the first record with the
// largest timestamp among the segments not wholly below start.
func (tl *tsLog) wantMax(start int64) (int64, int64) {
	bases := tl.l.SegmentBases()
	lo := bases[0]
	for _, b := range bases {
		if b <= start {
			lo = b
		}
	}
	off, best := int64(-1), int64(-1)
	for _, r := range tl.recs {
		if r.off >= lo && (off < 0 || r.ts > best) {
			off, best = r.off, r.ts
		}
	}
	return off, best
}

func (tl *tsLog) check(ts int64) {
	tl.t.Helper()
	wo, wt := tl.wantForTimestamp(ts, tl.l.StartOffset())
	o, got, err := tl.l.OffsetForTimestamp(ts)
	if err != nil || o != wo || got != wt {
		tl.t.Fatalf("OffsetForTimestamp(%d) = %d, %d, %v; want %d, %d", ts, o, got, err, wo, wt)
	}
}

func (tl *tsLog) checkMax() {
	tl.t.Helper()
	wo, wt := tl.wantMax(tl.l.StartOffset())
	o, got, err := tl.l.MaxTimestampOffset()
	if err != nil || o != wo || got != wt {
		tl.t.Fatalf("MaxTimestampOffset() = %d, %d, %v; want %d, %d", o, got, err, wo, wt)
	}
}

// checkAll checks every timestamp the log holds, one below and one above
// each, and the max.
func (tl *tsLog) checkAll() {
	tl.t.Helper()
	seen := map[int64]bool{}
	for _, r := range tl.recs {
		for _, ts := range []int64{r.ts - 1, r.ts, r.ts + 1} {
			if !seen[ts] {
				seen[ts] = true
				tl.check(ts)
			}
		}
	}
	tl.check(-1 << 40)
	tl.check(1 << 60)
	tl.checkMax()
}

func TestOffsetForTimestampEmptyLog(t *testing.T) {
	tl := newTSLog(t, t.TempDir(), Options{})
	defer tl.l.Close()
	for _, ts := range []int64{-5, 0, 1_700_000_000_000} {
		if o, got, err := tl.l.OffsetForTimestamp(ts); o != -1 || got != -1 || err != nil {
			t.Fatalf("empty log: %d, %d, %v", o, got, err)
		}
	}
	if o, got, err := tl.l.MaxTimestampOffset(); o != -1 || got != -1 || err != nil {
		t.Fatalf("empty log max: %d, %d, %v", o, got, err)
	}
}

func TestOffsetForTimestampCases(t *testing.T) {
	for _, c := range append([]Compression{CompressionNone}, codecs...) {
		t.Run(c.String(), func(t *testing.T) {
			tl := newTSLog(t, t.TempDir(), Options{SegmentBytes: 400, IndexIntervalBytes: 100})
			defer tl.l.Close()
			tl.append(c, -1, 1000, 1001, 1002)          // 0-2
			tl.append(c, -1, 1010, 1005, 1020, 1015)    // 3-6: not monotonic inside the batch
			tl.append(c, 2000, 1, 2, 3)                 // 7-9: LogAppendTime: all 2000
			tl.append(c, -1, 1500, 1500)                // 10-11: older than the previous batch's max
			tl.append(c, -1, 3000)                      // 12
			tl.append(c, -1, 2999, 3000, 3001, 3000, 5) // 13-17: a tie with 12 and a later max
			if tl.l.segmentCount() < 2 {
				t.Fatalf("%d segments: the test wants several", tl.l.segmentCount())
			}
			for _, tc := range []struct{ ts, off, got int64 }{
				{0, 0, 1000},        // before the first record
				{1000, 0, 1000},     // exactly the first
				{1003, 3, 1010},     // between batches
				{1006, 3, 1010},     // first in offset order, not the smallest >= target
				{1011, 5, 1020},     // skips 1005 inside the batch
				{1016, 5, 1020},     // 1015 comes after 1020 in offset order
				{1021, 7, 2000},     // a LogAppendTime batch: its first record
				{1499, 7, 2000},     // 1500 (10) comes later in offset order
				{2001, 12, 3000},    // the next segment(s)
				{3001, 15, 3001},    // the middle of the last batch
				{3002, -1, -1},      // after the last: none
				{-1 << 40, 0, 1000}, // very old
			} {
				o, got, err := tl.l.OffsetForTimestamp(tc.ts)
				if err != nil || o != tc.off || got != tc.got {
					t.Errorf("OffsetForTimestamp(%d) = %d, %d, %v; want %d, %d", tc.ts, o, got, err, tc.off, tc.got)
				}
			}
			if o, got, err := tl.l.MaxTimestampOffset(); err != nil || o != 15 || got != 3001 {
				t.Errorf("MaxTimestampOffset() = %d, %d, %v; want 15, 3001", o, got, err)
			}
			tl.checkAll()
		})
	}
}

func TestMaxTimestampTiesAndLogAppendTime(t *testing.T) {
	tl := newTSLog(t, t.TempDir(), Options{SegmentBytes: 600, IndexIntervalBytes: 100})
	defer tl.l.Close()
	tl.append(CompressionNone, -1, 10, 20)
	tl.append(CompressionLZ4, 500, 1, 2, 3) // LogAppendTime 500 at offsets 2-4
	tl.append(CompressionNone, -1, 499)
	tl.append(CompressionZstd, -1, 500, 500) // ties with the LogAppendTime batch, later
	for range 5 {
		tl.append(CompressionGzip, -1, 100, 200)
	}
	if o, ts, err := tl.l.MaxTimestampOffset(); err != nil || o != 2 || ts != 500 {
		t.Fatalf("MaxTimestampOffset() = %d, %d, %v; want 2, 500", o, ts, err)
	}
	tl.checkAll()

	// A tie in a later segment does not win either.
	if err := tl.l.Roll(); err != nil {
		t.Fatal(err)
	}
	tl.append(CompressionNone, 500, 7)
	if o, ts, err := tl.l.MaxTimestampOffset(); err != nil || o != 2 || ts != 500 {
		t.Fatalf("MaxTimestampOffset() = %d, %d, %v; want 2, 500", o, ts, err)
	}
	tl.append(CompressionSnappy, -1, 501, 300)
	tl.checkAll()
}

// TestOffsetForTimestampRandom compares the lookups with the model on logs
// of many small segments and a dense index: random timestamps (mostly
// increasing, with jitter and outliers), codecs and LogAppendTime batches;
// before and after reopening (clean, then with the sealed segments' indexes
// deleted so they are rebuilt without a final time-index entry), and after
// the log start offset moves into a segment.
func TestOffsetForTimestampRandom(t *testing.T) {
	for seed := range uint64(2) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			dir := t.TempDir()
			opts := Options{SegmentBytes: 2 << 10, IndexIntervalBytes: 150}
			tl := newTSLog(t, dir, opts)
			clock := int64(1_700_000_000_000)
			all := append([]Compression{CompressionNone, CompressionNone}, codecs...)
			for range 120 {
				n := 1 + rng.IntN(6)
				tss := make([]int64, n)
				for i := range tss {
					clock += int64(rng.IntN(5))
					tss[i] = clock + int64(rng.IntN(11)) - 5
					if rng.IntN(40) == 0 {
						tss[i] = clock - 1000 // a late record
					}
				}
				lat := int64(-1)
				if rng.IntN(8) == 0 {
					lat = clock + int64(rng.IntN(3))
				}
				tl.append(all[rng.IntN(len(all))], lat, tss...)
			}
			if tl.l.segmentCount() < 5 {
				t.Fatalf("only %d segments", tl.l.segmentCount())
			}
			tl.checkAll()

			if err := tl.l.Close(); err != nil {
				t.Fatal(err)
			}
			tl.l = mustOpen(t, dir, opts)
			tl.checkAll()

			// Rebuilt indexes carry no final time-index entry.
			bases := tl.l.SegmentBases()
			if err := tl.l.Close(); err != nil {
				t.Fatal(err)
			}
			for _, b := range bases[:len(bases)-1] {
				for _, suf := range []string{indexSuffix, timeIndexSuffix} {
					if err := os.Remove(segmentName(dir, b, suf)); err != nil {
						t.Fatal(err)
					}
				}
			}
			tl.l = mustOpen(t, dir, opts)
			tl.checkAll()

			// The log start offset inside a segment.
			mid := tl.recs[len(tl.recs)/2].off + 1
			if _, err := tl.l.DeleteRecordsBefore(mid); err != nil {
				t.Fatal(err)
			}
			tl.checkAll()
			if err := tl.l.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestOffsetForTimestampControlRecords(t *testing.T) {
	tl := newTSLog(t, t.TempDir(), Options{})
	defer tl.l.Close()
	tl.append(CompressionNone, -1, 100, 200)
	// A transaction marker at offset 2 with timestamp 300, as a follower
	// copies it; Kafka's lookups iterate control records too.
	control := rawBatch(1, 0, frame(rawBody(0, "\x00\x00\x00\x00", "\x00\x00\x00\x00\x00\x00", 0), 0))
	setBaseOffset(control, 2)
	binary.BigEndian.PutUint64(control[offBaseTimestamp:], 300)
	binary.BigEndian.PutUint64(control[offMaxTimestamp:], 300)
	control[offAttributes+1] |= attrControl | attrTransactional
	fixCRC(control)
	if _, err := tl.l.AppendReplicated(control); err != nil {
		t.Fatal(err)
	}
	tl.recs = append(tl.recs, tsRec{2, 300})
	tl.append(CompressionNone, -1, 400)
	tl.checkAll()
	if o, ts, _ := tl.l.OffsetForTimestamp(250); o != 2 || ts != 300 {
		t.Fatalf("got %d, %d; want the marker at 2", o, ts)
	}
}

func TestOffsetForTimestampClosed(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{})
	l.Close()
	if _, _, err := l.OffsetForTimestamp(0); err != ErrClosed {
		t.Fatalf("err %v", err)
	}
	if _, _, err := l.MaxTimestampOffset(); err != ErrClosed {
		t.Fatalf("err %v", err)
	}
}

// TestOffsetForTimestampConcurrentAppends runs lookups while batches are
// appended and segments roll: a lookup never fails, never returns a record
// that was not appended, and finds every record appended before it began.
func TestOffsetForTimestampConcurrentAppends(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{SegmentBytes: 4 << 10, IndexIntervalBytes: 200})
	defer l.Close()
	const batches = 400
	var done atomic.Int64 // batches fully appended; batch i holds offsets [2i, 2i+2) at timestamps 10i, 10i+5
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var bb BatchBuilder
		for i := range int64(batches) {
			bb.Reset()
			bb.Add(Record{Timestamp: 10 * i, Value: []byte("a")})
			bb.Add(Record{Timestamp: 10*i + 5, Value: []byte("b")})
			c := codecs[i%int64(len(codecs))]
			b, _ := bb.BuildCompressed(c)
			if _, err := l.Append(b); err != nil {
				t.Error(err)
				return
			}
			done.Store(i + 1)
		}
	}()
	rng := rand.New(rand.NewPCG(1, 2))
	for done.Load() < batches {
		n := done.Load()
		if n == 0 {
			continue
		}
		i := rng.Int64N(n)
		o, ts, err := l.OffsetForTimestamp(10*i + 1)
		if err != nil || o != 2*i+1 || ts != 10*i+5 {
			t.Fatalf("OffsetForTimestamp(%d) with %d batches appended = %d, %d, %v; want %d", 10*i+1, n, o, ts, err, 2*i+1)
		}
		o, ts, err = l.MaxTimestampOffset()
		if err != nil || o < 2*n-1 || ts != (o-1)/2*10+5 || o%2 != 1 {
			t.Fatalf("MaxTimestampOffset() with %d batches = %d, %d, %v", n, o, ts, err)
		}
	}
	wg.Wait()
}

func TestTimestampLookupAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	tl := newTSLog(t, t.TempDir(), Options{SegmentBytes: 1 << 20, IndexIntervalBytes: 256})
	defer tl.l.Close()
	for i := range int64(200) {
		tl.append(codecs[i%4], -1, 100*i, 100*i+50)
	}
	tl.l.OffsetForTimestamp(0) // warm the pools
	allocs := testing.AllocsPerRun(50, func() {
		if o, _, err := tl.l.OffsetForTimestamp(100*150 + 10); err != nil || o != 301 {
			t.Fatalf("%d, %v", o, err)
		}
	})
	// Header windows and scratch are pooled; what is left is per lookup,
	// not per record or batch.
	if allocs > 4 {
		t.Fatalf("a lookup allocates %.1f times", allocs)
	}
}

func BenchmarkOffsetForTimestamp(b *testing.B) {
	l := mustOpen(b, b.TempDir(), Options{SegmentBytes: 1 << 20})
	defer l.Close()
	var bb BatchBuilder
	for i := range int64(5000) {
		bb.Reset()
		for j := range int64(10) {
			bb.Add(Record{Timestamp: 1000*i + j, Value: bytes.Repeat([]byte{'x'}, 100)})
		}
		batch, _ := bb.BuildCompressed(CompressionLZ4)
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
	targets := slices.Collect(func(yield func(int64) bool) {
		for i := range int64(64) {
			if !yield(i * 77 * 1000) {
				return
			}
		}
	})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, _, err := l.OffsetForTimestamp(targets[i%len(targets)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
