package engine

import (
	"errors"
	"testing"
	"time"
)

// TestTxnVerificationGuards: with TxnVerification, a transactional batch
// opening its producer's transaction needs the producer's current guard;
// later batches of the open transaction need none; a marker ends the
// transaction and the verification, so a late batch of the old
// transaction, even with the old guard, is refused (the ABA case).
func TestTxnVerificationGuards(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{TxnVerification: true, Now: func() time.Time { return time.UnixMilli(txnTS) }})
	defer l.Close()
	refused := func(what string, b []byte, g VerificationGuard) {
		t.Helper()
		end := l.EndOffset()
		if _, err := l.AppendVerifiedNoWait(b, g); !errors.Is(err, ErrInvalidTxnState) {
			t.Fatalf("%s: %v, want ErrInvalidTxnState", what, err)
		}
		if l.EndOffset() != end {
			t.Fatalf("%s: appended (end %d, was %d)", what, l.EndOffset(), end)
		}
	}
	refused("no verification", txnBatch(t, 7, 0, 0, 2), 0)
	if _, err := l.Append(idempotentBatch(t, 7, 0, 0, 1)); err != nil {
		t.Fatalf("idempotent batch: %v", err) // untouched by verification
	}
	g := l.StartTxnVerification(7, 1, 0)
	if g == 0 {
		t.Fatal("no guard for a producer without a transaction")
	}
	if again := l.StartTxnVerification(7, 1, 0); again != g {
		t.Fatalf("a second start got guard %d, want the same %d", again, g)
	}
	refused("another guard", txnBatch(t, 7, 0, 1, 2), g+1000)
	refused("no guard", txnBatch(t, 7, 0, 1, 2), 0)
	if _, err := l.AppendVerifiedNoWait(txnBatch(t, 7, 0, 1, 2), g); err != nil {
		t.Fatalf("verified: %v", err)
	}
	if l.FirstUnstableOffset() != 1 {
		t.Fatalf("first unstable %d, want 1", l.FirstUnstableOffset())
	}
	if got := l.StartTxnVerification(7, 3, 0); got != 0 {
		t.Fatalf("open transaction: guard %d, want none", got)
	}
	if _, err := l.AppendNoWait(txnBatch(t, 7, 0, 3, 1)); err != nil {
		t.Fatalf("second batch of the open transaction: %v", err)
	}
	if _, err := l.AppendCoordinatorNoWait(AppendControlBatch(nil, 7, 0, ControlCommit, 0, txnTS)); err != nil {
		t.Fatal(err)
	}
	refused("late batch after the marker", txnBatch(t, 7, 0, 4, 1), 0)
	refused("late batch with the old guard", txnBatch(t, 7, 0, 4, 1), g)
	// A verification started before the marker is void after it.
	g2 := l.StartTxnVerification(7, 4, 0)
	if _, err := l.AppendCoordinatorNoWait(AppendControlBatch(nil, 7, 0, ControlAbort, 0, txnTS)); err != nil {
		t.Fatal(err)
	}
	refused("verification older than the marker", txnBatch(t, 7, 0, 4, 1), g2)
	if g3 := l.StartTxnVerification(7, 4, 0); g3 == g2 || g3 == 0 {
		t.Fatalf("new verification: guard %d (old %d)", g3, g2)
	}
}

// TestTxnVerificationLowestSequence: while a verification stands, a batch
// above its lowest sequence is out of order; a higher epoch resets it.
func TestTxnVerificationLowestSequence(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{TxnVerification: true})
	defer l.Close()
	g := l.StartTxnVerification(5, 3, 0)
	if l.StartTxnVerification(5, 0, 0) != g || l.StartTxnVerification(5, 6, 0) != g {
		t.Fatal("guards differ within one verification")
	}
	var se *SequenceError
	if _, err := l.AppendVerifiedNoWait(txnBatch(t, 5, 0, 3, 3), g); !errors.As(err, &se) || se.Expected != 0 {
		t.Fatalf("above the lowest sequence: %v", err)
	}
	l.StartTxnVerification(5, 0, 1) // bumped epoch: lowest 0 of epoch 1
	if _, err := l.AppendVerifiedNoWait(txnBatch(t, 5, 1, 0, 3), g); err != nil {
		t.Fatalf("lowest sequence: %v", err)
	}
}

// TestTxnVerificationOff: without TxnVerification transactional batches
// are written as before, and verifications expire with
// producer.id.expiration.ms.
func TestTxnVerificationOff(t *testing.T) {
	now := time.UnixMilli(txnTS)
	l := mustOpen(t, t.TempDir(), Options{ProducerIDExpiration: time.Minute, Now: func() time.Time { return now }})
	defer l.Close()
	mustAppend(t, l, txnBatch(t, 9, 0, 0, 1))
	l.StartTxnVerification(2, 5, 0)
	now = now.Add(2 * time.Minute)
	l.mu.Lock()
	l.expireProducersLocked()
	n := len(l.producers.verifying)
	l.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d verifications after their expiry", n)
	}
}

// TestTxnVerificationCoordinator: the group coordinator's transactional
// offsets (a coordinator append, base sequence 0) need the guard of their
// verification to open the transaction, as a client's batch; markers need
// none, and with the transaction open the next offsets need none.
func TestTxnVerificationCoordinator(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{TxnVerification: true})
	defer l.Close()
	if _, err := l.AppendCoordinatorNoWait(txnBatch(t, 4, 0, 0, 1)); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("unverified offsets: %v, want ErrInvalidTxnState", err)
	}
	g := l.StartTxnVerification(4, -1, 0)
	if _, err := l.AppendCoordinatorVerifiedNoWait(txnBatch(t, 4, 0, 0, 1), g+1); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("another guard: %v, want ErrInvalidTxnState", err)
	}
	if l.EndOffset() != 0 {
		t.Fatalf("end %d after refusals", l.EndOffset())
	}
	if _, err := l.AppendCoordinatorVerifiedNoWait(txnBatch(t, 4, 0, 0, 1), g); err != nil {
		t.Fatalf("verified offsets: %v", err)
	}
	if _, err := l.AppendCoordinatorNoWait(txnBatch(t, 4, 0, 0, 1)); err != nil {
		t.Fatalf("offsets in the open transaction: %v", err)
	}
	if _, err := l.AppendCoordinatorNoWait(AppendControlBatch(nil, 4, 0, ControlCommit, 0, txnTS)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendCoordinatorVerifiedNoWait(txnBatch(t, 4, 0, 0, 1), g); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("old guard after the marker: %v, want ErrInvalidTxnState", err)
	}
	off := mustOpen(t, t.TempDir(), Options{})
	defer off.Close()
	if _, err := off.AppendCoordinatorNoWait(txnBatch(t, 4, 0, 0, 1)); err != nil {
		t.Fatalf("without verification: %v", err)
	}
}
