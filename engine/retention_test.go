package engine

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// fakeClock is a settable clock for Options.Now.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestRetentionByTime(t *testing.T) {
	clock := &fakeClock{t: time.UnixMilli(1_700_000_000_000)}
	dir := t.TempDir()
	opts := Options{SegmentBytes: 2 << 10, Retention: time.Hour, Now: clock.now}
	l := mustOpen(t, dir, opts)
	// Ten minutes of data a minute apart, each batch stamped with the clock.
	for range 10 {
		for range 5 {
			if _, err := l.Append(testBatch(t, 2, 100, clock.t.UnixMilli())); err != nil {
				t.Fatal(err)
			}
		}
		clock.t = clock.t.Add(time.Minute)
	}
	segs := len(l.SegmentBases())
	if segs < 5 {
		t.Fatalf("want several segments, got %d", segs)
	}
	if n, err := l.ApplyRetention(); err != nil || n != 0 {
		t.Fatalf("nothing is an hour old yet: deleted %d, %v", n, err)
	}
	// A view of the oldest segment, held across its deletion.
	v, err := l.Read(0, 1<<20, l.EndOffset())
	if err != nil {
		t.Fatal(err)
	}
	before := viewBytes(t, &v)

	// 65 minutes after the first batch: the first five minutes expire.
	clock.t = time.UnixMilli(1_700_000_000_000).Add(65*time.Minute + time.Second)
	replicatedAll(l)
	n, err := l.ApplyRetention()
	if err != nil || n == 0 {
		t.Fatalf("retention deleted %d segments: %v", n, err)
	}
	start := l.StartOffset()
	if start == 0 || start != l.SegmentBases()[0] {
		t.Fatalf("start offset %d, first segment %d", start, l.SegmentBases()[0])
	}
	if _, err := l.Read(0, 100, l.EndOffset()); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the start offset: %v", err)
	}
	// Every segment left holds data younger than an hour.
	cut := clock.t.Add(-time.Hour).UnixMilli()
	for _, r := range readAll(t, l, start, 1<<20) {
		if r.Timestamp < cut-60_000 {
			t.Fatalf("record at %d (ts %d) survived retention (cut %d)", r.Offset, r.Timestamp, cut)
		}
	}
	if got := viewBytes(t, &v); !bytes.Equal(got, before) {
		t.Fatal("a view held across retention changed")
	}
	v.Release()

	// The start offset survives a restart.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, dir, opts)
	defer l.Close()
	if l.StartOffset() != start {
		t.Fatalf("start offset after reopen %d, want %d", l.StartOffset(), start)
	}
}

// An idle partition's data expires too: the expired active segment is
// rolled, then deleted, and appends continue at the same offsets.
func TestRetentionExpiresIdleActiveSegment(t *testing.T) {
	clock := &fakeClock{t: time.UnixMilli(1_700_000_000_000)}
	l := mustOpen(t, t.TempDir(), Options{Retention: time.Hour, Now: clock.now})
	defer l.Close()
	for range 3 {
		if _, err := l.Append(testBatch(t, 4, 50, clock.t.UnixMilli())); err != nil {
			t.Fatal(err)
		}
	}
	end := l.EndOffset()
	clock.t = clock.t.Add(2 * time.Hour)
	replicatedAll(l)
	n, err := l.ApplyRetention()
	if err != nil || n != 1 {
		t.Fatalf("idle expired segment: deleted %d, %v", n, err)
	}
	if l.StartOffset() != end || l.EndOffset() != end || l.Size() != 0 {
		t.Fatalf("after expiry start %d end %d size %d, want %d, %d, 0", l.StartOffset(), l.EndOffset(), l.Size(), end, end)
	}
	res, err := l.Append(testBatch(t, 1, 10, clock.t.UnixMilli()))
	if err != nil || res.FirstOffset != end {
		t.Fatalf("append after expiry: %+v %v", res, err)
	}
}

func TestRetentionBySize(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{SegmentBytes: 4 << 10, RetentionBytes: 10 << 10, Retention: -1})
	defer l.Close()
	for range 100 {
		if _, err := l.Append(testBatch(t, 2, 200, 1)); err != nil {
			t.Fatal(err)
		}
	}
	before := l.Size()
	replicatedAll(l)
	if _, err := l.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	after := l.Size()
	// As Kafka: whole segments go while the rest still holds at least
	// retention.bytes, so what stays is within one segment above it.
	first := l.view.Load().floor(l.StartOffset()).size.Load()
	if after < 10<<10 || after-first >= 10<<10 {
		t.Fatalf("size %d -> %d (first segment %d); want in [10 KiB, 10 KiB + first segment)", before, after, first)
	}
	checkSequence(t, readAll(t, l, l.StartOffset(), 1<<20), l.StartOffset(), int(l.EndOffset()-l.StartOffset()))
}

func TestDeleteRecordsBefore(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, Options{SegmentBytes: 4 << 10})
	for range 60 {
		if _, err := l.Append(testBatch(t, 2, 200, 1)); err != nil {
			t.Fatal(err)
		}
	}
	segs := len(l.SegmentBases())
	if _, err := l.DeleteRecordsBefore(l.EndOffset() + 1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("deleting past the end: %v", err)
	}
	start, err := l.DeleteRecordsBefore(51)
	if err != nil || start != 51 {
		t.Fatalf("DeleteRecordsBefore(51) = %d, %v", start, err)
	}
	if len(l.SegmentBases()) >= segs {
		t.Fatal("segments wholly below the new start were not deleted")
	}
	if _, err := l.Read(50, 100, l.EndOffset()); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the new start: %v", err)
	}
	recs := readAll(t, l, 51, 1<<20)
	checkSequence(t, recs, 51, int(l.EndOffset()-51))
	if start, _ := l.DeleteRecordsBefore(10); start != 51 {
		t.Fatalf("the start moved backwards to %d", start)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, dir, Options{SegmentBytes: 4 << 10})
	defer l.Close()
	if l.StartOffset() != 51 {
		t.Fatalf("start after reopen %d, want 51", l.StartOffset())
	}
}

// Segments whose indexes were lost (rebuilt at open) still expire: the
// rebuilt time index records the segment's newest timestamp.
func TestRetentionWithRebuiltIndexes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r-0")
	writeSegments(t, dir, 20, 2, 3, true) // every record stamped 1000 ms, no index files
	clock := &fakeClock{t: time.UnixMilli(1000).Add(2 * time.Hour)}
	l := mustOpen(t, dir, Options{Retention: time.Hour, Now: clock.now})
	defer l.Close()
	end := l.EndOffset()
	replicatedAll(l)
	n, err := l.ApplyRetention()
	if err != nil || n != 20 || l.StartOffset() != end {
		t.Fatalf("deleted %d of 20 expired segments (%v); start %d, end %d", n, err, l.StartOffset(), end)
	}
}

// replicatedAll moves l's high watermark to its log end, as a leader alone
// in its ISR does: retention deletes only below it.
func replicatedAll(l *Log) { l.SetHighWatermark(l.EndOffset()) }

// Retention deletes only segments wholly below the high watermark (Kafka's
// deletableSegments): records not yet replicated stay, however old, and go
// once the high watermark passes them.
func TestRetentionKeepsWhatIsAboveTheHighWatermark(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1_700_000_000, 0)
	l := mustOpen(t, dir, Options{Logger: discardLogger, SegmentBytes: 2048, Retention: time.Hour, Now: func() time.Time { return now }})
	for i := 0; i < 6; i++ {
		if _, err := l.Append(testBatch(t, 10, 100, now.Add(-2*time.Hour).UnixMilli())); err != nil {
			t.Fatal(err)
		}
	}
	segs := len(l.SegmentBases())
	if segs < 3 {
		t.Fatalf("%d segments, want at least 3", segs)
	}
	second := l.SegmentBases()[1]
	l.SetHighWatermark(second) // the first segment replicated, the rest not
	if n, err := l.ApplyRetention(); err != nil || n != 1 || l.StartOffset() != second {
		t.Fatalf("high watermark at the second segment: deleted %d (%v), start %d; want 1 segment, start %d", n, err, l.StartOffset(), second)
	}
	replicatedAll(l)
	if n, err := l.ApplyRetention(); err != nil || n != segs-1 || l.StartOffset() != l.EndOffset() {
		t.Fatalf("everything replicated: deleted %d (%v), start %d end %d; want %d segments, start at the end", n, err, l.StartOffset(), l.EndOffset(), segs-1)
	}
}
