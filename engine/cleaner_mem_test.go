package engine

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// fillKeyed appends records of valueSize bytes until the log holds size
// bytes, cycling through keys, 100 records a batch. It returns the model.
func fillKeyed(tb testing.TB, l *Log, size int64, keys, valueSize int, ts int64) *model {
	tb.Helper()
	m := newModel()
	var bb BatchBuilder
	val := bytes.Repeat([]byte{'v'}, valueSize)
	recs := make([]kv, 100)
	for i := 0; l.Size() < size; {
		bb.Reset()
		for j := range recs {
			k := fmt.Sprintf("key-%07d", i%keys)
			copy(val, fmt.Sprintf("%d ", i))
			recs[j] = kv{key: k}
			bb.Add(Record{Timestamp: ts, Key: []byte(k), Value: val})
			i++
		}
		res, err := l.Append(bb.Build())
		if err != nil {
			tb.Fatal(err)
		}
		for j, r := range recs {
			m.latest[r.key] = res.FirstOffset + int64(j)
		}
	}
	return m
}

// checkLatest checks the compacted log holds exactly one record per key,
// at its latest offset.
func (m *model) checkLatestOnly(tb testing.TB, l *Log) {
	tb.Helper()
	seen := 0
	for off := l.StartOffset(); off < l.EndOffset(); {
		v, err := l.Read(off, 8<<20, l.EndOffset())
		if err != nil {
			tb.Fatal(err)
		}
		data, _ := v.AppendTo(nil)
		v.Release()
		it := NewRecordIterator(data)
		for it.Next() {
			r := it.Record()
			if r.Offset < off {
				continue
			}
			if m.latest[string(r.Key)] != r.Offset {
				tb.Fatalf("key %q at %d, its latest is at %d", r.Key, r.Offset, m.latest[string(r.Key)])
			}
			seen++
			off = r.Offset + 1
		}
		if err := it.Err(); err != nil {
			tb.Fatal(err)
		}
		if h, err := checkStoredBatch(data[lastBatchStart(data):]); err == nil {
			off = max(off, h.LastOffset()+1)
		}
	}
	if seen != len(m.latest) {
		tb.Fatalf("%d records after cleaning, want one per key: %d", seen, len(m.latest))
	}
}

// lastBatchStart is the position of the last whole batch in data.
func lastBatchStart(data []byte) int {
	last := 0
	for p := 0; p < len(data); {
		h, err := checkStoredBatch(data[p:])
		if err != nil {
			break
		}
		last = p
		p += int(h.Size())
	}
	return last
}

// A big compacted log cleans in bounded memory: the heap grows by the
// offset map and the I/O buffers, not with the data. 1 GiB normally (a
// few seconds on tmpfs), 128 MiB with -short.
func TestCleanerBoundedMemory(t *testing.T) {
	size := int64(1 << 30)
	if testing.Short() {
		size = 128 << 20
	}
	dir := fastTempDir(t)
	clock := &fakeClock{t: time.UnixMilli(1_700_000_000_000)}
	opts := compactOpts(clock)
	opts.SegmentBytes = 64 << 20
	opts.IndexIntervalBytes = 4096
	l := mustOpen(t, dir, opts)
	defer l.Close()
	start := time.Now()
	m := fillKeyed(t, l, size, 50_000, 1000, clock.t.UnixMilli())
	settle(t, l)
	fill := time.Since(start)

	const dedupe = 16 << 20
	c := NewCleaner(CleanerOptions{DedupeBufferBytes: dedupe})
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start = time.Now()
	st := mustClean(t, c, l)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapSys) - int64(before.HeapSys)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d MiB log filled in %v; cleaned in %v (%.0f MB/s read): %d records removed, %d MiB -> %d MiB; heap grew %d MiB, %d MiB allocated",
		size>>20, fill, took, float64(st.BytesRead+st.MapBytesRead)/took.Seconds()/1e6, st.Removed, st.BytesRead>>20, st.BytesWritten>>20, grew>>20, alloc>>20)
	if st.End != l.EndOffset() {
		t.Fatalf("cleaned to %d of %d", st.End, l.EndOffset())
	}
	if limit := int64(dedupe + 48<<20); grew > limit {
		t.Fatalf("the heap grew by %d MiB cleaning %d MiB; the bound is %d MiB", grew>>20, size>>20, limit>>20)
	}
	if alloc > dedupe+64<<20 {
		t.Fatalf("cleaning %d MiB allocated %d MiB: allocation grows with the data", size>>20, alloc>>20)
	}
	m.checkLatestOnly(t, l)
}

// An offset map too small for the dirty section's keys: each pass cleans
// up to where the map filled, and passes go on from there until the log is
// clean; every pass's memory is the same small map.
func TestCleanerSmallMapPasses(t *testing.T) {
	dir := fastTempDir(t)
	clock := &fakeClock{t: time.UnixMilli(1_700_000_000_000)}
	opts := compactOpts(clock)
	opts.SegmentBytes = 256 << 10
	l := mustOpen(t, dir, opts)
	defer l.Close()
	m := fillKeyed(t, l, 8<<20, 6000, 100, clock.t.UnixMilli())
	settle(t, l)
	c := NewCleaner(CleanerOptions{DedupeBufferBytes: 2000 * offsetMapSlotBytes}) // 1800 keys a pass
	passes := 0
	for ; passes < 100; passes++ {
		st := mustClean(t, c, l)
		if st.End == 0 {
			break
		}
		if st.End < l.EndOffset() && !st.MapFull {
			t.Fatalf("pass %d stopped at %d without a full map: %+v", passes, st.End, st)
		}
	}
	if passes < 3 {
		t.Fatalf("%d passes; the map should have forced more", passes)
	}
	m.checkLatestOnly(t, l)
	t.Logf("%d passes", passes)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}
