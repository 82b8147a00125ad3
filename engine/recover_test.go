package engine

// Recovery after an unclean stop: torn tails, corruption, zeroed
// preallocated tails, corrupted base offsets, damaged indexes and the
// recovery point.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// logCapture is a slog.Handler that keeps every record's level and message.
type logCapture struct {
	mu   sync.Mutex
	msgs []string
}

func (c *logCapture) Enabled(context.Context, slog.Level) bool { return true }

func (c *logCapture) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	c.msgs = append(c.msgs, r.Level.String()+" "+r.Message)
	c.mu.Unlock()
	return nil
}

func (c *logCapture) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *logCapture) WithGroup(string) slog.Handler      { return c }

func (c *logCapture) logger() *slog.Logger { return slog.New(c) }

// find returns the captured lines containing s.
func (c *logCapture) find(s string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.msgs {
		if strings.Contains(m, s) {
			out = append(out, m)
		}
	}
	return out
}

// atLeastWarn returns the captured lines at level WARN or above.
func (c *logCapture) atLeastWarn() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.msgs {
		if strings.HasPrefix(m, "WARN") || strings.HasPrefix(m, "ERROR") {
			out = append(out, m)
		}
	}
	return out
}

// discardLogger keeps the engine's recovery warnings out of test output.
var discardLogger = slog.New(slog.DiscardHandler)

// fastTempDir returns a temporary directory on tmpfs (/dev/shm) when there
// is one, else t.TempDir(): tests that open and close a log hundreds of
// times spend most of their time in fsync on a disk.
func fastTempDir(t *testing.T) string {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &st); err == nil && st.Type == unix.TMPFS_MAGIC {
		if d, err := os.MkdirTemp("/dev/shm", "sluice-engine-test-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}

// diskBatch is a batch found in a segment file.
type diskBatch struct {
	pos int64
	h   BatchHeader
}

// batchesOf lists the batches of a segment file's bytes, all of which must
// check.
func batchesOf(tb testing.TB, data []byte) []diskBatch {
	tb.Helper()
	var out []diskBatch
	for pos := 0; pos < len(data); {
		h, err := checkStoredBatch(data[pos:])
		if err != nil {
			tb.Fatalf("batch at position %d: %v", pos, err)
		}
		out = append(out, diskBatch{int64(pos), h})
		pos += int(h.Size())
	}
	return out
}

func mustRead(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func mustWrite(tb testing.TB, path string, data []byte) {
	tb.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		tb.Fatal(err)
	}
}

func fileSize(tb testing.TB, path string) int64 {
	tb.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Size()
}

// copyDir copies the regular files of src into dst (created).
func copyDir(tb testing.TB, src, dst string) {
	tb.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		tb.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		// An open log's background work (a producer snapshot's temporary
		// file) may remove a file between the listing and the read: a
		// crash copy taken then would not hold it either.
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			tb.Fatal(err)
		}
		mustWrite(tb, filepath.Join(dst, e.Name()), data)
	}
}

// makeUnclean turns a cleanly closed log directory into one left by a crash
// with no recovery point: the marker and the checkpoint are removed, so the
// next open scans every segment.
func makeUnclean(tb testing.TB, dir string) {
	tb.Helper()
	for _, name := range []string{cleanShutdownFile, recoveryPointFile} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			tb.Fatal(err)
		}
	}
}

// activeSize is the logical size of the log's active segment.
func activeSize(l *Log) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.active.size.Load()
}

// readRange reads every record in [from, upTo) through Read, maxBytes at a
// time, as readAll does up to the log end, moving on past the last offset
// of each batch read (so it follows gaps and batches without records).
func readRange(tb testing.TB, l *Log, from, upTo, maxBytes int64) []Record {
	tb.Helper()
	var out []Record
	for off := from; off < upTo; {
		v, err := l.Read(off, maxBytes, upTo)
		if err != nil {
			tb.Fatalf("Read(%d): %v", off, err)
		}
		if v.Len() == 0 {
			break
		}
		data := viewBytesTB(tb, &v)
		v.Release()
		it := NewRecordIterator(data)
		for it.Next() {
			r := it.Record()
			if r.Offset < off {
				continue
			}
			r.Key, r.Value, r.Headers = bytes.Clone(r.Key), bytes.Clone(r.Value), nil
			out = append(out, r)
		}
		if err := it.Err(); err != nil {
			tb.Fatalf("records read at %d: %v", off, err)
		}
		bs := batchesOf(tb, data)
		off = bs[len(bs)-1].h.LastOffset() + 1
	}
	return out
}

func viewBytesTB(tb testing.TB, v *View) []byte {
	tb.Helper()
	b, err := v.AppendTo(nil)
	if err != nil {
		tb.Fatalf("reading view: %v", err)
	}
	return b
}

// sameRecords compares offsets, timestamps, keys and values.
func sameRecords(tb testing.TB, got, want []Record) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Offset != w.Offset || g.Timestamp != w.Timestamp || !bytes.Equal(g.Key, w.Key) || !bytes.Equal(g.Value, w.Value) {
			tb.Fatalf("record %d: got offset %d ts %d key %q value %q, want offset %d ts %d key %q value %q",
				i, g.Offset, g.Timestamp, g.Key, g.Value, w.Offset, w.Timestamp, w.Key, w.Value)
		}
	}
}

// For every byte of the last batch's length field, its magic, its CRC and
// its CRC-covered bytes: a file cut there (torn write) or a byte flipped
// there (corruption) makes recovery keep exactly the batches before it, cut
// the file at the batch's start and give its offsets to the next append.
func TestRecoverTornOrCorruptLastBatch(t *testing.T) {
	root := fastTempDir(t)
	pristine := filepath.Join(root, "pristine")
	opts := Options{SegmentBytes: 1500, IndexIntervalBytes: 300, Logger: discardLogger}
	l := mustOpen(t, pristine, opts)
	for i := range 11 {
		b := testBatch(t, 1+i%4, 70, int64(5000+i))
		if len(b) >= 512 {
			t.Fatalf("batch %d is %d bytes; the test wants batches under 512", i, len(b))
		}
		if _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	bases := l.SegmentBases()
	if len(bases) < 2 {
		t.Fatalf("want several segments, got %v", bases)
	}
	all := readAll(t, l, 0, 1<<20)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	makeUnclean(t, pristine)

	lastBase := bases[len(bases)-1]
	logName := filepath.Base(segmentName(pristine, lastBase, logSuffix))
	seg := mustRead(t, filepath.Join(pristine, logName))
	bs := batchesOf(t, seg)
	if len(bs) < 2 {
		t.Fatalf("the active segment holds %d batches, want several", len(bs))
	}
	last := bs[len(bs)-1]
	cutPos, cutOffset := last.pos, last.h.BaseOffset
	if last.pos+last.h.Size() != int64(len(seg)) || last.h.NumRecords != 3 {
		t.Fatalf("unexpected last batch %+v in a %d-byte segment", last, len(seg))
	}
	kept := all[:slices.IndexFunc(all, func(r Record) bool { return r.Offset == cutOffset })]
	checkSequence(t, kept, 0, int(cutOffset))

	type tcase struct {
		name     string
		pos      int64 // in the batch
		truncate bool
	}
	var cases []tcase
	var positions []int64
	for p := int64(offBatchLength); p < offBatchLength+4; p++ {
		positions = append(positions, p)
	}
	positions = append(positions, offMagic)
	for p := int64(offAttributes); p < last.h.Size(); p++ {
		positions = append(positions, p)
	}
	for _, p := range positions {
		cases = append(cases, tcase{fmt.Sprintf("truncate at %d", p), p, true}, tcase{fmt.Sprintf("flip %d", p), p, false})
	}
	for p := int64(offCRC); p < offAttributes; p++ {
		cases = append(cases, tcase{fmt.Sprintf("flip CRC byte %d", p), p, false})
	}

	work := filepath.Join(root, "p-0")
	next := testBatch(t, 2, 30, 9000)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.RemoveAll(work); err != nil {
				t.Fatal(err)
			}
			copyDir(t, pristine, work)
			path := filepath.Join(work, logName)
			if tc.truncate {
				if err := os.Truncate(path, cutPos+tc.pos); err != nil {
					t.Fatal(err)
				}
			} else {
				data := bytes.Clone(seg)
				data[cutPos+tc.pos] ^= 0xff
				mustWrite(t, path, data)
			}
			var logs logCapture
			o := opts
			o.Logger = logs.logger()
			l := mustOpen(t, work, o)
			defer l.Close()
			if got := l.EndOffset(); got != cutOffset {
				t.Fatalf("EndOffset %d, want %d", got, cutOffset)
			}
			if got := fileSize(t, path); got != cutPos {
				t.Fatalf("active segment is %d bytes after recovery, want %d (cut at the batch start)", got, cutPos)
			}
			if got := l.SegmentBases(); !slices.Equal(got, bases) {
				t.Fatalf("segments %v, want %v", got, bases)
			}
			want := "truncating"
			if tc.truncate {
				want = "truncating torn tail"
			}
			if len(logs.find(want)) != 1 {
				t.Fatalf("recovery logged %q, want one %q", logs.msgs, want)
			}
			sameRecords(t, readAll(t, l, 0, 1<<20), kept)
			res, err := l.Append(bytes.Clone(next))
			if err != nil || res.FirstOffset != cutOffset || res.LastOffset != cutOffset+1 {
				t.Fatalf("append after recovery: %+v %v, want [%d, %d]", res, err, cutOffset, cutOffset+1)
			}
			got := readAll(t, l, cutOffset, 1<<20)
			checkSequence(t, got, cutOffset, 2)
			if string(got[1].Key) != "k1" || got[1].Timestamp != 9000 {
				t.Fatalf("appended record read back as %+v", got[1])
			}
		})
	}
}

// An unclean stop while the active segment still has its preallocated zeros
// is the normal crash: recovery keeps every batch, reports no corruption and
// trims the file to its data.
func TestRecoverPreallocatedZeroTail(t *testing.T) {
	check := func(t *testing.T, dir string, wantEnd int64, want []Record) {
		t.Helper()
		var logs logCapture
		l := mustOpen(t, dir, Options{Logger: logs.logger()})
		defer l.Close()
		if l.EndOffset() != wantEnd {
			t.Fatalf("EndOffset %d, want %d", l.EndOffset(), wantEnd)
		}
		if w := logs.atLeastWarn(); len(w) != 0 {
			t.Fatalf("recovery of a zeroed tail warned: %q", w)
		}
		if tr := logs.find("truncating"); len(tr) != 0 {
			t.Fatalf("recovery of a zeroed tail reported truncation: %q", tr)
		}
		bases := l.SegmentBases()
		active := segmentName(dir, bases[len(bases)-1], logSuffix)
		if got := fileSize(t, active); got != activeSize(l) || got == 0 {
			t.Fatalf("active segment file is %d bytes, data is %d", got, activeSize(l))
		}
		sameRecords(t, readAll(t, l, 0, 1<<20), want)
		res, err := l.Append(testBatch(t, 1, 10, 1))
		if err != nil || res.FirstOffset != wantEnd {
			t.Fatalf("append after recovery: %+v %v", res, err)
		}
	}

	t.Run("copied while open", func(t *testing.T) {
		root := t.TempDir()
		src := filepath.Join(root, "src")
		l := mustOpen(t, src, Options{SegmentBytes: 4 << 10, Logger: discardLogger})
		defer l.Close()
		for i := range 30 {
			if _, err := l.Append(testBatch(t, 2, 60, int64(i))); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		bases := l.SegmentBases()
		active := segmentName(src, bases[len(bases)-1], logSuffix)
		if fileSize(t, active) <= activeSize(l) {
			t.Fatalf("the active segment has no preallocated tail: %d bytes for %d of data", fileSize(t, active), activeSize(l))
		}
		want := readAll(t, l, 0, 1<<20)
		dst := filepath.Join(root, "p-0")
		copyDir(t, src, dst) // the state a power cut would leave: no marker
		check(t, dst, l.EndOffset(), want)
	})

	t.Run("zeros written after a clean close", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "p-0")
		l := mustOpen(t, dir, Options{Logger: discardLogger})
		for i := range 10 {
			if _, err := l.Append(testBatch(t, 3, 40, int64(i))); err != nil {
				t.Fatal(err)
			}
		}
		want := readAll(t, l, 0, 1<<20)
		end := l.EndOffset()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		path := segmentName(dir, 0, logSuffix)
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(make([]byte, 300<<10), fileSize(t, path)); err != nil {
			t.Fatal(err)
		}
		f.Close()
		makeUnclean(t, dir)
		check(t, dir, end, want)
	})
}

// A zeroed tail in a segment that is not the last is a hole, not the
// preallocated space of the active segment: as for any other cut of an
// earlier segment, the later segments go (Kafka deletes every segment after
// one it truncates), so the log never has records missing in its middle.
func TestRecoverZeroedTailOfEarlierSegment(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p-0")
	writeSegments(t, dir, 3, 5, 2, false)
	path := segmentName(dir, 10, logSuffix)
	data := mustRead(t, path)
	b := batchesOf(t, data)
	// The last two batches of the middle segment never reached the disk.
	cut := b[3].pos
	clear(data[cut:])
	mustWrite(t, path, data)

	var logs logCapture
	l := mustOpen(t, dir, Options{Logger: logs.logger()})
	defer l.Close()
	if got := l.SegmentBases(); !slices.Equal(got, []int64{0, 10}) {
		t.Fatalf("segments %v, want [0 10]", got)
	}
	if l.EndOffset() != 16 {
		t.Fatalf("EndOffset %d, want 16", l.EndOffset())
	}
	if got := fileSize(t, path); got != cut {
		t.Fatalf("segment 10 is %d bytes, want %d", got, cut)
	}
	if _, err := os.Stat(segmentName(dir, 20, logSuffix)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("segment after the hole still on disk: %v", err)
	}
	checkSequence(t, readAll(t, l, 0, 1<<20), 0, 16)
	if res, err := l.Append(testBatch(t, 1, 5, 1)); err != nil || res.FirstOffset != 16 {
		t.Fatalf("append: %+v %v", res, err)
	}
}

// A corrupted base offset (outside the CRC) that does not increase is caught
// by the offset check: in the last batch, in the middle of an earlier
// segment (which is cut there, the later segments removed), and in the first
// batch of a segment, checked against the end of the previous one.
func TestRecoverCorruptBaseOffset(t *testing.T) {
	const segs, perSeg, recs = 4, 10, 3 // segment k starts at 30k
	pristine := filepath.Join(t.TempDir(), "pristine")
	end := writeSegments(t, pristine, segs, perSeg, recs, false)
	bsize := batchesOf(t, mustRead(t, segmentName(pristine, 0, logSuffix)))[1].pos

	for _, tc := range []struct {
		name      string
		seg, nth  int   // the batch changed: segment and index in it
		base      int64 // the base offset written into it
		wantBases []int64
	}{
		{"last batch to 0", 3, 9, 0, []int64{0, 30, 60, 90}},
		{"last batch to the previous last offset", 3, 9, 116, []int64{0, 30, 60, 90}},
		{"mid earlier segment to 0", 1, 4, 0, []int64{0, 30}},
		{"mid earlier segment to the previous last offset", 1, 4, 41, []int64{0, 30}},
		{"first batch of a segment below the previous segment's end", 2, 0, 59, []int64{0, 30, 60}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "p-0")
			copyDir(t, pristine, dir)
			path := segmentName(dir, int64(tc.seg*perSeg*recs), logSuffix)
			data := mustRead(t, path)
			pos := int64(tc.nth) * bsize
			orig := int64(binary.BigEndian.Uint64(data[pos:]))
			if want := int64((tc.seg*perSeg + tc.nth) * recs); orig != want {
				t.Fatalf("batch has base %d, want %d", orig, want)
			}
			setBaseOffset(data[pos:], tc.base)
			if _, err := checkStoredBatch(data[pos:]); err != nil {
				t.Fatalf("the changed batch fails its own check: %v", err)
			}
			mustWrite(t, path, data)

			l := mustOpen(t, dir, Options{Logger: discardLogger})
			defer l.Close()
			if l.EndOffset() != orig {
				t.Fatalf("EndOffset %d, want %d (log had %d)", l.EndOffset(), orig, end)
			}
			if got := l.SegmentBases(); !slices.Equal(got, tc.wantBases) {
				t.Fatalf("segments %v, want %v", got, tc.wantBases)
			}
			if got := fileSize(t, path); got != pos {
				t.Fatalf("segment file is %d bytes, want %d", got, pos)
			}
			for b := int64(tc.seg+1) * perSeg * recs; b < end; b += perSeg * recs {
				if _, err := os.Stat(segmentName(dir, b, logSuffix)); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("segment %d after the cut still on disk: %v", b, err)
				}
			}
			checkSequence(t, readAll(t, l, 0, 1<<20), 0, int(orig))
			if res, err := l.Append(testBatch(t, 2, 5, 1)); err != nil || res.FirstOffset != orig {
				t.Fatalf("append: %+v %v", res, err)
			}
			checkSequence(t, readAll(t, l, 0, 700), 0, int(orig)+2)
		})
	}
}

// buildIndexedLog writes a log of several segments with dense indexes and
// batches of varied sizes, closes it cleanly and returns its records and
// segment bases.
func buildIndexedLog(tb testing.TB, dir string, opts Options) ([]Record, []int64) {
	tb.Helper()
	l := mustOpen(tb, dir, opts)
	for i := 0; i < 100 || activeSize(l) < opts.SegmentBytes*2/3; i++ {
		if _, err := l.Append(testBatch(tb, 1+(i*7)%5, 30+(i*13)%50, int64(1000+i))); err != nil {
			tb.Fatal(err)
		}
	}
	recs := readAll(tb, l, 0, 1<<20)
	bases := l.SegmentBases()
	if err := l.Close(); err != nil {
		tb.Fatal(err)
	}
	return recs, bases
}

// indexMatchesLog checks every entry of a segment's offset index against the
// batches of its .log: entries increase and each names the batch that
// starts at its position.
func indexMatchesLog(tb testing.TB, dir string, base int64) error {
	tb.Helper()
	ix := mustRead(tb, segmentName(dir, base, indexSuffix))
	data := mustRead(tb, segmentName(dir, base, logSuffix))
	starts := map[int64]int64{}
	for _, b := range batchesOf(tb, data) {
		starts[b.pos] = b.h.BaseOffset
	}
	if len(ix)%offsetIndexEntrySize != 0 {
		return fmt.Errorf("index of %d has %d bytes", base, len(ix))
	}
	prevRel, prevPos := int64(-1), int64(-1)
	for i := 0; i < len(ix); i += offsetIndexEntrySize {
		rel := int64(binary.BigEndian.Uint32(ix[i:]))
		pos := int64(binary.BigEndian.Uint32(ix[i+4:]))
		if rel <= prevRel || pos <= prevPos {
			return fmt.Errorf("index of %d: entry %d (%d, %d) does not increase", base, i/offsetIndexEntrySize, rel, pos)
		}
		if b, ok := starts[pos]; !ok || b != base+rel {
			return fmt.Errorf("index of %d: entry %d (%d, %d) does not name the batch there", base, i/offsetIndexEntrySize, rel, pos)
		}
		prevRel, prevPos = rel, pos
	}
	return nil
}

// Missing or damaged index files of a cleanly closed log never make reads
// wrong: an index that fails its sanity check is rebuilt, and one that
// passes it but names the wrong positions is not trusted (the check in
// segment.positionOf, and at open the check of the last entry).
func TestRecoverDamagedIndexes(t *testing.T) {
	root := t.TempDir()
	pristine := filepath.Join(root, "pristine")
	opts := Options{SegmentBytes: 6 << 10, IndexIntervalBytes: 256, Logger: discardLogger}
	want, bases := buildIndexedLog(t, pristine, opts)
	if len(bases) < 4 {
		t.Fatalf("want at least 4 segments, got %v", bases)
	}
	end := want[len(want)-1].Offset + 1

	entries := func(path string, size int) [][]byte {
		data := mustRead(t, path)
		var out [][]byte
		for i := 0; i+size <= len(data); i += size {
			out = append(out, data[i:i+size])
		}
		return out
	}
	// Two closed segments whose offset indexes are the same size but differ.
	var swapA, swapB int64 = -1, -1
	for i, a := range bases[:len(bases)-1] {
		for _, b := range bases[i+1 : len(bases)-1] {
			ia, ib := mustRead(t, segmentName(pristine, a, indexSuffix)), mustRead(t, segmentName(pristine, b, indexSuffix))
			if swapA < 0 && len(ia) == len(ib) && len(ia) > 0 && !bytes.Equal(ia, ib) {
				swapA, swapB = a, b
			}
		}
	}
	if swapA < 0 {
		t.Fatal("no two closed segments with offset indexes of the same size")
	}

	type damage struct {
		name string
		do   func(t *testing.T, dir string, base int64)
		// rebuilt: the index fails its sanity check, so a read of the
		// segment rewrites it as a valid index.
		rebuilt bool
	}
	damages := []damage{
		{"index missing", func(t *testing.T, dir string, base int64) {
			os.Remove(segmentName(dir, base, indexSuffix))
		}, true},
		{"time index missing", func(t *testing.T, dir string, base int64) {
			os.Remove(segmentName(dir, base, timeIndexSuffix))
		}, false},
		{"both missing", func(t *testing.T, dir string, base int64) {
			os.Remove(segmentName(dir, base, indexSuffix))
			os.Remove(segmentName(dir, base, timeIndexSuffix))
		}, true},
		{"index garbage of a ragged size", func(t *testing.T, dir string, base int64) {
			mustWrite(t, segmentName(dir, base, indexSuffix), bytes.Repeat([]byte{0x5a, 0x01, 0xfe}, 7))
		}, true},
		{"time index garbage of a ragged size", func(t *testing.T, dir string, base int64) {
			mustWrite(t, segmentName(dir, base, timeIndexSuffix), bytes.Repeat([]byte{0x5a, 0x01, 0xfe}, 9))
		}, true},
		{"index entries decreasing", func(t *testing.T, dir string, base int64) {
			path := segmentName(dir, base, indexSuffix)
			e := entries(path, offsetIndexEntrySize)
			if len(e) < 2 {
				t.Fatalf("segment %d has %d index entries, want at least 2", base, len(e))
			}
			slices.Reverse(e)
			mustWrite(t, path, bytes.Join(e, nil))
		}, true},
		{"time index entries decreasing", func(t *testing.T, dir string, base int64) {
			path := segmentName(dir, base, timeIndexSuffix)
			e := entries(path, timeIndexEntrySize)
			if len(e) < 2 {
				t.Fatalf("segment %d has %d time index entries, want at least 2", base, len(e))
			}
			slices.Reverse(e)
			mustWrite(t, path, bytes.Join(e, nil))
		}, true},
		{"index entries out of order inside", func(t *testing.T, dir string, base int64) {
			path := segmentName(dir, base, indexSuffix)
			e := entries(path, offsetIndexEntrySize)
			if len(e) < 4 {
				t.Fatalf("segment %d has %d index entries, want at least 4", base, len(e))
			}
			e[1], e[len(e)-2] = e[len(e)-2], e[1] // first and last stay: the sanity check passes
			mustWrite(t, path, bytes.Join(e, nil))
		}, false},
		{"index positions off by one", func(t *testing.T, dir string, base int64) {
			path := segmentName(dir, base, indexSuffix)
			e := entries(path, offsetIndexEntrySize)
			if len(e) == 0 {
				t.Fatalf("segment %d has no index entries", base)
			}
			for _, x := range e {
				binary.BigEndian.PutUint32(x[4:], binary.BigEndian.Uint32(x[4:])+1)
			}
			mustWrite(t, path, bytes.Join(e, nil))
		}, false},
		{"index of another segment", func(t *testing.T, dir string, base int64) {
			other := swapB
			if base == swapB {
				other = swapA
			}
			src := mustRead(t, segmentName(pristine, other, indexSuffix))
			path := segmentName(dir, base, indexSuffix)
			mustWrite(t, path, src)
			if indexMatchesLog(t, dir, base) == nil {
				t.Fatal("the swapped-in index matches the log: it tests nothing")
			}
		}, false},
	}

	targets := []struct {
		name string
		base int64
	}{
		{"closed segment", swapA},
		{"active segment", bases[len(bases)-1]},
	}
	for _, tg := range targets {
		for _, d := range damages {
			if d.name == "index of another segment" && tg.base != swapA {
				continue // only closed segments of equal index size are swapped
			}
			t.Run(tg.name+"/"+d.name, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "p-0")
				copyDir(t, pristine, dir)
				before := mustRead(t, segmentName(dir, tg.base, indexSuffix))
				d.do(t, dir, tg.base)
				damaged, _ := os.ReadFile(segmentName(dir, tg.base, indexSuffix))

				l := mustOpen(t, dir, opts)
				if l.EndOffset() != end || !slices.Equal(l.SegmentBases(), bases) {
					t.Fatalf("after open: end %d segments %v, want %d and %v", l.EndOffset(), l.SegmentBases(), end, bases)
				}
				sameRecords(t, readAll(t, l, 0, 1<<20), want)
				sameRecords(t, readAll(t, l, 0, 1), want)
				sameRecords(t, readAll(t, l, 0, 900), want)
				// Every offset of the damaged segment, alone.
				segEnd := end
				if i := slices.Index(bases, tg.base); i+1 < len(bases) {
					segEnd = bases[i+1]
				}
				for off := tg.base; off < segEnd; off++ {
					v, err := l.Read(off, 1, end)
					if err != nil {
						t.Fatalf("Read(%d): %v", off, err)
					}
					b := viewBytes(t, &v)
					v.Release()
					h, err := checkStoredBatch(b)
					if err != nil || off < h.BaseOffset || off > h.LastOffset() || int64(len(b)) != h.Size() {
						t.Fatalf("Read(%d) returned batch [%d, %d] of %d bytes: %v", off, h.BaseOffset, h.LastOffset(), len(b), err)
					}
				}
				// Reads bounded by upTo inside the damaged segment.
				mid := tg.base + (segEnd-tg.base)/2
				v, err := l.Read(tg.base, 1<<20, mid)
				if err != nil {
					t.Fatal(err)
				}
				b := viewBytes(t, &v)
				v.Release()
				for _, db := range batchesOf(t, b) {
					if db.h.LastOffset() >= mid || db.h.BaseOffset < tg.base {
						t.Fatalf("read of [%d, %d) returned batch [%d, %d]", tg.base, mid, db.h.BaseOffset, db.h.LastOffset())
					}
				}
				res, err := l.Append(testBatch(t, 2, 10, 1))
				if err != nil || res.FirstOffset != end {
					t.Fatalf("append: %+v %v", res, err)
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				ix := mustRead(t, segmentName(dir, tg.base, indexSuffix))
				if d.rebuilt && tg.name == "closed segment" && !bytes.Equal(ix, before) {
					t.Fatalf("rebuilt index differs from the original: %d bytes, was %d", len(ix), len(before))
				}
				if !d.rebuilt && tg.name == "closed segment" && !bytes.Equal(ix, damaged) {
					t.Fatal("an index that passed the sanity check was rewritten")
				}
				// The active segment's index is rebuilt at open whenever its
				// last entry is unusable, and extended by the append.
				if tg.name == "active segment" && d.name != "index entries out of order inside" {
					if err := indexMatchesLog(t, dir, tg.base); err != nil {
						t.Fatalf("after close: %v", err)
					}
				}

				// And once more from the state Close left.
				l = mustOpen(t, dir, opts)
				defer l.Close()
				sameRecords(t, readAll(t, l, 0, 800)[:len(want)], want)
				checkSequence(t, readAll(t, l, 0, 1<<20), 0, int(end)+2)
			})
		}
	}
}

// After an unclean stop only the segments from the one holding the recovery
// point are scanned. As in Kafka, segments below it were flushed before the
// recovery point passed them and are trusted: corruption there is not found
// at open (reads serve the bytes as they are, and consumers' CRC checks
// catch them); corruption after it is cut.
func TestRecoverFromRecoveryPoint(t *testing.T) {
	const segs, perSeg, recs = 10, 10, 2 // segment k starts at 20k
	pristine := filepath.Join(t.TempDir(), "pristine")
	end := writeSegments(t, pristine, segs, perSeg, recs, false)
	bsize := batchesOf(t, mustRead(t, segmentName(pristine, 0, logSuffix)))[1].pos
	corrupt := func(dir string, seg, nth int) {
		path := segmentName(dir, int64(seg*perSeg*recs), logSuffix)
		data := mustRead(t, path)
		data[int64(nth)*bsize+40] ^= 0xff
		mustWrite(t, path, data)
	}
	corrupt(pristine, 2, 3) // offsets 46-47, below the recovery point
	corrupt(pristine, 7, 4) // offsets 148-149, above it
	seg2 := mustRead(t, segmentName(pristine, 40, logSuffix))

	t.Run("recovery point in segment 5", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "p-0")
		copyDir(t, pristine, dir)
		if err := writeCheckpoint(OSFS, filepath.Join(dir, recoveryPointFile), map[string]int64{"p-0": 107}); err != nil {
			t.Fatal(err)
		}
		l := mustOpen(t, dir, Options{Logger: discardLogger})
		defer l.Close()
		if l.EndOffset() != 148 {
			t.Fatalf("EndOffset %d, want 148 (log had %d)", l.EndOffset(), end)
		}
		if want := []int64{0, 20, 40, 60, 80, 100, 120, 140}; !slices.Equal(l.SegmentBases(), want) {
			t.Fatalf("segments %v, want %v", l.SegmentBases(), want)
		}
		if l.RecoveryPoint() != 107 {
			t.Fatalf("recovery point %d, want 107", l.RecoveryPoint())
		}
		if got := mustRead(t, segmentName(dir, 40, logSuffix)); !bytes.Equal(got, seg2) {
			t.Fatal("a segment below the recovery point was changed at open")
		}
		checkSequence(t, readRange(t, l, 0, 46, 1<<20), 0, 46)
		checkSequence(t, readRange(t, l, 0, 46, 1), 0, 46)
		checkSequence(t, readAll(t, l, 48, 1<<20), 48, 100)
		v, err := l.Read(46, 1, l.EndOffset())
		if err != nil {
			t.Fatal(err)
		}
		got := viewBytes(t, &v)
		v.Release()
		if !bytes.Equal(got, seg2[3*bsize:4*bsize]) {
			t.Fatal("the trusted segment's corrupt batch was not served as stored")
		}
		if _, err := checkStoredBatch(got); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("the served batch passes its CRC check: %v", err)
		}
	})

	t.Run("no recovery point", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "p-0")
		copyDir(t, pristine, dir)
		l := mustOpen(t, dir, Options{Logger: discardLogger})
		defer l.Close()
		if l.EndOffset() != 46 || !slices.Equal(l.SegmentBases(), []int64{0, 20, 40}) {
			t.Fatalf("EndOffset %d segments %v, want 46 and [0 20 40]", l.EndOffset(), l.SegmentBases())
		}
		checkSequence(t, readAll(t, l, 0, 1<<20), 0, 46)
	})
}
