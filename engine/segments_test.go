package engine

import (
	"os"
	"path/filepath"
	"testing"
)

// writeSegments fabricates a log of n segments of batchesPerSeg batches of
// recs records each, written straight to .log files (no indexes: the engine
// rebuilds them), as a fast stand-in for a long-lived log. With clean, the
// directory also gets the clean-shutdown marker.
func writeSegments(tb testing.TB, dir string, n, batchesPerSeg, recs int, clean bool) int64 {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	batch := testBatch(tb, recs, 20, 1000)
	var off int64
	buf := make([]byte, 0, batchesPerSeg*len(batch))
	for range n {
		base := off
		buf = buf[:0]
		for range batchesPerSeg {
			setBaseOffset(batch, off)
			buf = append(buf, batch...)
			off += int64(recs)
		}
		if err := os.WriteFile(segmentName(dir, base, logSuffix), buf, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	if clean {
		if err := writeCheckpoint(OSFS, filepath.Join(dir, recoveryPointFile), map[string]int64{filepath.Base(dir): off}); err != nil {
			tb.Fatal(err)
		}
		if err := writeCleanMarker(OSFS, dir); err != nil {
			tb.Fatal(err)
		}
	}
	return off
}

func openFDs(tb testing.TB) int {
	tb.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Fatal(err)
	}
	return len(ents)
}

// A log of 10,000 segments opens lazily, answers reads at every segment
// boundary, and keeps at most OpenSegments inactive segments open, far under
// a 20,000 descriptor limit.
func TestTenThousandSegments(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "big-0")
	const segs, perSeg, recs = 10000, 2, 3
	end := writeSegments(t, dir, segs, perSeg, recs, true)
	fdsBefore := openFDs(t)
	const limit = 300
	l := mustOpen(t, dir, Options{OpenSegments: limit})
	defer l.Close()
	if l.EndOffset() != end || len(l.SegmentBases()) != segs {
		t.Fatalf("end %d segments %d, want %d and %d", l.EndOffset(), len(l.SegmentBases()), end, segs)
	}
	perSegOffsets := int64(perSeg * recs)
	check := func(off int64) {
		v, err := l.Read(off, 1, end)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		b := viewBytes(t, &v)
		v.Release()
		h, err := checkStoredBatch(b)
		if err != nil || off < h.BaseOffset || off > h.LastOffset() {
			t.Fatalf("Read(%d) returned batch [%d, %d]: %v", off, h.BaseOffset, h.LastOffset(), err)
		}
	}
	for s := int64(0); s < segs; s++ {
		base := s * perSegOffsets
		check(base) // first offset of the segment
		check(base + perSegOffsets - 1)
		if s > 0 {
			check(base - 1) // last offset of the previous segment
		}
	}
	if n := l.cache.openCount(); n > limit {
		t.Fatalf("%d inactive segments open, limit %d", n, limit)
	}
	if fds := openFDs(t) - fdsBefore; fds > limit+10 {
		t.Fatalf("%d descriptors open for the log, want at most about %d", fds, limit)
	}
	// Appends continue at the end.
	res, err := l.Append(testBatch(t, 2, 5, 1))
	if err != nil || res.FirstOffset != end {
		t.Fatalf("append after open: %+v %v", res, err)
	}
}

// After an unclean stop with no recovery point, every segment is scanned.
func TestUncleanOpenScansAllSegments(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p-0")
	end := writeSegments(t, dir, 50, 20, 5, false)
	// Corrupt the middle of segment 30: it and everything after goes.
	base30 := int64(30 * 20 * 5)
	path := segmentName(dir, base30, logSuffix)
	data, _ := os.ReadFile(path)
	h, _ := ParseBatchHeader(data)
	pos := 7 * h.Size()
	data[pos+40] ^= 0xff
	os.WriteFile(path, data, 0o644)
	l := mustOpen(t, dir, Options{})
	defer l.Close()
	want := base30 + 7*5
	if l.EndOffset() != want {
		t.Fatalf("EndOffset %d, want %d (log had %d)", l.EndOffset(), want, end)
	}
	if got := l.SegmentBases(); got[len(got)-1] != base30 {
		t.Fatalf("last segment %d, want %d", got[len(got)-1], base30)
	}
	checkSequence(t, readAll(t, l, 0, 1<<20), 0, int(want))
}
