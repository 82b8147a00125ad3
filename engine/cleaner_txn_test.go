package engine

// The cleaner and transactions: open transactions bound the cleanable
// range, aborted records go and never shadow committed ones, markers stay
// while their transaction has a batch in the log and go after their delete
// horizon, and the aborted transaction index follows.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// txnKeyed is a transactional batch of producer pid at epoch holding recs.
func txnKeyed(tb testing.TB, pid int64, epoch int16, seq int32, ts int64, recs ...kv) []byte {
	tb.Helper()
	b := keyedBatch(tb, ts, CompressionNone, recs...)
	binary.BigEndian.PutUint16(b[offAttributes:], attrTransactional)
	binary.BigEndian.PutUint64(b[offProducerID:], uint64(pid))
	binary.BigEndian.PutUint16(b[offProducerEpoch:], uint16(epoch))
	binary.BigEndian.PutUint32(b[offBaseSequence:], uint32(seq))
	binary.BigEndian.PutUint32(b[offCRC:], batchCRC(b))
	return b
}

// storedBatch is a batch read back from a log.
type storedBatch struct {
	h BatchHeader
	b []byte
}

// logBatches reads every batch of the log from its start, control and empty
// ones included.
func logBatches(tb testing.TB, l *Log) []storedBatch {
	tb.Helper()
	var out []storedBatch
	for off := l.StartOffset(); off < l.EndOffset(); {
		v, err := l.Read(off, 1<<20, l.EndOffset())
		if err != nil {
			tb.Fatalf("Read(%d): %v", off, err)
		}
		if v.Len() == 0 {
			tb.Fatalf("Read(%d) returned nothing below the end %d", off, l.EndOffset())
		}
		data, err := v.AppendTo(nil)
		v.Release()
		if err != nil {
			tb.Fatal(err)
		}
		for p := 0; p < len(data); {
			h, err := checkStoredBatch(data[p:])
			if err != nil {
				tb.Fatalf("batch at %d of the read at %d: %v", p, off, err)
			}
			b := data[p : p+int(h.Size())]
			p += len(b)
			if h.LastOffset() < off {
				continue
			}
			out = append(out, storedBatch{h, b})
			off = h.LastOffset() + 1
		}
	}
	return out
}

// consumed is what a consumer reading the whole log sees: the last value
// of each key (a tombstone deletes it) and the offsets of the data records.
type consumed struct {
	values  map[string]string
	offsets []int64
}

// consume reads the log as a consumer does: read_uncommitted every data
// record up to the end; read_committed up to the last stable offset,
// dropping the batches of the aborted transactions the log reports
// (AbortedTxns) until their producer's abort marker, as Kafka's
// CompletedFetch does. Everything is replicated (a single node): the high
// watermark is moved to the log end first.
func consume(tb testing.TB, l *Log, committed bool) consumed {
	tb.Helper()
	c := consumed{values: map[string]string{}}
	l.SetHighWatermark(l.EndOffset())
	end := l.EndOffset()
	if committed {
		end = l.LastStableOffset()
	}
	aborted := l.AbortedTxns(nil, l.StartOffset(), end)
	slices.SortFunc(aborted, func(a, b AbortedTxn) int { return int(a.FirstOffset - b.FirstOffset) })
	dropping := map[int64]bool{}
	for _, sb := range logBatches(tb, l) {
		h := sb.h
		if h.BaseOffset >= end {
			break
		}
		if committed {
			for len(aborted) > 0 && aborted[0].FirstOffset <= h.LastOffset() {
				dropping[aborted[0].ProducerID] = true
				aborted = aborted[1:]
			}
			if h.Control() {
				if cr, err := ParseControlBatch(sb.b); err == nil && cr.Type == ControlAbort {
					delete(dropping, h.ProducerID)
				}
				continue
			}
			if h.Transactional() && dropping[h.ProducerID] {
				continue
			}
		}
		it := NewRecordIterator(sb.b)
		for it.Next() {
			r := it.Record()
			if r.Offset < l.StartOffset() {
				continue
			}
			c.offsets = append(c.offsets, r.Offset)
			if r.Value == nil {
				delete(c.values, string(r.Key))
			} else {
				c.values[string(r.Key)] = string(r.Value)
			}
		}
		if err := it.Err(); err != nil {
			tb.Fatal(err)
		}
	}
	return c
}

// markerAt is the control batch at offset, if the log still holds it.
func markerAt(tb testing.TB, l *Log, offset int64) (storedBatch, bool) {
	tb.Helper()
	for _, sb := range logBatches(tb, l) {
		if sb.h.BaseOffset == offset && sb.h.Control() {
			return sb, true
		}
	}
	return storedBatch{}, false
}

// wantValues checks a consumer's view of some keys ("" for absent).
func wantValues(tb testing.TB, what string, c consumed, want map[string]string) {
	tb.Helper()
	for k, v := range want {
		if got := c.values[k]; got != v {
			tb.Fatalf("%s: key %q reads %q, want %q", what, k, got, v)
		}
	}
}

// fillPlain appends n batches of filler keys f0..f4, so segments roll.
func fillPlain(tb testing.TB, l *Log, ts int64, n int) {
	tb.Helper()
	for i := range n {
		if _, err := l.Append(keyedBatch(tb, ts, CompressionNone, kv{fmt.Sprintf("f%d", i%5), bytes.Repeat([]byte("f"), 100)})); err != nil {
			tb.Fatal(err)
		}
	}
}

// An open transaction's records are neither cleaned nor mapped: a key
// committed, then written again in a transaction still open while the
// cleaner runs, keeps its committed value when the transaction aborts; when
// it commits, its value wins at the next pass.
func TestCleanerStopsAtFirstUnstableOffset(t *testing.T) {
	for _, commit := range []bool{false, true} {
		t.Run(map[bool]string{false: "abort", true: "commit"}[commit], func(t *testing.T) {
			clock := &fakeClock{t: time.UnixMilli(txnTS)}
			l := mustOpen(t, fastTempDir(t), compactOpts(clock))
			defer l.Close()
			ts := clock.t.UnixMilli()
			mustAppend(t, l, keyedBatch(t, ts, CompressionNone, kv{"k", []byte("committed")}))
			fillPlain(t, l, ts, 40)
			open := mustAppend(t, l, txnKeyed(t, 5, 0, 0, ts, kv{"k", []byte("in flight")}))
			fillPlain(t, l, ts, 80)
			settle(t, l)
			if fu := l.FirstUnstableOffset(); fu != open.FirstOffset {
				t.Fatalf("first unstable %d, want %d", fu, open.FirstOffset)
			}
			c := NewCleaner(CleanerOptions{DedupeBufferBytes: 1 << 20})
			st := mustClean(t, c, l)
			if st.End == 0 || st.End > open.FirstOffset {
				t.Fatalf("cleaned [%d, %d): want a pass that stops at or before the open transaction at %d", st.FirstDirty, st.End, open.FirstOffset)
			}
			for _, committed := range []bool{false, true} {
				if v := consume(t, l, committed).values["k"]; v != map[bool]string{false: "in flight", true: "committed"}[committed] && !(committed && v == "") {
					t.Fatalf("read_committed=%v while open: k=%q", committed, v)
				}
			}
			typ := ControlAbort
			if commit {
				typ = ControlCommit
			}
			mustAppend(t, l, AppendControlBatch(nil, 5, 0, typ, 0, ts))
			want := "committed"
			if commit {
				want = "in flight"
			}
			wantValues(t, "ended", consume(t, l, true), map[string]string{"k": want})
			fillPlain(t, l, ts, 5)
			settle(t, l)
			st = mustClean(t, c, l)
			if st.End != l.EndOffset() {
				t.Fatalf("the pass after the transaction ended cleaned to %d of %d", st.End, l.EndOffset())
			}
			for _, committed := range []bool{false, true} {
				got := consume(t, l, committed)
				wantValues(t, fmt.Sprintf("cleaned, read_committed=%v", committed), got, map[string]string{"k": want})
			}
			if st.Aborted != map[bool]int64{false: 1, true: 0}[commit] {
				t.Fatalf("%d aborted records removed: %+v", st.Aborted, st)
			}
		})
	}
}

// The life of markers and aborted records through passes (see cleantxn.go):
//
//	producer 1: A aborted (a, x), B committed (b, superseded later), C committed (c, its last batch)
//	producer 2: D aborted (d: its last batch, so it stays, empty)
//	producer 3: E aborted by a marker of a bumped epoch (its last record a marker)
func TestCleanerTransactionMarkers(t *testing.T) {
	clock := &fakeClock{t: time.UnixMilli(txnTS)}
	dir := fastTempDir(t)
	opts := compactOpts(clock)
	l := mustOpen(t, dir, opts)
	defer func() { l.Close() }()
	ts := clock.t.UnixMilli()
	put := func(recs ...kv) { mustAppend(t, l, keyedBatch(t, ts, CompressionNone, recs...)) }
	marker := func(pid int64, epoch int16, typ ControlType) int64 {
		return mustAppend(t, l, AppendControlBatch(nil, pid, epoch, typ, 0, ts)).FirstOffset
	}
	put(kv{"a", []byte("a0")})
	a := mustAppend(t, l, txnKeyed(t, 1, 0, 0, ts, kv{"a", []byte("aborted")}, kv{"x", []byte("aborted")}))
	d := mustAppend(t, l, txnKeyed(t, 2, 0, 0, ts, kv{"d", []byte("aborted")}))
	e := mustAppend(t, l, txnKeyed(t, 3, 0, 0, ts, kv{"e", []byte("aborted")}))
	fillPlain(t, l, ts, 30)
	mA := marker(1, 0, ControlAbort)
	mD := marker(2, 0, ControlAbort)
	mE := marker(3, 1, ControlAbort)
	mustAppend(t, l, txnKeyed(t, 1, 0, 2, ts, kv{"b", []byte("b-txn")}))
	mB := marker(1, 0, ControlCommit)
	put(kv{"b", []byte("b-plain")})
	c := mustAppend(t, l, txnKeyed(t, 1, 0, 3, ts, kv{"c", []byte("c-txn")}))
	mC := marker(1, 0, ControlCommit)
	fillPlain(t, l, ts, 30)
	settle(t, l)
	entry := func(pid int64, first, m int64) AbortedTxn {
		return AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: m, LastStableOffset: m + 1}
	}
	entA, entD, entE := entry(1, a.FirstOffset, mA), entry(2, d.FirstOffset, mD), entry(3, e.FirstOffset, mE)
	entA.LastStableOffset, entD.LastStableOffset = d.FirstOffset, e.FirstOffset // the next open at the abort
	wantAborted(t, l, "written", []AbortedTxn{entA, entD, entE})
	committed := map[string]string{"a": "a0", "b": "b-plain", "c": "c-txn", "x": "", "d": "", "e": ""}
	wantValues(t, "written", consume(t, l, true), committed)

	// state: for each marker, "whole" (kept as written), "horizon" (kept,
	// its horizon stamped), "empty" (emptied), "gone".
	check := func(what string, state map[int64]string, entries []AbortedTxn, horizon int64) {
		t.Helper()
		for off, want := range state {
			sb, ok := markerAt(t, l, off)
			got := "gone"
			switch {
			case ok && sb.h.NumRecords == 0:
				got = "empty"
			case ok && hasDeleteHorizon(&sb.h):
				got = "horizon"
				if sb.h.BaseTimestamp != horizon {
					t.Fatalf("%s: marker at %d has horizon %d, want %d", what, off, sb.h.BaseTimestamp, horizon)
				}
				if _, err := ParseControlBatch(sb.b); err != nil {
					t.Fatalf("%s: rewritten marker at %d: %v", what, off, err)
				}
			case ok:
				got = "whole"
			}
			if got != want {
				t.Fatalf("%s: marker at %d is %s, want %s", what, off, got, want)
			}
		}
		wantAborted(t, l, what, entries)
		var inFiles []AbortedTxn
		files := txnIndexFiles(t, dir)
		for _, base := range l.SegmentBases() {
			inFiles = append(inFiles, files[base]...)
			delete(files, base)
		}
		if len(files) > 0 || !slices.Equal(inFiles, entries) {
			t.Fatalf("%s: .txnindex files hold %+v (and of no segment: %+v), want %+v", what, inFiles, files, entries)
		}
		for _, read := range []bool{true, false} {
			wantValues(t, fmt.Sprintf("%s, read_committed=%v", what, read), consume(t, l, read), committed)
		}
	}
	cl := NewCleaner(CleanerOptions{DedupeBufferBytes: 1 << 20})
	pass := func(advance time.Duration) CleanStats {
		t.Helper()
		clock.t = clock.t.Add(advance)
		fillPlain(t, l, clock.t.UnixMilli(), 1) // something dirty
		settle(t, l)
		return mustClean(t, cl, l)
	}

	// Pass 1: aborted records go (D's batch stays, empty); every
	// transaction still had a batch in the log when the pass met it.
	st := pass(0)
	if st.Aborted != 4 || st.Markers != 0 {
		t.Fatalf("pass 1: %d aborted records, %d markers removed; want 4, 0", st.Aborted, st.Markers)
	}
	check("pass 1", map[int64]string{mA: "whole", mB: "whole", mC: "whole", mD: "whole", mE: "whole"}, []AbortedTxn{entA, entD, entE}, 0)
	for _, sb := range logBatches(t, l) {
		if sb.h.BaseOffset == d.FirstOffset && (sb.h.NumRecords != 0 || !sb.h.Transactional()) {
			t.Fatalf("producer 2's last batch: %+v, want it empty and transactional", sb.h)
		}
		if sb.h.BaseOffset == a.FirstOffset || sb.h.BaseOffset == e.FirstOffset {
			t.Fatalf("an aborted batch survived: %+v", sb.h)
		}
	}

	// Pass 2: A, B and E have no batch left: their markers get the horizon
	// and A's and E's entries go; D's empty batch keeps its marker and entry.
	st = pass(time.Minute)
	horizon := clock.t.Add(time.Hour).UnixMilli()
	check("pass 2", map[int64]string{mA: "horizon", mB: "horizon", mC: "whole", mD: "whole", mE: "horizon"}, []AbortedTxn{entD}, horizon)

	// Before the horizon nothing changes; after it A's and B's markers go,
	// and E's is emptied (producer 3's last record).
	pass(59 * time.Minute)
	check("before the horizon", map[int64]string{mA: "horizon", mB: "horizon", mC: "whole", mD: "whole", mE: "horizon"}, []AbortedTxn{entD}, horizon)
	st = pass(time.Minute)
	if st.Markers != 3 {
		t.Fatalf("after the horizon: %d markers removed, want 3: %+v", st.Markers, st)
	}
	check("after the horizon", map[int64]string{mA: "gone", mB: "gone", mC: "whole", mD: "whole", mE: "empty"}, []AbortedTxn{entD}, horizon)
	st = pass(time.Minute)
	if st.Markers != 0 {
		t.Fatalf("a pass after: %d markers removed", st.Markers)
	}
	check("a pass after", map[int64]string{mA: "gone", mB: "gone", mC: "whole", mD: "whole", mE: "empty"}, []AbortedTxn{entD}, horizon)
	if _, ok := markerAt(t, l, c.FirstOffset); ok {
		t.Fatal("C's data batch read as a marker")
	}

	// Reopened, also with the producer state rebuilt from the log alone:
	// D's empty batch opens its transaction again and its marker ends it.
	for _, how := range []string{"reopened", "no snapshot"} {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if how == "no snapshot" {
			snaps, _ := filepath.Glob(filepath.Join(dir, "*"+snapshotSuffix))
			for _, p := range snaps {
				os.Remove(p)
			}
		}
		l = mustOpen(t, dir, opts)
		l.SetHighWatermark(l.EndOffset())
		if fu := l.FirstUnstableOffset(); fu != -1 {
			t.Fatalf("%s: first unstable offset %d, want none", how, fu)
		}
		if how == "no snapshot" {
			// Replayed from the log, D's entry gets the last stable offset
			// of the log as it is now: E has no record left.
			entD.LastStableOffset = mD + 1
		}
		check(how, map[int64]string{mA: "gone", mB: "gone", mC: "whole", mD: "whole", mE: "empty"}, []AbortedTxn{entD}, horizon)
	}
}

// Moving the log start offset past transactions: the entries of aborts
// whose segments go are dropped, a transaction open across the new start
// is unstable from it, and a read_committed consumer from the new start
// reads exactly the committed records there.
func TestTxnLogStartOffset(t *testing.T) {
	clock := &fakeClock{t: time.UnixMilli(txnTS)}
	dir := t.TempDir()
	opts := Options{SegmentBytes: 1 << 10, Now: clock.now, Logger: discardLogger}
	l := mustOpen(t, dir, opts)
	defer func() { l.Close() }()
	ts := clock.t.UnixMilli()
	a := mustAppend(t, l, txnKeyed(t, 1, 0, 0, ts, kv{"a", []byte("aborted")}))
	mA := mustAppend(t, l, AppendControlBatch(nil, 1, 0, ControlAbort, 0, ts)).FirstOffset
	fillPlain(t, l, ts, 20)
	b := mustAppend(t, l, txnKeyed(t, 2, 0, 0, ts, kv{"b", []byte("aborted")})) // aborted across the new start
	o := mustAppend(t, l, txnKeyed(t, 3, 0, 0, ts, kv{"o", []byte("open")}))    // open across it
	fillPlain(t, l, ts, 20)
	start := l.EndOffset()
	b2 := mustAppend(t, l, txnKeyed(t, 2, 0, 1, ts, kv{"b2", []byte("aborted")})) // past it
	mB := mustAppend(t, l, AppendControlBatch(nil, 2, 0, ControlAbort, 0, ts)).FirstOffset
	mustAppend(t, l, keyedBatch(t, ts, CompressionNone, kv{"p", []byte("plain")}))
	l.SetHighWatermark(l.EndOffset())
	entB := AbortedTxn{ProducerID: 2, FirstOffset: b.FirstOffset, LastOffset: mB, LastStableOffset: o.FirstOffset}
	wantAborted(t, l, "written", []AbortedTxn{{ProducerID: 1, FirstOffset: a.FirstOffset, LastOffset: mA, LastStableOffset: mA + 1}, entB})

	if _, err := l.DeleteRecordsBefore(start); err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"deleted", "reopened"} {
		if how == "reopened" {
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = mustOpen(t, dir, opts)
			l.SetHighWatermark(l.EndOffset())
		}
		if l.StartOffset() != start {
			t.Fatalf("%s: log start %d, want %d", how, l.StartOffset(), start)
		}
		wantAborted(t, l, how, []AbortedTxn{entB})
		if got := l.AbortedTxns(nil, start, l.EndOffset()); !slices.Equal(got, []AbortedTxn{entB}) {
			t.Fatalf("%s: aborted from the log start: %+v", how, got)
		}
		if files := txnIndexFiles(t, dir); len(files) != 1 {
			t.Fatalf("%s: .txnindex files %+v, want only B's", how, files)
		}
		// The open transaction's first records are gone: it is unstable
		// from the log start, not from below it.
		wantLSO(t, l, how, start, start)
		if got := consume(t, l, true); len(got.offsets) != 0 {
			t.Fatalf("%s: read_committed below the last stable offset %d: %v", how, l.LastStableOffset(), got.offsets)
		}
	}
	mustAppend(t, l, AppendControlBatch(nil, 3, 0, ControlCommit, 0, ts))
	l.SetHighWatermark(l.EndOffset())
	wantLSO(t, l, "committed", -1, l.EndOffset())
	got := consume(t, l, true)
	if want := []int64{mB + 1}; !slices.Equal(got.offsets, want) {
		t.Fatalf("read_committed from the log start: offsets %v, want %v (b2 at %d is aborted)", got.offsets, want, b2.FirstOffset)
	}
	if len(consume(t, l, false).offsets) != 2 {
		t.Fatal("read_uncommitted from the log start: want b2 and p")
	}
}
