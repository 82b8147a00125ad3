package engine

// Append paths: validation, stamping, rolls, replicated appends, sticky
// write errors, a full disk, and the space idle partitions hold.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// readBatches reads every batch from offset from to the log end, one Read
// at a time, moving on past each batch's last offset (so gaps and batches
// holding fewer records than offsets are followed), and returns their bytes.
func readBatches(tb testing.TB, l *Log, from int64) [][]byte {
	tb.Helper()
	var out [][]byte
	for off := from; off < l.EndOffset(); {
		v, err := l.Read(off, 1, l.EndOffset())
		if err != nil {
			tb.Fatalf("Read(%d): %v", off, err)
		}
		data := viewBytesTB(tb, &v)
		v.Release()
		h, err := checkStoredBatch(data)
		if err != nil || h.Size() != int64(len(data)) {
			tb.Fatalf("Read(%d) returned %d bytes: %+v %v", off, len(data), h, err)
		}
		if h.LastOffset() < off {
			tb.Fatalf("Read(%d) returned batch [%d, %d]", off, h.BaseOffset, h.LastOffset())
		}
		out = append(out, data)
		off = h.LastOffset() + 1
	}
	return out
}

// replicated returns a copy of batch carrying base offset and leader epoch.
func replicated(batch []byte, base int64, epoch int32) []byte {
	b := bytes.Clone(batch)
	setBaseOffset(b, base)
	setLeaderEpoch(b, epoch)
	return b
}

// withCRC recomputes the CRC of the batch b in place and returns it.
func withCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[offCRC:], batchCRC(b))
	return b
}

func TestAppendRejectsInvalidBatches(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{MaxBatchBytes: 2000, Logger: discardLogger})
	defer l.Close()
	for i := range 3 {
		if _, err := l.Append(testBatch(t, 3, 50, int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	good := testBatch(t, 2, 40, 7)
	invalid := map[string][]byte{
		"flipped CRC-covered byte": func() []byte { b := bytes.Clone(good); b[70] ^= 1; return b }(),
		"wrong CRC":                func() []byte { b := bytes.Clone(good); b[offCRC] ^= 1; return b }(),
		"magic 1":                  func() []byte { b := bytes.Clone(good); b[offMagic] = 1; return withCRC(b) }(),
		"length past the end": func() []byte {
			b := bytes.Clone(good)
			binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)))
			return b
		}(),
		"a byte after the batch": append(bytes.Clone(good), 0),
		"cut short":              bytes.Clone(good[:len(good)-1]),
		"only a header":          bytes.Clone(good[:BatchHeaderSize-1]),
		"record count 0": func() []byte {
			b := bytes.Clone(good)
			binary.BigEndian.PutUint32(b[offRecordCount:], 0)
			return withCRC(b)
		}(),
		"last offset delta beyond the records": func() []byte {
			b := bytes.Clone(good)
			binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 5)
			return withCRC(b)
		}(),
	}
	end, size := l.EndOffset(), l.Size()
	for name, b := range invalid {
		before := bytes.Clone(b)
		_, err := l.Append(b)
		if !errors.Is(err, ErrInvalidBatch) {
			t.Fatalf("%s: Append returned %v, want ErrInvalidBatch", name, err)
		}
		if !bytes.Equal(b, before) {
			t.Fatalf("%s: a rejected batch was modified", name)
		}
		if l.EndOffset() != end || l.Size() != size {
			t.Fatalf("%s: the log changed: end %d size %d, was %d and %d", name, l.EndOffset(), l.Size(), end, size)
		}
	}
	big := testBatch(t, 3, 700, 1)
	if len(big) <= 2000 {
		t.Fatalf("the large batch is only %d bytes", len(big))
	}
	if _, err := l.Append(big); !errors.Is(err, ErrBatchTooLarge) {
		t.Fatalf("oversized batch: %v, want ErrBatchTooLarge", err)
	}
	if _, err := l.Append(nil); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("nil batch: %v", err)
	}
	if l.EndOffset() != end || l.Size() != size {
		t.Fatalf("the log changed: end %d size %d, was %d and %d", l.EndOffset(), l.Size(), end, size)
	}
	res, err := l.Append(bytes.Clone(good))
	if err != nil || res.FirstOffset != end || res.LastOffset != end+1 {
		t.Fatalf("valid append after rejections: %+v %v, want [%d, %d]", res, err, end, end+1)
	}
	if l.Size() != size+int64(len(good)) {
		t.Fatalf("size %d after a %d-byte append to %d", l.Size(), len(good), size)
	}
	checkSequence(t, readAll(t, l, 0, 1<<20), 0, int(end)+2)
}

// Append writes the base offset and the leader epoch into the batch (outside
// the CRC, which stays valid) and stores exactly those bytes.
func TestAppendStampsOffsetAndEpoch(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{Logger: discardLogger})
	defer l.Close()
	var sent [][]byte
	for i, epoch := range []int32{0, 7, 7, 12} {
		if i > 0 {
			l.SetLeaderEpoch(epoch)
		}
		b := testBatch(t, 1+i, 30, int64(100+i))
		orig := bytes.Clone(b)
		res, err := l.Append(b)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b[offMagic:], orig[offMagic:]) || !bytes.Equal(b[offBatchLength:offLeaderEpoch], orig[offBatchLength:offLeaderEpoch]) {
			t.Fatal("Append changed bytes other than the base offset and leader epoch")
		}
		if got := int64(binary.BigEndian.Uint64(b)); got != res.FirstOffset {
			t.Fatalf("caller's batch has base offset %d, want %d", got, res.FirstOffset)
		}
		sent = append(sent, b)
	}
	got := readBatches(t, l, 0)
	if len(got) != len(sent) {
		t.Fatalf("read %d batches, want %d", len(got), len(sent))
	}
	wantBase := []int64{0, 1, 3, 6}
	wantEpoch := []int32{0, 7, 7, 12}
	for i, b := range got {
		h, err := checkStoredBatch(b)
		if err != nil {
			t.Fatalf("stored batch %d: %v", i, err)
		}
		if h.BaseOffset != wantBase[i] || h.LeaderEpoch != wantEpoch[i] {
			t.Fatalf("stored batch %d: base %d epoch %d, want %d and %d", i, h.BaseOffset, h.LeaderEpoch, wantBase[i], wantEpoch[i])
		}
		if !bytes.Equal(b, sent[i]) {
			t.Fatalf("stored batch %d differs from the stamped batch", i)
		}
	}
}

func TestRollOnSize(t *testing.T) {
	dir := t.TempDir()
	size := int64(len(testBatch(t, 2, 100, 1)))
	opts := Options{SegmentBytes: 3*size + size/2, Logger: discardLogger}
	l := mustOpen(t, dir, opts)
	defer l.Close()
	for i := range 10 {
		if _, err := l.Append(testBatch(t, 2, 100, int64(i))); err != nil {
			t.Fatal(err)
		}
		want := []int64{0, 6, 12, 18}[:i/3+1]
		if got := l.SegmentBases(); !slices.Equal(got, want) {
			t.Fatalf("after batch %d: segments %v, want %v", i, got, want)
		}
	}
	l.bg.Wait()
	for _, base := range []int64{0, 6, 12} {
		if got := fileSize(t, segmentName(dir, base, logSuffix)); got != 3*size {
			t.Fatalf("rolled segment %d is %d bytes, want %d (trimmed)", base, got, 3*size)
		}
	}
	// A batch larger than a segment goes alone into a new one.
	big := testBatch(t, 1, int(4*size), 1)
	if res, err := l.Append(big); err != nil || res.FirstOffset != 20 {
		t.Fatalf("big append: %+v %v", res, err)
	}
	if _, err := l.Append(testBatch(t, 1, 10, 1)); err != nil {
		t.Fatal(err)
	}
	if got, want := l.SegmentBases(), []int64{0, 6, 12, 18, 20, 21}; !slices.Equal(got, want) {
		t.Fatalf("segments %v, want %v", got, want)
	}
	checkSequence(t, readAll(t, l, 0, 1<<20), 0, 22)
}

// segment.ms counts from the first batch's max timestamp, as in Kafka; the
// batches here carry the fake clock's time, so it is also when the first
// batch was appended. The count survives a reopen.
func TestRollOnAge(t *testing.T) {
	dir := t.TempDir()
	var clock atomic.Int64
	clock.Store(1_700_000_000_000)
	opts := Options{SegmentAge: time.Hour, Now: func() time.Time { return time.UnixMilli(clock.Load()) }, Logger: discardLogger}
	l := mustOpen(t, dir, opts)
	defer func() { l.Close() }()
	step := func(advance time.Duration, want ...int64) {
		t.Helper()
		clock.Add(advance.Milliseconds())
		if _, err := l.Append(testBatch(t, 2, 10, clock.Load())); err != nil {
			t.Fatal(err)
		}
		if got := l.SegmentBases(); !slices.Equal(got, want) {
			t.Fatalf("at %v: segments %v, want %v", time.UnixMilli(clock.Load()).UTC(), got, want)
		}
	}
	step(0, 0)
	step(time.Hour, 0)               // exactly segment.ms: not yet
	step(time.Millisecond, 0, 4)     // older than segment.ms: roll
	step(30*time.Minute, 0, 4)       // the new segment's first batch is 30 min old
	step(30*time.Minute, 0, 4)       // 60 min
	step(time.Millisecond, 0, 4, 10) // 60 min 1 ms
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, dir, opts) // the active segment's first batch is at the clock's time
	step(30*time.Minute, 0, 4, 10)
	step(30*time.Minute, 0, 4, 10)
	step(time.Millisecond, 0, 4, 10, 16)
	// An empty active segment never rolls on age, and its count starts
	// with its first batch.
	if err := l.TruncateTo(16); err != nil {
		t.Fatal(err)
	}
	step(48*time.Hour, 0, 4, 10, 16)
	step(time.Hour, 0, 4, 10, 16)
	step(time.Millisecond, 0, 4, 10, 16, 20)
	checkSequence(t, readAll(t, l, 0, 1<<20), 0, 22)
}

func TestRollOnFullIndex(t *testing.T) {
	// 48-byte indexes hold 6 offset entries and 4 time entries; with an
	// entry due before every batch but the first, a segment takes 7
	// batches when only the offset index grows, 5 when both do.
	opts := Options{SegmentIndexBytes: 48, IndexIntervalBytes: 1, Logger: discardLogger}
	t.Run("offset index", func(t *testing.T) {
		dir := t.TempDir()
		l := mustOpen(t, dir, opts)
		defer l.Close()
		for i := range 15 {
			if _, err := l.Append(testBatch(t, 1, 10, 5)); err != nil { // one timestamp: one time entry
				t.Fatal(err)
			}
			want := []int64{0, 7, 14}[:i/7+1]
			if got := l.SegmentBases(); !slices.Equal(got, want) {
				t.Fatalf("after batch %d: segments %v, want %v", i, got, want)
			}
		}
		l.bg.Wait()
		if got := fileSize(t, segmentName(dir, 0, indexSuffix)); got != 48 {
			t.Fatalf("full offset index is %d bytes, want 48", got)
		}
		checkSequence(t, readAll(t, l, 0, 1), 0, 15)
	})
	t.Run("time index", func(t *testing.T) {
		dir := t.TempDir()
		l := mustOpen(t, dir, opts)
		defer l.Close()
		for i := range 12 {
			if _, err := l.Append(testBatch(t, 1, 10, int64(1000+i))); err != nil {
				t.Fatal(err)
			}
			want := []int64{0, 5, 10}[:i/5+1]
			if got := l.SegmentBases(); !slices.Equal(got, want) {
				t.Fatalf("after batch %d: segments %v, want %v", i, got, want)
			}
		}
		l.bg.Wait()
		if got := fileSize(t, segmentName(dir, 0, timeIndexSuffix)); got != 48 {
			t.Fatalf("full time index is %d bytes, want 48", got)
		}
		checkSequence(t, readAll(t, l, 0, 1), 0, 12)
	})
}

// Relative offsets are 32-bit: a batch whose last offset is more than
// MaxInt32 past the segment's base starts a segment at its own base.
func TestRollOnOffsetOverflow(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p-0")
	opts := Options{Logger: discardLogger}
	l := mustOpen(t, dir, opts)
	defer func() { l.Close() }()
	if _, err := l.Append(testBatch(t, 3, 10, 1)); err != nil {
		t.Fatal(err)
	}
	three := testBatch(t, 3, 10, 2)
	b1 := int64(math.MaxInt32) + 1 // last offset b1+2 is too far from 0
	b2 := b1 + math.MaxInt32 - 1   // last offset b2+2 is too far from b1
	b3 := b2 + math.MaxInt32 - 2   // last offset b3+2 is exactly MaxInt32 past b2: fits
	var sent [][]byte
	for i, c := range []struct {
		base  int64
		bases []int64
	}{
		{b1, []int64{0, b1}},
		{b2, []int64{0, b1, b2}},
		{b3, []int64{0, b1, b2}},
	} {
		b := replicated(three, c.base, int32(i))
		res, err := l.AppendReplicated(b)
		if err != nil || res.FirstOffset != c.base || res.LastOffset != c.base+2 {
			t.Fatalf("replicated append at %d: %+v %v", c.base, res, err)
		}
		if got := l.SegmentBases(); !slices.Equal(got, c.bases) {
			t.Fatalf("after the batch at %d: segments %v, want %v", c.base, got, c.bases)
		}
		sent = append(sent, b)
	}
	check := func() {
		t.Helper()
		if l.EndOffset() != b3+3 {
			t.Fatalf("EndOffset %d, want %d", l.EndOffset(), b3+3)
		}
		got := readBatches(t, l, 0)
		if len(got) != 4 {
			t.Fatalf("read %d batches, want 4", len(got))
		}
		for i, b := range sent {
			if !bytes.Equal(got[i+1], b) {
				t.Fatalf("batch at %d reads back different", binary.BigEndian.Uint64(b))
			}
		}
		// An offset in a gap reads the next batch.
		v, err := l.Read(1000, 1, l.EndOffset())
		if err != nil {
			t.Fatal(err)
		}
		data := viewBytesTB(t, &v)
		v.Release()
		if !bytes.Equal(data, sent[0]) {
			t.Fatal("a read in the gap did not return the next batch")
		}
	}
	check()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, dir, opts)
	check()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	makeUnclean(t, dir)
	l = mustOpen(t, dir, opts)
	check()
	if got := l.SegmentBases(); !slices.Equal(got, []int64{0, b1, b2}) {
		t.Fatalf("segments after unclean reopen %v", got)
	}
}

// A follower's append keeps the offsets and epochs it is given, accepts
// what Kafka's cleaner leaves (batches with fewer records than offsets,
// empty batches) and gaps, and rejects overlap and corruption without
// changing the log.
func TestAppendReplicated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p-0")
	opts := Options{SegmentBytes: 2 << 10, Logger: discardLogger}
	l := mustOpen(t, dir, opts)
	defer func() { l.Close() }()
	l.SetLeaderEpoch(3)
	if _, err := l.Append(testBatch(t, 4, 20, 1)); err != nil {
		t.Fatal(err)
	}

	// Cleaned: three records (offset deltas 0-2) covering ten offsets.
	cleaned := testBatch(t, 3, 20, 50)
	binary.BigEndian.PutUint32(cleaned[offLastOffsetDelta:], 9)
	withCRC(cleaned)
	// Empty: a header only, five offsets, no records.
	empty := bytes.Clone(testBatch(t, 5, 1, 60)[:BatchHeaderSize])
	binary.BigEndian.PutUint32(empty[offBatchLength:], minBatchLength)
	binary.BigEndian.PutUint32(empty[offLastOffsetDelta:], 4)
	binary.BigEndian.PutUint32(empty[offRecordCount:], 0)
	withCRC(empty)

	batches := [][]byte{
		replicated(testBatch(t, 2, 30, 10), 4, 5),      // [4, 5]
		replicated(testBatch(t, 1, 30, 11), 6, 5),      // [6]
		replicated(cleaned, 7, 6),                      // [7, 16], records 7-9
		replicated(empty, 17, 6),                       // [17, 21], no records
		replicated(testBatch(t, 2, 30, 12), 40, 8),     // a gap: [40, 41]
		replicated(testBatch(t, 3, 600, 13), 42, 8),    // [42, 44]
		replicated(testBatch(t, 3, 600, 14), 100, 9),   // [100, 102]
		replicated(testBatch(t, 3, 600, 15), 103, 9),   // [103, 105], rolls
		replicated(testBatch(t, 1, 10, 16), 1<<40, 10), // far ahead
	}
	for _, b := range batches {
		if _, err := checkStoredBatch(b); err != nil {
			t.Fatalf("test batch fails its check: %v", err)
		}
	}
	res, err := l.AppendReplicated(bytes.Join(batches[:4], nil))
	if err != nil || res.FirstOffset != 4 || res.LastOffset != 21 {
		t.Fatalf("AppendReplicated: %+v %v", res, err)
	}
	res, err = l.AppendReplicated(bytes.Join(batches[4:], nil))
	if err != nil || res.FirstOffset != 40 || res.LastOffset != 1<<40 {
		t.Fatalf("AppendReplicated: %+v %v", res, err)
	}
	end, size := l.EndOffset(), l.Size()
	if end != 1<<40+1 {
		t.Fatalf("EndOffset %d, want %d", end, int64(1<<40+1))
	}
	if n := len(l.SegmentBases()); n < 3 {
		t.Fatalf("want the 2 KiB segments to roll, got %v", l.SegmentBases())
	}

	// Rejections leave the log as it was.
	bad := map[string]struct {
		b    []byte
		want error
	}{
		"base below the end":   {replicated(testBatch(t, 1, 5, 1), end-1, 10), ErrNonMonotonic},
		"base at an old batch": {replicated(testBatch(t, 1, 5, 1), 4, 10), ErrNonMonotonic},
		"corrupt CRC": {func() []byte {
			b := replicated(testBatch(t, 2, 5, 1), end, 10)
			b[len(b)-1] ^= 0x40
			return b
		}(), ErrInvalidBatch},
		"corrupt CRC field": {func() []byte {
			b := replicated(testBatch(t, 2, 5, 1), end, 10)
			b[offCRC+3] ^= 0x01
			return b
		}(), ErrInvalidBatch},
		"magic 1": {func() []byte {
			b := replicated(testBatch(t, 2, 5, 1), end, 10)
			b[offMagic] = 1
			return withCRC(b)
		}(), ErrInvalidBatch},
		"cut short": {replicated(testBatch(t, 2, 5, 1), end, 10)[:70], ErrInvalidBatch},
	}
	for name, c := range bad {
		res, err := l.AppendReplicated(c.b)
		if !errors.Is(err, c.want) {
			t.Fatalf("%s: %v, want %v", name, err, c.want)
		}
		if res.FirstOffset != -1 || l.EndOffset() != end || l.Size() != size {
			t.Fatalf("%s: result %+v, log end %d size %d, was %d and %d", name, res, l.EndOffset(), l.Size(), end, size)
		}
	}
	// A bad batch after good ones: whatever the result reports is exactly
	// what the log took.
	good := replicated(testBatch(t, 1, 5, 1), end, 11)
	res, err = l.AppendReplicated(bytes.Join([][]byte{good, bad["corrupt CRC"].b}, nil))
	if !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("good then corrupt: %v", err)
	}
	if res.FirstOffset >= 0 {
		if res.FirstOffset != end || res.LastOffset != end || l.EndOffset() != end+1 {
			t.Fatalf("good then corrupt: result %+v with log end %d", res, l.EndOffset())
		}
		batches = append(batches, good)
		end++
	} else if l.EndOffset() != end {
		t.Fatalf("good then corrupt: nothing reported but the log end moved to %d", l.EndOffset())
	}

	check := func() {
		t.Helper()
		if l.EndOffset() != end {
			t.Fatalf("EndOffset %d, want %d", l.EndOffset(), end)
		}
		got := readBatches(t, l, 0)
		if len(got) != len(batches)+1 {
			t.Fatalf("read %d batches, want %d", len(got), len(batches)+1)
		}
		for i, b := range batches {
			if !bytes.Equal(got[i+1], b) {
				h, _ := checkStoredBatch(got[i+1])
				t.Fatalf("batch %d reads back as %+v", i, h)
			}
		}
		// Offsets without records read the batch that covers them, or the
		// next one.
		for off, wantBase := range map[int64]int64{12: 7, 16: 7, 19: 17, 22: 40, 30: 40, 99: 100} {
			v, err := l.Read(off, 1, l.EndOffset())
			if err != nil {
				t.Fatal(err)
			}
			data := viewBytesTB(t, &v)
			v.Release()
			if h, err := checkStoredBatch(data); err != nil || h.BaseOffset != wantBase {
				t.Fatalf("Read(%d) returned the batch at %d (%v), want %d", off, h.BaseOffset, err, wantBase)
			}
		}
		recs := readRange(t, l, 0, 22, 1<<20)
		var offs []int64
		for _, r := range recs {
			offs = append(offs, r.Offset)
		}
		if want := []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(offs, want) {
			t.Fatalf("record offsets %v, want %v", offs, want)
		}
	}
	check()
	res, err = l.AppendReplicated(replicated(testBatch(t, 1, 5, 1), end+5, 12))
	if err != nil || res.FirstOffset != end+5 {
		t.Fatalf("append after rejections: %+v %v", res, err)
	}
	batches = append(batches, replicated(testBatch(t, 1, 5, 1), end+5, 12))
	end += 6
	check()

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, dir, opts)
	check()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	makeUnclean(t, dir)
	l = mustOpen(t, dir, opts)
	check()
}

// A failed write is sticky: the append fails with ErrLogFailed, so do all
// later writes, reads of earlier data still work, and a reopen recovers
// exactly the data before the failure.
func TestStickyWriteError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p-0")
	opts := Options{SegmentBytes: 2 << 10, Logger: discardLogger}
	l := mustOpen(t, dir, opts)
	defer func() { l.Close() }()
	for i := range 20 {
		if _, err := l.Append(testBatch(t, 2, 50, int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	end := l.EndOffset()
	want := readAll(t, l, 0, 1<<20)
	l.bg.Wait()

	// Swap the active segment's file for a read-only descriptor of the
	// same file: reads work, writes fail with EBADF.
	l.mu.Lock()
	f := l.mu.files
	path := f.log.Name()
	ro, err := os.Open(path)
	if err != nil {
		l.mu.Unlock()
		t.Fatal(err)
	}
	rw := f.log
	f.log, f.fd = osFile{ro}, int(ro.Fd())
	pos := l.mu.active.size.Load()
	l.mu.Unlock()

	failed := testBatch(t, 3, 50, 99)
	_, err = l.Append(failed)
	if !errors.Is(err, ErrLogFailed) || !errors.Is(err, syscall.EBADF) || !strings.Contains(err.Error(), path) {
		t.Fatalf("failed write: %v; want ErrLogFailed wrapping EBADF and naming %s", err, path)
	}
	// The write may have reached the file in part: put half of it there.
	if _, err := rw.WriteAt(failed[:len(failed)/2], pos); err != nil {
		t.Fatal(err)
	}
	// The file works again, but the log must not trust it until reopened.
	l.mu.Lock()
	f.log, f.fd = rw, int(rw.OS().Fd())
	l.mu.Unlock()
	ro.Close()
	for name, op := range map[string]func() error{
		"Append":           func() error { _, err := l.Append(testBatch(t, 1, 5, 1)); return err },
		"AppendReplicated": func() error { _, err := l.AppendReplicated(replicated(testBatch(t, 1, 5, 1), end, 0)); return err },
		"Roll":             l.Roll,
		"TruncateTo":       func() error { return l.TruncateTo(1) },
	} {
		if err := op(); !errors.Is(err, ErrLogFailed) {
			t.Fatalf("%s after the failure: %v, want ErrLogFailed", name, err)
		}
	}
	if l.EndOffset() != end {
		t.Fatalf("EndOffset %d after the failure, want %d", l.EndOffset(), end)
	}
	sameRecords(t, readAll(t, l, 0, 1<<20), want)
	sameRecords(t, readAll(t, l, 0, 1), want)
	if v, err := l.Read(end, 1<<20, end+100); err != nil || v.Len() != 0 {
		t.Fatalf("read at the end after the failure: %d bytes, %v", v.Len(), err)
	}

	l.Close()
	l = mustOpen(t, dir, opts)
	if l.EndOffset() != end {
		t.Fatalf("EndOffset %d after reopen, want %d", l.EndOffset(), end)
	}
	if got := fileSize(t, path); got != pos {
		t.Fatalf("active segment is %d bytes after reopen, want %d", got, pos)
	}
	sameRecords(t, readAll(t, l, 0, 1<<20), want)
	res, err := l.Append(testBatch(t, 3, 50, 100))
	if err != nil || res.FirstOffset != end {
		t.Fatalf("append after reopen: %+v %v", res, err)
	}
	checkSequence(t, readAll(t, l, 0, 1<<20), 0, int(end)+3)
}

// A full disk: the append that finds no space fails clearly (ENOSPC, naming
// the file) and shows nothing of itself; after space is freed and the log
// reopened, everything acknowledged is there and appends work.
func TestAppendDiskFull(t *testing.T) {
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a 2 MiB tmpfs (needs root; CI runs as root): %v: %s", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
			exec.Command("umount", "-l", mnt).Run()
		}
	})
	filler := filepath.Join(mnt, "filler")
	mustWrite(t, filler, bytes.Repeat([]byte{0xa5}, 1<<20))

	dir := filepath.Join(mnt, "p-0")
	opts := Options{SegmentBytes: 256 << 10, Logger: discardLogger}
	l := mustOpen(t, dir, opts)
	t.Cleanup(func() { l.Close() })
	var acked int64
	var failure error
	for i := range 1000 {
		res, err := l.Append(testBatch(t, 4, 1000, int64(i)))
		if err != nil {
			failure = err
			break
		}
		if res.FirstOffset != acked {
			t.Fatalf("append %d at %d, want %d", i, res.FirstOffset, acked)
		}
		acked = res.LastOffset + 1
	}
	if failure == nil {
		t.Fatal("1000 appends of 4 KiB fit in a 2 MiB file system holding a 1 MiB file")
	}
	if !errors.Is(failure, syscall.ENOSPC) || !strings.Contains(failure.Error(), dir+"/") {
		t.Fatalf("append on a full disk: %v; want an error wrapping ENOSPC that names the file", failure)
	}
	t.Logf("full after %d records: %v", acked, failure)
	if acked == 0 || len(l.SegmentBases()) < 2 {
		t.Fatalf("only %d records in %v before the disk was full", acked, l.SegmentBases())
	}
	if _, err := l.Append(testBatch(t, 4, 1000, 1)); err == nil {
		t.Fatal("an append succeeded on a full disk")
	} else {
		t.Logf("the next append: %v", err)
	}
	if l.EndOffset() != acked {
		t.Fatalf("EndOffset %d after failed appends, want %d", l.EndOffset(), acked)
	}
	checkSequence(t, readAll(t, l, 0, 1<<20), 0, int(acked))
	if v, err := l.Read(acked, 1<<20, acked+100); err != nil || v.Len() != 0 {
		t.Fatalf("read at the end: %d bytes, %v", v.Len(), err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l = mustOpen(t, dir, opts)
	if l.EndOffset() != acked {
		t.Fatalf("EndOffset %d after reopen, want %d", l.EndOffset(), acked)
	}
	checkSequence(t, readAll(t, l, 0, 1<<20), 0, int(acked))
	for i := range 100 {
		res, err := l.Append(testBatch(t, 4, 1000, int64(i)))
		if err != nil || res.FirstOffset != acked+int64(4*i) {
			t.Fatalf("append %d after freeing space: %+v %v", i, res, err)
		}
	}
	checkSequence(t, readAll(t, l, 0, 1<<20), 0, int(acked)+400)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// allocatedBytes sums the blocks allocated to the files under dir.
func allocatedBytes(tb testing.TB, dir string) (int64, int) {
	tb.Helper()
	var total int64
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		total += fi.Sys().(*syscall.Stat_t).Blocks * 512
		files++
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return total, files
}

// A thousand idle partitions, each holding one small batch, reserve well
// under a gigabyte of disk between them.
func TestThousandIdlePartitionsSpace(t *testing.T) {
	start := time.Now()
	dir := t.TempDir()
	st, err := OpenStore(dir, StoreOptions{Log: Options{Logger: discardLogger}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id := NewTopicID()
	for p := range int32(1000) {
		l, err := st.CreateLog(Partition{"idle", p}, id)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := l.Append(testBatch(t, 1, 100, 1)); err != nil || res.FirstOffset != 0 {
			t.Fatalf("partition %d: %+v %v", p, res, err)
		}
	}
	total, files := allocatedBytes(t, dir)
	t.Logf("1000 idle partitions: %d files, %.1f MiB allocated (%.0f KiB a partition), built in %v",
		files, float64(total)/(1<<20), float64(total)/1000/1024, time.Since(start).Round(time.Millisecond))
	if total >= 1<<30 {
		t.Fatalf("1000 idle partitions allocate %d bytes, want well under 1 GiB", total)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	closed, _ := allocatedBytes(t, dir)
	t.Logf("after Close: %.1f MiB allocated", float64(closed)/(1<<20))
}
