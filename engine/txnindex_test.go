package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestTxnIndexFormat(t *testing.T) {
	es := []AbortedTxn{{ProducerID: 1, FirstOffset: 100, LastOffset: 120, LastStableOffset: 110}, {ProducerID: 2, FirstOffset: 110, LastOffset: 130, LastStableOffset: 131}}
	b := encodeTxnIndex(nil, es)
	if len(b) != 2*txnIndexEntrySize {
		t.Fatalf("%d bytes", len(b))
	}
	// The drawn layout: version, producer id, first, last, last stable.
	if b[0] != 0 || b[1] != 0 || b[9] != 1 || b[17] != 100 || b[25] != 120 || b[33] != 110 {
		t.Fatalf("first entry % x", b[:txnIndexEntrySize])
	}
	got, err := decodeTxnIndex("x", 100, b)
	if err != nil || !slices.Equal(got, es) {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	for name, c := range map[string]struct {
		b    []byte
		want string
	}{
		"torn":         {b[:50], "x at position 34: 50 bytes, not a whole number of 34-byte entries"},
		"version":      {append([]byte{0, 1}, b[2:]...), "x at position 0: entry version 1"},
		"out of order": {encodeTxnIndex(nil, []AbortedTxn{es[1], es[0]}), "x at position 34: entry"},
		"below base":   {b[:txnIndexEntrySize], "x at position 0: entry"},
	} {
		base := int64(100)
		if name == "below base" {
			base = 121
		}
		if _, err := decodeTxnIndex("x", base, c.b); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

const txnTS = 1_700_000_000_000

func marker(pid int64, typ ControlType) []byte { return AppendControlBatch(nil, pid, 0, typ, 0, txnTS) }

// txnLog writes, in a log of small segments:
//
//	0-1   plain
//	2-4   producer 1's transaction A   (aborted at m1)
//	5-6   producer 2's transaction B   (committed at m2)
//	m1    abort of A: LSO after it is 5 (B open)
//	...   filler across segments
//	m2    commit of B
//	c     producer 1's transaction C   (aborted at m3, nothing open after: LSO m3+1)
func txnLog(t *testing.T, l *Log) []AbortedTxn {
	mustAppend(t, l, testBatch(t, 2, 20, txnTS))
	a := mustAppend(t, l, txnBatch(t, 1, 0, 0, 3))
	b := mustAppend(t, l, txnBatch(t, 2, 0, 0, 2))
	m1 := mustAppend(t, l, marker(1, ControlAbort))
	for range 20 {
		mustAppend(t, l, testBatch(t, 3, 20, txnTS))
	}
	mustAppend(t, l, marker(2, ControlCommit))
	c := mustAppend(t, l, txnBatch(t, 1, 0, 3, 2))
	m3 := mustAppend(t, l, marker(1, ControlAbort))
	mustAppend(t, l, testBatch(t, 2, 20, txnTS))
	return []AbortedTxn{
		{ProducerID: 1, FirstOffset: a.FirstOffset, LastOffset: m1.FirstOffset, LastStableOffset: b.FirstOffset},
		{ProducerID: 1, FirstOffset: c.FirstOffset, LastOffset: m3.FirstOffset, LastStableOffset: m3.FirstOffset + 1},
	}
}

func wantAborted(t *testing.T, l *Log, what string, want []AbortedTxn) {
	t.Helper()
	if got := l.AbortedTxns(nil, 0, l.EndOffset()); !slices.Equal(got, want) {
		t.Fatalf("%s: aborted %+v, want %+v", what, got, want)
	}
}

// txnIndexFiles maps segment base -> the entries of its .txnindex.
func txnIndexFiles(t *testing.T, dir string) map[int64][]AbortedTxn {
	t.Helper()
	out := map[int64][]AbortedTxn{}
	paths, _ := filepath.Glob(filepath.Join(dir, "*"+txnIndexSuffix))
	for _, p := range paths {
		base, _ := parseSegmentName(filepath.Base(p), txnIndexSuffix)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if out[base], err = decodeTxnIndex(p, base, b); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestAbortedTxnIndex(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{t: time.UnixMilli(txnTS)}
	opts := Options{SegmentBytes: 1 << 10, Now: clock.now}
	l := mustOpen(t, dir, opts)
	defer func() { l.Close() }()
	want := txnLog(t, l)
	wantAborted(t, l, "written", want)
	a, c := want[0], want[1]
	for _, q := range []struct {
		from, to int64
		want     []AbortedTxn
	}{
		{0, a.FirstOffset, nil},                    // before A
		{0, a.FirstOffset + 1, want[:1]},           // A's first record
		{a.LastOffset, a.LastOffset + 1, want[:1]}, // A's marker
		{a.LastOffset + 1, c.FirstOffset, nil},     // between
		{a.FirstOffset + 1, c.LastOffset, want},    // both
		{c.LastOffset + 1, l.EndOffset(), nil},     // after
	} {
		if got := l.AbortedTxns(nil, q.from, q.to); !slices.Equal(got, q.want) {
			t.Errorf("[%d, %d): %+v, want %+v", q.from, q.to, got, q.want)
		}
	}
	// One file per segment holding a marker.
	bases := l.SegmentBases()
	segOf := func(off int64) int64 {
		i, _ := slices.BinarySearch(bases, off+1)
		return bases[i-1]
	}
	files := txnIndexFiles(t, dir)
	if len(files) != 2 || !slices.Equal(files[segOf(a.LastOffset)], want[:1]) || !slices.Equal(files[segOf(c.LastOffset)], want[1:]) {
		t.Fatalf("files %+v (segments %v)", files, bases)
	}
	dst := make([]AbortedTxn, 0, 4)
	if n := testing.AllocsPerRun(50, func() { dst = l.AbortedTxns(dst[:0], 0, l.EndOffset()) }); n != 0 || len(dst) != 2 {
		t.Fatalf("%v allocations for a query into room", n)
	}

	// Reopened: clean; with the snapshots gone (the log replayed); with
	// a damaged file (rebuilt); after a crash.
	for _, how := range []string{"clean", "no snapshot", "damaged", "crash"} {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		switch how {
		case "no snapshot":
			snaps, _ := filepath.Glob(filepath.Join(dir, "*"+snapshotSuffix))
			for _, p := range snaps {
				os.Remove(p)
			}
		case "damaged":
			p := segmentName(dir, segOf(a.LastOffset), txnIndexSuffix)
			if err := os.WriteFile(p, []byte("torn"), 0o644); err != nil {
				t.Fatal(err)
			}
		case "crash":
			cfs := newCrashFS(t, dir)
			o := opts
			o.FS = cfs
			l = mustOpen(t, dir, o)
			// A transaction aborted after the last sync is lost with its
			// marker; the index must not keep it.
			mustAppend(t, l, txnBatch(t, 3, 0, 0, 1))
			mustAppend(t, l, marker(3, ControlAbort))
			cfs.crash(crashPlan{})
			abandonCrashed(l)
			if err := cfs.crashError(); err != nil {
				t.Fatal(err)
			}
		}
		l = mustOpen(t, dir, opts)
		wantAborted(t, l, how, want)
		if files := txnIndexFiles(t, dir); len(files) != 2 {
			t.Fatalf("%s: files %+v", how, files)
		}
	}

	// Truncating below C's marker drops C's entry and its file; C is
	// open again.
	if err := l.TruncateTo(c.LastOffset); err != nil {
		t.Fatal(err)
	}
	wantAborted(t, l, "truncated", want[:1])
	if files := txnIndexFiles(t, dir); len(files) != 1 {
		t.Fatalf("after truncation: files %+v", files)
	}
	if fu := l.FirstUnstableOffset(); fu != c.FirstOffset {
		t.Fatalf("after truncation: first unstable %d, want %d", fu, c.FirstOffset)
	}
	// Deleting the segment of A's marker deletes its file and entry.
	l.SetHighWatermark(l.EndOffset())
	if _, err := l.DeleteRecordsBefore(segOf(a.LastOffset) + 1); err != nil {
		t.Fatal(err)
	}
	if _, err := l.DeleteRecordsBefore(bases[slices.Index(bases, segOf(a.LastOffset))+1]); err != nil {
		t.Fatal(err)
	}
	wantAborted(t, l, "deleted", nil)
	l.Close()
	if files := txnIndexFiles(t, dir); len(files) != 0 {
		t.Fatalf("after deletion: files %+v", files)
	}
	l = mustOpen(t, dir, opts)
	wantAborted(t, l, "deleted, reopened", nil)
}

func TestAppendRefusesBadControlBatch(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{})
	defer l.Close()
	b := controlBatch([]byte{0, 0}, nil)
	if _, err := l.Append(b); !errors.Is(err, ErrInvalidBatch) || !errors.Is(err, ErrCorrupt) || l.EndOffset() != 0 {
		t.Fatalf("append: %v, end %d", err, l.EndOffset())
	}
}

// TestAbortedTxnIndexSurvivesCleaning: segments merged by the cleaner keep
// the aborted transactions of the markers they held, also after a reopen.
func TestAbortedTxnIndexSurvivesCleaning(t *testing.T) {
	clock := &fakeClock{t: time.UnixMilli(txnTS)}
	dir := t.TempDir()
	opts := compactOpts(clock)
	l := mustOpen(t, dir, opts)
	defer func() { l.Close() }()
	var want []AbortedTxn
	fill := func(n int) {
		for j := range n { // fills segments with keys the cleaner mostly drops
			mustAppend(t, l, keyedBatch(t, txnTS, CompressionNone, kv{fmt.Sprintf("k%d", j%3), []byte(strings.Repeat("v", 40))}))
		}
	}
	for i := range 12 {
		fill(40)
		b := keyedBatch(t, txnTS, CompressionNone, kv{fmt.Sprintf("t%d", i), []byte("aborted")})
		binary.BigEndian.PutUint16(b[offAttributes:], attrTransactional)
		binary.BigEndian.PutUint64(b[offProducerID:], 1)
		binary.BigEndian.PutUint16(b[offProducerEpoch:], 0)
		binary.BigEndian.PutUint32(b[offBaseSequence:], uint32(i))
		binary.BigEndian.PutUint32(b[offCRC:], batchCRC(b))
		first := mustAppend(t, l, b).FirstOffset
		m := mustAppend(t, l, marker(1, ControlAbort)).FirstOffset
		want = append(want, AbortedTxn{ProducerID: 1, FirstOffset: first, LastOffset: m, LastStableOffset: m + 1})
	}
	settle(t, l)
	segs := len(l.SegmentBases())
	mustClean(t, NewCleaner(CleanerOptions{DedupeBufferBytes: 1 << 20}), l)
	if len(l.SegmentBases()) >= segs {
		t.Fatalf("segments %d -> %d: nothing merged", segs, len(l.SegmentBases()))
	}
	wantAborted(t, l, "cleaned", want)
	check := func(what string) {
		t.Helper()
		n := 0
		for base, es := range txnIndexFiles(t, dir) {
			if !slices.Contains(l.SegmentBases(), base) {
				t.Fatalf("%s: a .txnindex of no segment at %d", what, base)
			}
			n += len(es)
		}
		if n != len(want) {
			t.Fatalf("%s: %d entries in the files, want %d", what, n, len(want))
		}
	}
	check("cleaned")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, dir, opts)
	wantAborted(t, l, "cleaned, reopened", want)
	check("cleaned, reopened")
}
