package engine

import (
	"encoding/binary"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

func TestFloorSearch(t *testing.T) {
	// keys 10, 20, ..., n*10; floor(k) is the last index with key <= k.
	for _, n := range []int64{0, 1, 2, 7, 100, 1025, 3000} {
		for _, warm := range []int64{0, 1, 4, 1024} {
			for _, k := range []int64{-5, 0, 9, 10, 11, 55, 10 * n / 2, 10*n - 1, 10 * n, 10*n + 1, 1 << 40} {
				got := floorSearch(n, warm, func(i int64) bool { return (i+1)*10 > k })
				want := min(max(k/10-1, -1), n-1)
				if k < 10 {
					want = -1
				}
				if got != want {
					t.Fatalf("n=%d warm=%d k=%d: got %d want %d", n, warm, k, got, want)
				}
			}
		}
	}
}

func TestIndexAppendLookupGrowTrim(t *testing.T) {
	dir := t.TempDir()
	const maxBytes = 64 << 10
	ix, err := openIndexFile(OSFS, filepath.Join(dir, "i.index"), offsetIndexEntrySize, maxBytes, true)
	if err != nil {
		t.Fatal(err)
	}
	oi := &offsetIndex{ix}
	tx, err := openIndexFile(OSFS, filepath.Join(dir, "i.timeindex"), timeIndexEntrySize, maxBytes, true)
	if err != nil {
		t.Fatal(err)
	}
	ti := &timeIndex{tx}
	n := int64(0)
	for !oi.full() {
		if err := oi.append(uint32(n*3+1), n*100); err != nil {
			t.Fatal(err)
		}
		if !ti.full() {
			if err := ti.maybeAppend(1000+n*2, uint32(n*3+2)); err != nil {
				t.Fatal(err)
			}
		}
		n++
	}
	if n != maxBytes/offsetIndexEntrySize {
		t.Fatalf("index took %d entries, want %d", n, maxBytes/offsetIndexEntrySize)
	}
	if ix.allocated < n*offsetIndexEntrySize || ix.allocated > maxBytes {
		t.Fatalf("allocated %d bytes for %d entries", ix.allocated, n)
	}
	// Lookups at and around every kind of boundary: before the first entry,
	// on entries, between them, in the warm tail and in the cold head.
	for _, c := range []struct {
		rel     uint32
		wantRel uint32
		wantPos int64
	}{
		{0, 0, 0}, {1, 1, 0}, {2, 1, 0}, {3, 1, 0}, {4, 4, 100},
		{uint32(n*3 - 2), uint32(n*3 - 2), (n - 1) * 100},
		{uint32(n * 3), uint32(n*3 - 2), (n - 1) * 100},
		{uint32((n - 1024) * 3), uint32((n-1024)*3 - 2), (n - 1025) * 100},
		{uint32((n-1024)*3 + 1), uint32((n-1024)*3 + 1), (n - 1024) * 100},
	} {
		r, p := oi.lookup(c.rel)
		if r != c.wantRel || p != c.wantPos {
			t.Fatalf("lookup(%d) = (%d, %d), want (%d, %d)", c.rel, r, p, c.wantRel, c.wantPos)
		}
	}
	if r, p := oi.lookupPosition(150); r != 4 || p != 100 {
		t.Fatalf("lookupPosition(150) = (%d, %d)", r, p)
	}
	if _, _, ok := ti.lookup(999); ok {
		t.Fatal("time lookup before the first entry found one")
	}
	if ts, r, ok := ti.lookup(1003); !ok || ts != 1002 || r != 5 {
		t.Fatalf("time lookup(1003) = %d %d %v", ts, r, ok)
	}
	if err := ti.maybeAppend(5, 99); err != nil || ti.lastTimestamp() == 5 {
		t.Fatal("time index took an older timestamp")
	}

	oi.truncateToPosition(250) // keeps positions 0, 100, 200
	if oi.count() != 3 {
		t.Fatalf("after truncateToPosition(250): %d entries", oi.count())
	}
	if err := oi.close(true); err != nil {
		t.Fatal(err)
	}
	ro, err := openIndexFile(OSFS, filepath.Join(dir, "i.index"), offsetIndexEntrySize, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	roi := &offsetIndex{ro}
	defer roi.close(false)
	if roi.count() != 3 || roi.sanityCheck(1000) != nil {
		t.Fatalf("reopened trimmed index: %d entries, check %v", roi.count(), roi.sanityCheck(1000))
	}
	if roi.sanityCheck(150) == nil {
		t.Fatal("sanity check passed an index pointing past the log")
	}
	ti.close(true)
}

// A lookup reads only the span the index bounds its batch to, but the span
// is a hint: with entries whose positions are wrong (too early, so that
// spans are a single header, or naming no batch) every offset is still found.
func TestLookupSpanIsOnlyAHint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p-0")
	const perSeg, recs = 200, 10
	end := writeSegments(t, dir, 2, perSeg, recs, true)
	l := mustOpen(t, dir, Options{})
	checkSequence(t, readAll(t, l, 0, 1<<20), 0, int(end)) // builds the indexes
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	path := segmentName(dir, 0, indexSuffix)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := len(b) / offsetIndexEntrySize
	if n < 4 {
		t.Fatalf("index has %d entries, want several", n)
	}
	for i := 1; i < n-1; i += 2 {
		prev := binary.BigEndian.Uint32(b[(i-1)*offsetIndexEntrySize+4:])
		binary.BigEndian.PutUint32(b[i*offsetIndexEntrySize+4:], prev+uint32(i%4)) // at or just past the previous entry
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, dir, Options{Logger: slog.New(slog.DiscardHandler)})
	defer l.Close()
	for off := int64(0); off < end; off++ {
		v, err := l.Read(off, 1, end)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		h, err := checkStoredBatch(viewBytes(t, &v))
		v.Release()
		if err != nil || off < h.BaseOffset || off > h.LastOffset() {
			t.Fatalf("Read(%d) returned batch [%d, %d]: %v", off, h.BaseOffset, h.LastOffset(), err)
		}
	}
}
