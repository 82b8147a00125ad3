package engine

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"
)

// ptxn is the header of a transactional data batch of n records from pid.
func ptxn(pid int64, epoch int16, seq int32, n int32) BatchHeader {
	h := pbatch(pid, epoch, seq, n)
	h.Attributes = attrTransactional
	return h
}

func TestProducerStateOpenTransactions(t *testing.T) {
	p := newPsim()
	p.mustProduce(t, pbatch(9, 0, 0, 2)) // 0-1: idempotent, no transaction
	p.mustProduce(t, ptxn(1, 0, 0, 3))   // 2-4: opens 1's at 2
	p.mustProduce(t, ptxn(2, 0, 0, 1))   // 5: opens 2's at 5
	p.mustProduce(t, ptxn(1, 0, 3, 2))   // 6-7: 1's stays at 2
	if got := p.s.firstUnstableOffset(); got != 2 || p.s.open != 2 {
		t.Fatalf("first unstable %d, %d open; want 2, 2", got, p.s.open)
	}
	p.mustProduce(t, pmarker(1, 0)) // 8: ends 1's
	if got := p.s.firstUnstableOffset(); got != 5 {
		t.Fatalf("after 1's marker: first unstable %d, want 5", got)
	}
	p.mustProduce(t, pmarker(9, 0)) // a marker of a producer without a transaction changes nothing
	p.mustProduce(t, pmarker(2, 0))
	if got := p.s.firstUnstableOffset(); got != -1 || p.s.open != 0 {
		t.Fatalf("all ended: first unstable %d, %d open", got, p.s.open)
	}
	p.mustProduce(t, ptxn(1, 0, 5, 1)) // a new transaction of 1
	if got, want := p.s.firstUnstableOffset(), p.next-1; got != want {
		t.Fatalf("1's second transaction: first unstable %d, want %d", got, want)
	}
	// Rebuilding from the headers gives the same state.
	r := newProducerState()
	r.rebuildFrom(p.written...)
	if r.firstUnstableOffset() != p.s.firstUnstableOffset() || r.open != 1 {
		t.Fatalf("rebuilt: first unstable %d (%d open), want %d", r.firstUnstableOffset(), r.open, p.s.firstUnstableOffset())
	}
}

func TestProducerStateExpireKeepsOpenTransactions(t *testing.T) {
	s := newProducerState()
	a, b := ptxn(1, 0, 0, 1), pbatch(2, 0, 0, 1)
	s.update(&a, 0, 1000)
	s.update(&b, 1, 1000)
	if n := s.expire(1_000_000, 5000); n != 1 || s.producers[1] == nil {
		t.Fatalf("expired %d; producer 1 (open transaction) kept: %v", n, s.producers[1] != nil)
	}
}

func TestProducerSnapshotCarriesOpenTransactions(t *testing.T) {
	p := newPsim()
	p.mustProduce(t, ptxn(3, 1, 0, 2))
	p.mustProduce(t, ptxn(5, 0, 0, 1))
	p.mustProduce(t, pmarker(5, 0))
	p.mustProduce(t, ptxn(7, 0, 0, 1))
	b := p.s.appendSnapshot(nil, p.next)
	if v := binary.BigEndian.Uint16(b); v != snapshotVersion {
		t.Fatalf("written as version %d", v)
	}
	got, err := decodeSnapshot("x", p.next, b)
	if err != nil {
		t.Fatal(err)
	}
	if got.open != 2 || got.firstUnstableOffset() != 0 || got.producers[5].txnFirst != noTxn || got.producers[7].txnFirst != 4 {
		t.Fatalf("decoded: %d open, first unstable %d, 5's %d, 7's %d", got.open, got.firstUnstableOffset(), got.producers[5].txnFirst, got.producers[7].txnFirst)
	}
	if got.producers[3].n != 1 || got.producers[3].batches[0] != p.s.producers[3].batches[0] {
		t.Fatalf("producer 3's batches: %+v", got.producers[3])
	}
}

// TestProducerSnapshotVersion1 reads a version 1 snapshot (written before
// transactions) as its layout is drawn in producerstate.go.
func TestProducerSnapshotVersion1(t *testing.T) {
	be := binary.BigEndian
	var b []byte
	b = be.AppendUint16(b, 1)
	b = be.AppendUint32(b, 0)
	b = be.AppendUint64(b, 10)
	b = be.AppendUint32(b, 1)
	b = be.AppendUint64(b, 42)   // producer id
	b = be.AppendUint16(b, 3)    // epoch
	b = be.AppendUint64(b, 5000) // last timestamp
	b = append(b, 1)
	for _, v := range []uint32{0, 4} {
		b = be.AppendUint32(b, v)
	}
	for _, v := range []uint64{5, 9, 5000} {
		b = be.AppendUint64(b, v)
	}
	be.PutUint32(b[2:], crc32.Checksum(b[snapshotCRCStart:], castagnoli))
	s, err := decodeSnapshot("v1", 10, b)
	if err != nil {
		t.Fatal(err)
	}
	e := s.producers[42]
	want := batchMeta{firstSeq: 0, lastSeq: 4, firstOffset: 5, lastOffset: 9, timestamp: 5000}
	if e == nil || e.epoch != 3 || e.lastTimestamp != 5000 || e.txnFirst != noTxn || e.n != 1 || e.batches[0] != want || s.open != 0 {
		t.Fatalf("decoded %+v", e)
	}
}

// txnBatch is a transactional batch of n records from producer pid/epoch
// starting at sequence seq.
func txnBatch(t *testing.T, pid int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	b := idempotentBatch(t, pid, epoch, seq, n)
	binary.BigEndian.PutUint16(b[offAttributes:], attrTransactional)
	binary.BigEndian.PutUint32(b[offCRC:], batchCRC(b))
	return b
}

func mustAppend(t *testing.T, l *Log, b []byte) AppendResult {
	t.Helper()
	res, err := l.Append(b)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func wantLSO(t *testing.T, l *Log, what string, firstUnstable, lso int64) {
	t.Helper()
	if fu, got := l.FirstUnstableOffset(), l.LastStableOffset(); fu != firstUnstable || got != lso {
		t.Fatalf("%s: first unstable %d, last stable %d; want %d, %d", what, fu, got, firstUnstable, lso)
	}
}

func TestLastStableOffset(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{t: time.UnixMilli(1_700_000_000_000)}
	opts := Options{SegmentBytes: 2 << 10, Now: clock.now}
	l := mustOpen(t, dir, opts)
	defer func() { l.Close() }()
	mustAppend(t, l, testBatch(t, 2, 20, 1_700_000_000_000)) // 0-1
	a := mustAppend(t, l, txnBatch(t, 1, 0, 0, 3))           // 2-4
	b := mustAppend(t, l, txnBatch(t, 2, 0, 0, 2))           // 5-6
	mustAppend(t, l, txnBatch(t, 1, 0, 3, 2))                // 7-8
	wantLSO(t, l, "below the high watermark", a.FirstOffset, l.StartOffset())
	l.SetHighWatermark(l.EndOffset())
	wantLSO(t, l, "two open", a.FirstOffset, a.FirstOffset)
	mustAppend(t, l, AppendControlBatch(nil, 1, 0, ControlCommit, 0, 1_700_000_000_000))
	l.SetHighWatermark(l.EndOffset())
	wantLSO(t, l, "1 committed", b.FirstOffset, b.FirstOffset)
	// Many rolls with 2's transaction open: snapshots carry it.
	for range 40 {
		mustAppend(t, l, testBatch(t, 3, 20, 1_700_000_000_000))
	}
	if len(l.SegmentBases()) < 3 {
		t.Fatalf("%d segments", len(l.SegmentBases()))
	}
	for _, how := range []string{"clean", "crash"} {
		end := l.EndOffset()
		l.SetHighWatermark(end)
		if how == "clean" {
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = mustOpen(t, dir, opts)
		} else {
			// An unclean stop with the active segment unsynced: the
			// rolled segments' snapshot and the replay rebuild it.
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			cfs := newCrashFS(t, dir)
			o := opts
			o.FS = cfs
			l = mustOpen(t, dir, o)
			mustAppend(t, l, txnBatch(t, 2, 0, 2, 1))
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			cfs.crash(crashPlan{})
			abandonCrashed(l)
			if err := cfs.crashError(); err != nil {
				t.Fatal(err)
			}
			l = mustOpen(t, dir, opts)
			end++
		}
		if l.EndOffset() != end {
			t.Fatalf("%s: reopened at %d, want %d", how, l.EndOffset(), end)
		}
		l.SetHighWatermark(end)
		wantLSO(t, l, how+" reopen", b.FirstOffset, b.FirstOffset)
	}
	mustAppend(t, l, AppendControlBatch(nil, 2, 0, ControlAbort, 0, 1_700_000_000_000))
	l.SetHighWatermark(l.EndOffset())
	wantLSO(t, l, "2 aborted", -1, l.EndOffset())
	// Truncating below the marker reopens 2's transaction.
	if err := l.TruncateTo(l.EndOffset() - 1); err != nil {
		t.Fatal(err)
	}
	wantLSO(t, l, "marker truncated", b.FirstOffset, b.FirstOffset)
}
