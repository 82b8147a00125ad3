package engine

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
	"time"
)

// TestAppendTransactionalChecks: a client's non-transactional batch during
// its producer's open transaction is ErrInvalidTxnState (after the
// sequence check, as Kafka's appendDataBatch), and allowed once a marker
// ends the transaction.
func TestAppendTransactionalChecks(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{})
	defer l.Close()
	mustAppend(t, l, txnBatch(t, 7, 0, 0, 2))
	if _, err := l.Append(idempotentBatch(t, 7, 0, 2, 1)); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("non-transactional batch in an open transaction: %v", err)
	}
	var se *SequenceError
	if _, err := l.Append(idempotentBatch(t, 7, 0, 5, 1)); !errors.As(err, &se) {
		t.Fatalf("out of sequence first: %v", err)
	}
	if _, err := l.Append(AppendControlBatch(nil, 7, 0, ControlCommit, 0, txnTS)); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, idempotentBatch(t, 7, 0, 2, 1))
}

// TestAppendCoordinatorFences: markers and coordinator-written
// transactional batches are checked as Kafka's AppendOrigin.COORDINATOR.
func TestAppendCoordinatorFences(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Now: func() time.Time { return time.UnixMilli(txnTS) }} // the producers do not expire
	l := mustOpen(t, dir, opts)
	defer func() { l.Close() }()
	coord := func(b []byte) error {
		t.Helper()
		_, err := l.AppendCoordinatorNoWait(b)
		return err
	}
	// A marker for a producer the partition has never seen is written.
	if err := coord(AppendControlBatch(nil, 3, 0, ControlAbort, 2, txnTS)); err != nil {
		t.Fatalf("marker of an unknown producer: %v", err)
	}
	mustAppend(t, l, txnBatch(t, 3, 1, 0, 1))
	// The group coordinator's transactional offset commit: sequence 0
	// each time, never a duplicate, never out of sequence.
	var bb BatchBuilder
	bb.SetProducer(3, 1, 0, true)
	bb.Add(Record{Key: []byte("k"), Value: []byte("v"), Timestamp: txnTS})
	for range 2 {
		if err := coord(bb.Build()); err != nil {
			t.Fatalf("coordinator batch: %v", err)
		}
	}
	if n := l.EndOffset(); n != 4 {
		t.Fatalf("end %d, want 4 (nothing taken for a duplicate)", n)
	}
	bb.SetProducer(3, 1, 0, false)
	if err := coord(bb.Build()); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("non-transactional coordinator batch during the transaction: %v", err)
	}
	if err := coord(AppendControlBatch(nil, 3, 0, ControlCommit, 2, txnTS)); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("marker of an older producer epoch: %v", err)
	}
	if err := coord(AppendControlBatch(nil, 3, 1, ControlCommit, 1, txnTS)); !errors.Is(err, ErrCoordinatorFenced) {
		t.Fatalf("marker of an older coordinator epoch: %v", err)
	}
	if l.FirstUnstableOffset() != 1 {
		t.Fatalf("refused markers ended the transaction: first unstable %d", l.FirstUnstableOffset())
	}
	if err := coord(AppendControlBatch(nil, 3, 1, ControlCommit, 5, txnTS)); err != nil {
		t.Fatal(err)
	}
	want := ProducerInfo{ProducerID: 3, Epoch: 1, LastSequence: 0, LastTimestamp: txnTS, CoordinatorEpoch: 5, TxnStartOffset: -1}
	if got := l.Producers(nil); len(got) != 1 || got[0] != want {
		t.Fatalf("producers %+v, want %+v", got, want)
	}
	// The coordinator epoch survives a clean reopen (snapshot) and a
	// replay of the log (no snapshot).
	for _, how := range []string{"snapshot", "replay"} {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if how == "replay" {
			offs, err := snapshotOffsets(OSFS, dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, off := range offs {
				if err := OSFS.Remove(snapshotPath(dir, off)); err != nil {
					t.Fatal(err)
				}
			}
		}
		l = mustOpen(t, dir, opts)
		if got := l.Producers(nil); len(got) != 1 || got[0].CoordinatorEpoch != 5 {
			t.Fatalf("%s: producers %+v", how, got)
		}
		if err := coord(AppendControlBatch(nil, 3, 1, ControlAbort, 4, txnTS)); !errors.Is(err, ErrCoordinatorFenced) {
			t.Fatalf("%s: marker of an older coordinator epoch: %v", how, err)
		}
	}
}

// TestProducerSnapshotVersion2 reads a version 2 snapshot (open
// transactions, no coordinator epoch) as drawn in producerstate.go, and a
// version 3 one round-trips the coordinator epoch.
func TestProducerSnapshotVersion2(t *testing.T) {
	be := binary.BigEndian
	var b []byte
	b = be.AppendUint16(b, 2)
	b = be.AppendUint32(b, 0)
	b = be.AppendUint64(b, 10)
	b = be.AppendUint32(b, 1)
	b = be.AppendUint64(b, 42)   // producer id
	b = be.AppendUint16(b, 3)    // epoch
	b = be.AppendUint64(b, 5000) // last timestamp
	b = be.AppendUint64(b, 5)    // open transaction from 5
	b = append(b, 0)             // no batches
	be.PutUint32(b[2:], crc32.Checksum(b[snapshotCRCStart:], castagnoli))
	s, err := decodeSnapshot("v2", 10, b)
	if err != nil {
		t.Fatal(err)
	}
	e := s.producers[42]
	if e == nil || e.epoch != 3 || e.txnFirst != 5 || e.coordinatorEpoch != -1 || s.open != 1 {
		t.Fatalf("decoded %+v", e)
	}
	e.coordinatorEpoch = 9
	got, err := decodeSnapshot("v3", 10, s.appendSnapshot(nil, 10))
	if err != nil {
		t.Fatal(err)
	}
	if g := got.producers[42]; g == nil || g.coordinatorEpoch != 9 || g.txnFirst != 5 {
		t.Fatalf("round trip %+v", g)
	}
}

// TestBatchBuilderSetProducer: the built batch carries the producer and
// the transactional bit, and validates.
func TestBatchBuilderSetProducer(t *testing.T) {
	var bb BatchBuilder
	bb.SetProducer(11, 2, 7, true)
	bb.Add(Record{Value: []byte("x"), Timestamp: time.Now().UnixMilli()})
	h, err := ValidateBatch(bb.Build())
	if err != nil {
		t.Fatal(err)
	}
	if h.ProducerID != 11 || h.ProducerEpoch != 2 || h.BaseSequence != 7 || !h.Transactional() || h.Control() {
		t.Fatalf("header %+v", h)
	}
	bb.SetProducer(-1, -1, -1, false)
	bb.Reset()
	bb.Add(Record{Value: []byte("x")})
	if h, _ := ParseBatchHeader(bb.Build()); h.ProducerID != -1 || h.Transactional() {
		t.Fatalf("reset producer: %+v", h)
	}
}

// TestAbortedTxnsWhileAborting reads the aborted transactions without the
// log's lock while aborts are appended and retention drops the oldest
// segments' entries (run with -race: the published entries never change).
func TestAbortedTxnsWhileAborting(t *testing.T) {
	clock := &fakeClock{t: time.UnixMilli(txnTS)}
	l := mustOpen(t, t.TempDir(), Options{SegmentBytes: 1 << 10, Now: clock.now})
	defer l.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range int32(60) {
			mustAppend(t, l, txnBatch(t, 5, 0, i, 1))
			mustAppend(t, l, AppendControlBatch(nil, 5, 0, ControlAbort, 0, txnTS))
			if i%20 == 19 {
				l.SetHighWatermark(l.EndOffset())
				if _, err := l.IncrementStartOffset(l.EndOffset() - 10); err != nil {
					t.Error(err)
				}
				if _, err := l.ApplyRetention(); err != nil {
					t.Error(err)
				}
			}
		}
	}()
	var buf []AbortedTxn
	for reads := 0; ; reads++ {
		select {
		case <-done:
			if got := l.AbortedTxns(nil, 0, l.EndOffset()); len(got) == 0 || got[len(got)-1].LastOffset != l.EndOffset()-1 {
				t.Fatalf("after %d reads: %+v", reads, got)
			}
			return
		default:
		}
		buf = l.AbortedTxns(buf[:0], 0, 1<<62)
		for i := 1; i < len(buf); i++ {
			if buf[i].LastOffset <= buf[i-1].LastOffset {
				t.Fatalf("entries out of order: %+v", buf)
			}
		}
	}
}
