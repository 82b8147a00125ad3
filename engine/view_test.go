package engine

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// appendN appends n batches of recs records each.
func appendN(t *testing.T, l *Log, n, recs int) {
	t.Helper()
	for i := range n {
		if _, err := l.Append(testBatch(t, recs, 200, int64(i))); err != nil {
			t.Fatal(err)
		}
	}
}

func viewBytes(t *testing.T, v *View) []byte {
	t.Helper()
	b, err := v.AppendTo(nil)
	if err != nil {
		t.Fatalf("reading view: %v", err)
	}
	return b
}

func deletedFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "*"+deletedSuffix))
	return m
}

func TestViewSurvivesSegmentDeletion(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, Options{SegmentBytes: 4 << 10})
	defer l.Close()
	appendN(t, l, 40, 5)
	bases := l.SegmentBases()
	if len(bases) < 4 {
		t.Fatalf("want several segments, got %v", bases)
	}
	// Hold a view of the third segment, then truncate into the first: the
	// third segment is removed while viewed.
	v, err := l.Read(bases[2], 1<<20, l.EndOffset())
	if err != nil {
		t.Fatal(err)
	}
	before := viewBytes(t, &v)
	if err := l.TruncateTo(bases[0] + 3); err != nil {
		t.Fatal(err)
	}
	if got := l.SegmentBases(); len(got) != 1 {
		t.Fatalf("after truncation segments %v, want one", got)
	}
	if _, err := os.Stat(segmentName(dir, bases[2], logSuffix)); !os.IsNotExist(err) {
		t.Fatalf("removed segment's file still under its name: %v", err)
	}
	// New appends must not disturb the held view.
	appendN(t, l, 40, 5)
	after := viewBytes(t, &v)
	var sink bytes.Buffer
	if _, err := v.WriteTo(&sink); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) || !bytes.Equal(before, sink.Bytes()) {
		t.Fatal("a held view changed after its segment was deleted")
	}
	if len(deletedFiles(t, dir)) == 0 {
		t.Fatal("expected the viewed segment's files to wait under .deleted")
	}
	v.Release()
	if left := deletedFiles(t, dir); len(left) != 0 {
		t.Fatalf("files of released segments remain: %v", left)
	}
}

// A view held over a truncation keeps its bytes, whether the segment has
// index entries or is too small to have any (then no index file exists).
func TestViewSurvivesTruncateAndAppend(t *testing.T) {
	for _, valueSize := range []int{100, 10} {
		t.Run(fmt.Sprintf("value=%dB", valueSize), func(t *testing.T) {
			dir := t.TempDir()
			l := mustOpen(t, dir, Options{})
			defer l.Close()
			for i := range 10 {
				if _, err := l.Append(testBatch(t, 10, valueSize, int64(i))); err != nil {
					t.Fatal(err)
				}
			}
			v, err := l.Read(50, 1<<20, l.EndOffset())
			if err != nil {
				t.Fatal(err)
			}
			before := viewBytes(t, &v)
			if err := l.TruncateTo(45); err != nil {
				t.Fatal(err)
			}
			if l.EndOffset() != 40 { // the batch [40, 49] straddles 45: removed whole
				t.Fatalf("EndOffset after truncation to 45 is %d, want 40", l.EndOffset())
			}
			// Appends reuse offsets 40.. and the file positions the view covers.
			for i := range 10 {
				if _, err := l.Append(testBatch(t, 7, 300, int64(100+i))); err != nil {
					t.Fatal(err)
				}
			}
			if got := viewBytes(t, &v); !bytes.Equal(got, before) {
				t.Fatal("a held view changed after TruncateTo and new appends")
			}
			v.Release()
			// The log itself reads the new data.
			recs := readAll(t, l, 40, 1<<20)
			checkSequence(t, recs, 40, 70)
			if len(recs[0].Value) != 300 {
				t.Fatalf("offset 40 holds a %d-byte value, want the new 300-byte one", len(recs[0].Value))
			}
			if left := deletedFiles(t, dir); len(left) != 0 {
				t.Fatalf("files of the replaced segment remain: %v", left)
			}
		})
	}
}

func TestTruncateInPlaceAndReopen(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, Options{SegmentBytes: 8 << 10, IndexIntervalBytes: 512})
	for i := range 60 {
		if _, err := l.Append(testBatch(t, 4, 100, int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	bases := l.SegmentBases()
	cut := bases[1] + 6 // inside the second segment, inside a 4-record batch
	l.bg.Wait()         // background flushes of rolled segments hold references too
	if err := l.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	want := cut - cut%4
	if l.EndOffset() != want {
		t.Fatalf("EndOffset %d, want %d", l.EndOffset(), want)
	}
	if len(deletedFiles(t, dir)) != 0 {
		t.Fatal("an unviewed truncation left .deleted files")
	}
	checkSequence(t, readAll(t, l, 0, 1<<20), 0, int(want))
	if _, err := l.Append(testBatch(t, 2, 10, 9)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, dir, Options{SegmentBytes: 8 << 10, IndexIntervalBytes: 512})
	defer l.Close()
	checkSequence(t, readAll(t, l, 0, 1<<20), 0, int(want)+2)
	// Truncating below the start restarts the log there.
	if err := l.TruncateTo(0); err != nil {
		t.Fatal(err)
	}
	if l.EndOffset() != 0 || l.StartOffset() != 0 || len(l.SegmentBases()) != 1 {
		t.Fatalf("after TruncateTo(0): start %d end %d segments %v", l.StartOffset(), l.EndOffset(), l.SegmentBases())
	}
}

// A read bounded by upTo never returns a batch at or past it, even while
// appends grow the segment between the reader's loads of the end offset and
// of the segment's size.
func TestReadNeverPassesUpToUnderAppends(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{})
	defer l.Close()
	batch := testBatch(t, 3, 20, 1)
	if _, err := l.Append(batch); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := append([]byte(nil), batch...)
		for range 20000 {
			if _, err := l.Append(b); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	reads := 0
	for {
		select {
		case <-done:
			if reads == 0 {
				t.Fatal("no reads ran alongside the appends")
			}
			return
		default:
		}
		upTo := l.EndOffset()
		v, err := l.Read(max(upTo-6, 0), 1<<20, upTo)
		if err != nil {
			t.Fatal(err)
		}
		data := viewBytes(t, &v)
		v.Release()
		for p := 0; p < len(data); {
			h, err := checkStoredBatch(data[p:])
			if err != nil {
				t.Fatal(err)
			}
			if h.LastOffset() >= upTo {
				t.Fatalf("read bounded by %d returned a batch ending at %d", upTo, h.LastOffset())
			}
			p += int(h.Size())
		}
		reads++
	}
}
