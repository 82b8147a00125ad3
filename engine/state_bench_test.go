package engine

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writeTimedLog fabricates a log of about size bytes in segments of
// segBytes: batches of 10 records of 100 B, batch i stamped 1000*i ms.
// It returns the number of batches.
func writeTimedLog(tb testing.TB, dir string, size, segBytes int64) int64 {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	var bb BatchBuilder
	var off, i int64
	var buf []byte
	base := int64(0)
	flush := func() {
		if err := os.WriteFile(segmentName(dir, base, logSuffix), buf, 0o644); err != nil {
			tb.Fatal(err)
		}
		buf, base = buf[:0], off
	}
	for total := int64(0); total < size; i++ {
		bb.Reset()
		for j := range int64(10) {
			bb.Add(Record{Timestamp: 1000*i + j, Value: make([]byte, 100)})
		}
		b := bb.Build()
		setBaseOffset(b, off)
		buf = append(buf, b...)
		off += 10
		total += int64(len(b))
		if int64(len(buf)) >= segBytes {
			flush()
		}
	}
	if len(buf) > 0 {
		flush()
	}
	if err := writeCheckpoint(OSFS, filepath.Join(dir, recoveryPointFile), map[string]int64{filepath.Base(dir): off}); err != nil {
		tb.Fatal(err)
	}
	if err := writeCleanMarker(OSFS, dir); err != nil {
		tb.Fatal(err)
	}
	return i
}

// Timestamp lookup on a 1 GiB log: random targets, record-level answers.
func BenchmarkTimestampLookup1GiB(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "t-0")
	batches := writeTimedLog(b, dir, 1<<30, 64<<20)
	l := mustOpen(b, dir, Options{Retention: -1})
	defer l.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	for range 32 { // open every segment once (indexes rebuilt) outside the timing
		l.OffsetForTimestamp(rng.Int64N(batches * 1000))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ts := rng.Int64N(batches * 1000)
		off, _, err := l.OffsetForTimestamp(ts)
		if err != nil || off < 0 {
			b.Fatalf("lookup %d: %d %v", ts, off, err)
		}
	}
}

// A retention pass over a log of 10,000 segments: with nothing to delete,
// and deleting every segment.
func BenchmarkRetentionPass10kSegments(b *testing.B) {
	b.Run("nothing-expired", func(b *testing.B) {
		dir := filepath.Join(b.TempDir(), "r-0")
		writeSegments(b, dir, 10000, 2, 3, true)
		clock := &fakeClock{t: time.UnixMilli(1000)}
		l := mustOpen(b, dir, Options{Retention: time.Hour, RetentionBytes: 1 << 40, OpenSegments: 20000, Now: clock.now})
		defer l.Close()
		b.ResetTimer()
		for b.Loop() {
			if n, err := l.ApplyRetention(); err != nil || n != 0 {
				b.Fatalf("%d %v", n, err)
			}
		}
	})
	b.Run("all-expired", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			dir := filepath.Join(b.TempDir(), "r-0")
			writeSegments(b, dir, 10000, 2, 3, true)
			clock := &fakeClock{t: time.UnixMilli(1000)}
			l := mustOpen(b, dir, Options{Retention: time.Hour, Now: clock.now})
			clock.t = clock.t.Add(2 * time.Hour)
			b.StartTimer()
			if n, err := l.ApplyRetention(); err != nil || n != 10000 {
				b.Fatalf("%d %v", n, err)
			}
			b.StopTimer()
			l.Close()
			b.StartTimer()
		}
	})
}

// Producer-state rebuild at open: from a snapshot (written at close) versus
// from a scan of every batch header.
func BenchmarkProducerStateRebuild(b *testing.B) {
	for _, mode := range []string{"snapshot", "scan"} {
		b.Run(mode, func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "p-0")
			l := mustOpen(b, dir, Options{SegmentBytes: 8 << 20})
			// Timestamped now: producers idle past ProducerIDExpiration
			// are not loaded from a snapshot.
			batch := testBatch(b, 1, 50, time.Now().UnixMilli())
			binary.BigEndian.PutUint16(batch[offProducerEpoch:], 0)
			seqs := map[int64]int32{}
			for i := range 100_000 {
				pid := int64(i % 1000)
				binary.BigEndian.PutUint64(batch[offProducerID:], uint64(pid))
				binary.BigEndian.PutUint32(batch[offBaseSequence:], uint32(seqs[pid]))
				binary.BigEndian.PutUint32(batch[offCRC:], batchCRC(batch))
				seqs[pid]++
				if _, err := l.Append(batch); err != nil {
					b.Fatal(err)
				}
			}
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
			if mode == "scan" {
				snaps, _ := filepath.Glob(filepath.Join(dir, "*"+snapshotSuffix))
				for _, p := range snaps {
					os.Remove(p)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				l, err := OpenLog(dir, Options{SegmentBytes: 8 << 20})
				if err != nil {
					b.Fatal(err)
				}
				if n := len(l.producers.producers); n != 1000 {
					b.Fatalf("%d producers rebuilt", n)
				}
				b.StopTimer()
				if mode == "scan" { // keep measuring the scan: drop the close-time snapshot
					l.mu.Lock()
					l.producers = newProducerState()
					l.mu.Unlock()
				}
				l.Close()
				b.StartTimer()
			}
		})
	}
}
