package engine

// Transaction verification of a partition (KIP-890 part 1), as Kafka 3.9's
// UnifiedLog and ProducerStateManager keep it with
// transaction.partition.verification.enable (Options.TxnVerification).
//
// A client's transactional data batch from a producer without an open
// transaction in the partition is written only with the VerificationGuard
// of a verification the partition leader started (StartTxnVerification)
// and the transaction coordinator then confirmed: the broker asks the
// coordinator whether the partition is in the producer's transaction and
// appends with the guard only if it is (AppendVerifiedNoWait). A batch
// without the guard, or with another one, is ErrInvalidTxnState. Once a
// transaction is open in the partition its batches need no guard. The
// group coordinator's transactional offsets (a coordinator append) are
// checked the same way (AppendCoordinatorVerifiedNoWait), as Kafka checks
// them; transaction markers never are.
//
// The guard is unique per verification, so a stale confirmation cannot
// open a transaction: any transactional batch of the producer appended
// (a data batch opening the transaction, or a marker ending it) forgets
// the verification, and the next one gets a new guard (Kafka's ABA
// argument in UnifiedLog.analyzeAndValidateProducerState).
//
// A verification also keeps the lowest sequence it was started for: a
// later batch of the producer with a higher first sequence is refused
// (ErrOutOfOrderSequence) while the verification stands, so a batch whose
// lower predecessor failed its verification is not written first (Kafka's
// VerificationStateEntry.maybeUpdateLowestSequenceAndEpoch).
//
// Verifications are kept in memory only, never in the producer snapshot,
// and are forgotten once older than producer.id.expiration.ms, as Kafka's
// ProducerStateManager.removeExpiredProducers forgets them.

import (
	"fmt"
	"sync/atomic"
)

// VerificationGuard identifies one verification of a producer's
// transaction in a partition. The zero guard (Kafka's
// VerificationGuard.SENTINEL) verifies nothing.
type VerificationGuard uint64

// lastGuard numbers guards: each verification gets the next.
var lastGuard atomic.Uint64

// verification is a producer's verification in progress (Kafka's
// VerificationStateEntry).
type verification struct {
	guard     VerificationGuard
	started   int64 // ms, the expiry's start
	lowestSeq int32
	epoch     int16
}

// StartTxnVerification starts, or joins, the verification of producer
// id's transaction in the partition for a batch of first sequence seq at
// epoch, and returns its guard; the zero guard when the producer's
// transaction is already open there (no verification is needed). It takes
// the log's lock and does not allocate but for a producer's first
// verification.
func (l *Log) StartTxnVerification(producerID int64, seq int32, epoch int16) VerificationGuard {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.producers == nil {
		return 0
	}
	return l.producers.startVerification(producerID, seq, epoch, l.opts.Load().Now().UnixMilli())
}

// AppendVerifiedNoWait is AppendNoWait for a client batch that carries the
// guard of its verification (StartTxnVerification), once the transaction
// coordinator confirmed it: with Options.TxnVerification a transactional
// data batch opening its producer's transaction is written only with the
// producer's current guard.
func (l *Log) AppendVerifiedNoWait(batch []byte, guard VerificationGuard) (AppendResult, error) {
	return l.appendNoWait(batch, false, guard)
}

func (s *producerState) startVerification(id int64, seq int32, epoch int16, now int64) VerificationGuard {
	if e := s.producers[id]; e != nil && e.txnFirst != noTxn {
		return 0
	}
	v := s.verifying[id]
	if v == nil {
		if s.verifying == nil {
			s.verifying = make(map[int64]*verification)
		}
		v = &verification{guard: VerificationGuard(lastGuard.Add(1)), started: now, lowestSeq: seq, epoch: epoch}
		s.verifying[id] = v
	}
	switch {
	case epoch == v.epoch && seq < v.lowestSeq:
		v.lowestSeq = seq
	case epoch > v.epoch:
		v.epoch, v.lowestSeq = epoch, seq
	}
	return v.guard
}

// checkVerified is the check of Kafka's analyzeAndValidateProducerState
// for a client batch: a transactional data batch of a producer without an
// open transaction (e is its entry, nil if unknown) needs its producer's
// current guard, else ErrInvalidTxnState.
func (s *producerState) checkVerified(h *BatchHeader, e *producerEntry, guard VerificationGuard) error {
	if !h.Transactional() || e != nil && e.txnFirst != noTxn {
		return nil
	}
	if v := s.verifying[h.ProducerID]; v == nil || v.guard != guard {
		return fmt.Errorf("%w: producer %d epoch %d: the batch was not part of an ongoing transaction (the partition was not verified in it)",
			ErrInvalidTxnState, h.ProducerID, h.ProducerEpoch)
	}
	return nil
}

// checkLowestSequence is the first check of Kafka's
// ProducerAppendInfo.checkSequence: while its producer's verification
// stands, a data batch may not start above the verification's lowest
// sequence (ErrOutOfOrderSequence).
func (s *producerState) checkLowestSequence(h *BatchHeader) error {
	if len(s.verifying) == 0 {
		return nil
	}
	if v := s.verifying[h.ProducerID]; v != nil && h.BaseSequence > v.lowestSeq {
		return &SequenceError{ProducerID: h.ProducerID, Epoch: h.ProducerEpoch, Got: h.BaseSequence, Expected: v.lowestSeq}
	}
	return nil
}

// forgetVerification ends producer id's verification once one of its
// transactional batches was appended: its transaction opened or ended.
func (s *producerState) forgetVerification(id int64) {
	if len(s.verifying) > 0 {
		delete(s.verifying, id)
	}
}

// expireVerifications forgets verifications started expirationMs or
// longer before now.
func (s *producerState) expireVerifications(now, expirationMs int64) {
	for id, v := range s.verifying {
		if now-v.started >= expirationMs {
			delete(s.verifying, id)
		}
	}
}
