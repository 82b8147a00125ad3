package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testBatch builds a batch of n records whose values name their index.
func testBatch(tb testing.TB, n int, valueSize int, ts int64) []byte {
	tb.Helper()
	var b BatchBuilder
	for i := range n {
		v := bytes.Repeat([]byte{'v'}, valueSize)
		copy(v, fmt.Sprintf("r%d", i))
		b.Add(Record{Timestamp: ts, Key: []byte(fmt.Sprintf("k%d", i)), Value: v})
	}
	return append([]byte(nil), b.Build()...)
}

func mustOpen(tb testing.TB, dir string, opts Options) *Log {
	tb.Helper()
	l, err := OpenLog(dir, opts)
	if err != nil {
		tb.Fatalf("OpenLog: %v", err)
	}
	return l
}

// readAll reads every record in [from, EndOffset) through Read.
func readAll(tb testing.TB, l *Log, from int64, maxBytes int64) []Record {
	tb.Helper()
	var out []Record
	for off := from; off < l.EndOffset(); {
		v, err := l.Read(off, maxBytes, l.EndOffset())
		if err != nil {
			tb.Fatalf("Read(%d): %v", off, err)
		}
		if v.Len() == 0 {
			tb.Fatalf("Read(%d) returned nothing below the end %d", off, l.EndOffset())
		}
		data, err := v.AppendTo(nil)
		v.Release()
		if err != nil {
			tb.Fatalf("AppendTo: %v", err)
		}
		it := NewRecordIterator(data)
		n := 0
		for it.Next() {
			r := it.Record()
			if r.Offset < off {
				continue
			}
			r.Key = append([]byte(nil), r.Key...)
			r.Value = append([]byte(nil), r.Value...)
			r.Headers = nil
			out = append(out, r)
			off = r.Offset + 1
			n++
		}
		if err := it.Err(); err != nil {
			tb.Fatalf("iterating read at %d: %v", off, err)
		}
		if n == 0 {
			tb.Fatalf("read at %d gave no records", off)
		}
	}
	return out
}

func checkSequence(tb testing.TB, recs []Record, from int64, want int) {
	tb.Helper()
	if len(recs) != want {
		tb.Fatalf("got %d records, want %d", len(recs), want)
	}
	for i, r := range recs {
		if r.Offset != from+int64(i) {
			tb.Fatalf("record %d has offset %d, want %d", i, r.Offset, from+int64(i))
		}
	}
}

func TestAppendReadReopen(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, Options{SegmentBytes: 16 << 10})
	var next int64
	for i := range 200 {
		b := testBatch(t, 1+i%7, 100, int64(1000+i))
		res, err := l.Append(b)
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		n := int64(1 + i%7)
		if res.FirstOffset != next || res.LastOffset != next+n-1 {
			t.Fatalf("append %d: got [%d,%d], want [%d,%d]", i, res.FirstOffset, res.LastOffset, next, next+n-1)
		}
		next += n
	}
	if l.EndOffset() != next {
		t.Fatalf("EndOffset %d, want %d", l.EndOffset(), next)
	}
	if l.segmentCount() < 5 {
		t.Fatalf("expected several segments with 16 KiB segments, got %d", l.segmentCount())
	}
	checkSequence(t, readAll(t, l, 0, 1<<20), 0, int(next))
	checkSequence(t, readAll(t, l, 0, 1), 0, int(next)) // one batch at a time
	checkSequence(t, readAll(t, l, 77, 3000), 77, int(next-77))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Segments were trimmed on roll and close.
	for _, base := range l.SegmentBases() {
		_ = base
	}
	l = mustOpen(t, dir, Options{SegmentBytes: 16 << 10})
	defer l.Close()
	if l.EndOffset() != next {
		t.Fatalf("after reopen EndOffset %d, want %d", l.EndOffset(), next)
	}
	checkSequence(t, readAll(t, l, 0, 5000), 0, int(next))
	res, err := l.Append(testBatch(t, 3, 10, 5))
	if err != nil || res.FirstOffset != next {
		t.Fatalf("append after reopen: %+v %v", res, err)
	}
}

func TestReadBounds(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{})
	defer l.Close()
	for range 10 {
		if _, err := l.Append(testBatch(t, 10, 50, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Read(101, 1000, 200); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read past end: %v", err)
	}
	v, err := l.Read(100, 1000, 100)
	if err != nil || v.Len() != 0 {
		t.Fatalf("read at end: %d %v", v.Len(), err)
	}
	// upTo stops before the batch holding 50.
	v, err = l.Read(0, 1<<20, 50)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := v.AppendTo(nil)
	v.Release()
	it := NewRecordIterator(data)
	last := int64(-1)
	for it.Next() {
		last = it.Record().Offset
	}
	if last != 49 {
		t.Fatalf("read up to 50 ended at %d", last)
	}
	// A batch larger than maxBytes is still returned whole.
	v, err = l.Read(35, 10, 100)
	if err != nil {
		t.Fatal(err)
	}
	data, _ = v.AppendTo(nil)
	v.Release()
	h, err := checkStoredBatch(data)
	if err != nil || h.BaseOffset != 30 || h.Size() != int64(len(data)) {
		t.Fatalf("small read: %+v %v (%d bytes)", h, err, len(data))
	}
}

func TestPreallocationAndTrim(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, Options{})
	if _, err := l.Append(testBatch(t, 1, 100, 1)); err != nil {
		t.Fatal(err)
	}
	path := segmentName(dir, 0, logSuffix)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() < preallocMin || fi.Size() > 4*preallocMin {
		t.Fatalf("active segment file is %d bytes; want a preallocated chunk of about %d", fi.Size(), preallocMin)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	fi, _ = os.Stat(path)
	if fi.Size() != l.Size() {
		t.Fatalf("closed segment is %d bytes, data is %d", fi.Size(), l.Size())
	}
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownFile)); err != nil {
		t.Fatalf("no clean-shutdown marker: %v", err)
	}
}

func TestViewWriteTo(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{})
	defer l.Close()
	want := testBatch(t, 5, 100, 1)
	if _, err := l.Append(want); err != nil {
		t.Fatal(err)
	}
	v, err := l.Read(0, 1<<20, l.EndOffset())
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release()
	var buf bytes.Buffer
	n, err := v.WriteTo(&buf)
	if err != nil || n != int64(len(want)) || !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("WriteTo: %d %v, equal=%v", n, err, bytes.Equal(buf.Bytes(), want))
	}
	var _ io.WriterTo = &v
	_ = time.Now
}
