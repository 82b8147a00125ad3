package engine

// Idempotent-producer state of a partition, as Kafka's ProducerStateManager
// keeps it: for each producer id, its epoch, the timestamp of its last
// write, and the metadata of its last five batches, so a retried batch is
// recognised and answered with the offsets it was first written at, and a
// batch that skips or repeats sequence numbers is refused.
//
// The state is checkpointed in the partition directory as snapshot files
// named by the log offset they describe the state before, 20 digits as
// segments are, e.g. 00000000000000368769.snapshot; after a restart the
// newest valid snapshot is loaded and the batches from its offset on are
// replayed (rebuildFrom). Layout, all integers big-endian:
//
//	offset  size  field
//	     0     2  version          int16   1 (2: below)
//	     2     4  crc              uint32  CRC-32C (Castagnoli) of bytes [6, end)
//	     6     8  offset           int64   the snapshot's offset, as in its name
//	    14     4  producer count   int32
//	    18     …  producers, by increasing producer id, each:
//	                   0  8  producer id      int64
//	                   8  2  producer epoch   int16
//	                  10  8  last timestamp   int64  (of the last write: expiry)
//	                  18  1  batch count      uint8  0-5
//	                  19  …  batches, oldest first, 32 bytes each:
//	                            0  4  first sequence  int32
//	                            4  4  last sequence   int32
//	                            8  8  first offset    int64
//	                           16  8  last offset     int64
//	                           24  8  timestamp       int64
//
// The version and the CRC-32C over everything after it are placed as in
// Kafka's snapshot; unlike Kafka's, which keeps only each producer's last
// batch, the file keeps all five, so duplicates are still recognised after
// a restart. These constants are part of the file format and must not
// change without a new version.
//
// Version 2 (written since transactions) inserts, after a producer's last
// timestamp, the first offset of its open transaction, and moves the batch
// count behind it; version 1 files (no transactions) are still read:
//
//	                   0  8  producer id      int64
//	                   8  2  producer epoch   int16
//	                  10  8  last timestamp   int64
//	                  18  8  txn first offset int64  -1: no open transaction
//	                  26  1  batch count      uint8  0-5
//	                  27  …  batches, as in version 1
//
// Version 3 (written since WriteTxnMarkers) adds, after the transaction's
// first offset, the coordinator epoch of the producer's last marker (-1:
// none), which fences markers from an older coordinator; versions 1 and 2
// are still read (their producers' coordinator epoch is -1):
//
//	                   0  8  producer id      int64
//	                   8  2  producer epoch   int16
//	                  10  8  last timestamp   int64
//	                  18  8  txn first offset int64  -1: no open transaction
//	                  26  4  coordinator epoch int32 -1: no marker seen
//	                  30  1  batch count      uint8  0-5
//	                  31  …  batches, as in version 1
//
// The rules are Kafka 3.9's (storage/.../log/ProducerAppendInfo.java,
// ProducerStateEntry.java, ProducerStateManager.java and
// UnifiedLog.analyzeAndValidateProducerState), cited where applied.
//
// A producerState is not safe for concurrent use: the Log guards it with
// its lock.

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"math"
	"os"
	"slices"
)

const (
	snapshotSuffix     = ".snapshot"
	snapshotVersion    = 3
	snapshotVersion2   = 2
	snapshotVersion1   = 1
	snapshotHeaderSize = 18
	snapshotCRCStart   = 6  // the CRC covers [6, end)
	snapshotProducer   = 31 // a version 3 producer's fixed part
	snapshotProducerV2 = 27
	snapshotProducerV1 = 19
	snapshotBatchSize  = 32

	// batchesRetained is Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN,
	// and the most in-flight requests an idempotent producer may have.
	batchesRetained = 5

	noProducerEpoch = -1 // Kafka's RecordBatch.NO_PRODUCER_EPOCH
	noSequence      = -1 // Kafka's RecordBatch.NO_SEQUENCE
	noTxn           = -1 // producerEntry.txnFirst without an open transaction
)

// batchMeta describes a batch a producer wrote: its sequence range and
// offset range (both inclusive) and its timestamp.
type batchMeta struct {
	firstSeq    int32
	lastSeq     int32
	firstOffset int64
	lastOffset  int64
	timestamp   int64
}

// producerEntry is one producer's state.
type producerEntry struct {
	epoch         int16
	lastTimestamp int64
	txnFirst      int64 // first offset of its open transaction, or noTxn
	// coordinatorEpoch is the coordinator epoch of the producer's last
	// transaction marker, -1 before any (Kafka's
	// ProducerStateEntry.coordinatorEpoch).
	coordinatorEpoch int32
	n                int                        // batches held, <= batchesRetained
	batches          [batchesRetained]batchMeta // [0, n), oldest first
}

// lastSeq is the last sequence written in the current epoch, or noSequence.
func (e *producerEntry) lastSeq() int32 {
	if e.n == 0 {
		return noSequence
	}
	return e.batches[e.n-1].lastSeq
}

// setEpoch is Kafka's maybeUpdateProducerEpoch: a new epoch forgets the
// batches of the old one.
func (e *producerEntry) setEpoch(epoch int16) {
	if e.epoch != epoch {
		e.epoch = epoch
		e.n = 0
		e.batches = [batchesRetained]batchMeta{} // nothing stale beyond n
	}
}

// addBatch keeps b as the newest batch, forgetting the oldest beyond five.
func (e *producerEntry) addBatch(b batchMeta) {
	if e.n == batchesRetained {
		copy(e.batches[:], e.batches[1:])
		e.n--
	}
	e.batches[e.n] = b
	e.n++
}

// producerState is the idempotent-producer state of one partition, and its
// open transactions: a producer's transaction opens at its first
// transactional data batch (Kafka's ProducerAppendInfo.append with a
// currentTxnFirstOffset unset) and ends at its next control batch, a commit
// or abort marker.
type producerState struct {
	producers map[int64]*producerEntry
	open      int // producers with an open transaction
	// verifying holds the transaction verifications in progress, by
	// producer id (txnverify.go); nil until the first.
	verifying map[int64]*verification
}

func newProducerState() *producerState {
	return &producerState{producers: make(map[int64]*producerEntry)}
}

// SequenceError refuses a batch whose first sequence does not follow its
// producer's last (Kafka's OUT_OF_ORDER_SEQUENCE_NUMBER). It wraps
// ErrOutOfOrderSequence.
type SequenceError struct {
	ProducerID int64
	Epoch      int16
	Got        int32 // the batch's first sequence
	Expected   int32 // the sequence the partition expects next
}

func (e *SequenceError) Error() string {
	return fmt.Sprintf("%v: producer %d epoch %d sent sequence %d, expected %d",
		ErrOutOfOrderSequence, e.ProducerID, e.Epoch, e.Got, e.Expected)
}

func (e *SequenceError) Unwrap() error { return ErrOutOfOrderSequence }

// lastSequence is the batch's last sequence, Kafka's
// DefaultRecordBatch.lastSequence: the base sequence plus the last offset
// delta, wrapping from MaxInt32 to 0; noSequence without a base sequence.
func lastSequence(h *BatchHeader) int32 {
	if h.BaseSequence < 0 {
		return noSequence
	}
	return incrementSequence(h.BaseSequence, h.LastOffsetDelta)
}

// incrementSequence adds n to seq, wrapping past MaxInt32 to 0.
func incrementSequence(seq, n int32) int32 {
	if seq > math.MaxInt32-n {
		return n - (math.MaxInt32 - seq) - 1
	}
	return seq + n
}

// inSequence is Kafka's ProducerAppendInfo.inSequence: next follows last,
// or wraps from MaxInt32 to 0.
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// check validates a batch a client sent before it is appended, as Kafka
// does for AppendOrigin.CLIENT. A batch without a producer id (-1) is not
// idempotent: nil, nil. Otherwise, in Kafka's order:
//
//  1. A duplicate (same epoch as the producer's, same first and last
//     sequence as one of its last five batches) returns that batch's
//     metadata and no error: the broker answers with the original offsets
//     and writes nothing (UnifiedLog.analyzeAndValidateProducerState,
//     ProducerStateEntry.findDuplicateBatch).
//  2. An epoch below the producer's is fenced: an error wrapping
//     ErrInvalidProducerEpoch (checkProducerEpoch).
//  3. Sequences (checkSequence; control batches have none): a producer the
//     partition does not know, or one whose epoch is unknown (-1), is
//     accepted at any sequence. A new, higher epoch must start at sequence
//     0 — Kafka 3.9 throws "Invalid sequence number for new epoch" for any
//     other first sequence unless the producer's current epoch is
//     NO_PRODUCER_EPOCH, so a bumped epoch (KIP-360) is accepted at 0 only.
//     In the same epoch the first sequence must follow the last one written
//     (MaxInt32 wraps to 0), or follow nothing (be 0) when no batch of the
//     epoch is known. Otherwise a *SequenceError with the expected
//     sequence.
//
// The returned metadata points into the state and is valid until the next
// update. check does not allocate unless it fails.
func (s *producerState) check(h *BatchHeader, verify bool, guard VerificationGuard) (dup *batchMeta, err error) {
	if h.ProducerID < 0 {
		return nil, nil
	}
	e := s.producers[h.ProducerID]
	if e == nil {
		if h.Control() {
			return nil, nil
		}
		if verify {
			if err := s.checkVerified(h, nil, guard); err != nil {
				return nil, err
			}
		}
		return nil, s.checkLowestSequence(h)
	}
	if !h.Control() && h.ProducerEpoch == e.epoch {
		first, last := h.BaseSequence, lastSequence(h)
		for i := range e.n {
			if b := &e.batches[i]; b.firstSeq == first && b.lastSeq == last {
				return b, nil
			}
		}
	}
	if verify && !h.Control() {
		if err := s.checkVerified(h, e, guard); err != nil {
			return nil, err
		}
	}
	if err := e.checkEpoch(h); err != nil {
		return nil, err
	}
	if h.Control() {
		return nil, nil
	}
	if err := s.checkLowestSequence(h); err != nil {
		return nil, err
	}
	if err := s.checkSequence(e, h); err != nil {
		return nil, err
	}
	return nil, e.checkTxn(h)
}

// checkEpoch is Kafka's ProducerAppendInfo.checkProducerEpoch: an epoch
// below the producer's is fenced.
func (e *producerEntry) checkEpoch(h *BatchHeader) error {
	if h.ProducerEpoch < e.epoch {
		return fmt.Errorf("%w: producer %d sent epoch %d, the partition has seen epoch %d",
			ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, e.epoch)
	}
	return nil
}

// checkSequence is Kafka's ProducerAppendInfo.checkSequence (see check).
func (s *producerState) checkSequence(e *producerEntry, h *BatchHeader) error {
	if e.epoch == noProducerEpoch {
		return nil
	}
	if h.ProducerEpoch != e.epoch {
		if h.BaseSequence != 0 {
			return &SequenceError{ProducerID: h.ProducerID, Epoch: h.ProducerEpoch, Got: h.BaseSequence, Expected: 0}
		}
		return nil
	}
	if last := e.lastSeq(); !inSequence(last, h.BaseSequence) {
		return &SequenceError{ProducerID: h.ProducerID, Epoch: h.ProducerEpoch, Got: h.BaseSequence, Expected: incrementSequence(last, 1)}
	}
	return nil
}

// checkTxn is the check of Kafka's ProducerAppendInfo.appendDataBatch: a
// data batch that is not transactional while the producer's transaction is
// open is refused (INVALID_TXN_STATE); a transactional one opens or
// continues it.
func (e *producerEntry) checkTxn(h *BatchHeader) error {
	if e.txnFirst != noTxn && !h.Transactional() {
		return fmt.Errorf("%w: producer %d epoch %d sent a non-transactional batch while its transaction from offset %d is open",
			ErrInvalidTxnState, h.ProducerID, h.ProducerEpoch, e.txnFirst)
	}
	return nil
}

// checkCoordinator validates a batch a coordinator writes (Kafka's
// AppendOrigin.COORDINATOR): a transaction marker of coordinatorEpoch, or a
// transactional offset commit of the group coordinator. Sequences are not
// checked and nothing is a duplicate; an older producer epoch is fenced
// (ErrInvalidProducerEpoch), a data batch follows checkTxn, and a marker
// whose coordinator epoch is below the one of the producer's last marker
// is ErrCoordinatorFenced (Kafka's ProducerAppendInfo.checkCoordinatorEpoch).
// A producer the partition does not know passes.
func (s *producerState) checkCoordinator(h *BatchHeader, coordinatorEpoch int32) error {
	if h.ProducerID < 0 {
		return nil
	}
	e := s.producers[h.ProducerID]
	if e == nil {
		return nil
	}
	if err := e.checkEpoch(h); err != nil {
		return err
	}
	if !h.Control() {
		return e.checkTxn(h)
	}
	if coordinatorEpoch < e.coordinatorEpoch {
		return fmt.Errorf("%w: marker of producer %d from coordinator epoch %d, the partition has seen epoch %d",
			ErrCoordinatorFenced, h.ProducerID, coordinatorEpoch, e.coordinatorEpoch)
	}
	return nil
}

// setCoordinatorEpoch records the coordinator epoch of a marker of producer
// id just applied by update.
func (s *producerState) setCoordinatorEpoch(id int64, epoch int32) {
	if e := s.producers[id]; e != nil {
		e.coordinatorEpoch = epoch
	}
}

// ProducerInfo is one producer's state in a partition, as DescribeProducers
// reports it (Kafka's UnifiedLog.activeProducers).
type ProducerInfo struct {
	ProducerID       int64
	Epoch            int16
	LastSequence     int32 // -1 without a batch in the current epoch
	LastTimestamp    int64 // ms, of its last write
	CoordinatorEpoch int32 // of its last marker, -1 before any
	TxnStartOffset   int64 // first offset of its open transaction, -1 with none
}

// appendInfo appends every producer's state to dst, by increasing id.
func (s *producerState) appendInfo(dst []ProducerInfo) []ProducerInfo {
	start := len(dst)
	for id, e := range s.producers {
		dst = append(dst, ProducerInfo{ProducerID: id, Epoch: e.epoch, LastSequence: e.lastSeq(), LastTimestamp: e.lastTimestamp,
			CoordinatorEpoch: e.coordinatorEpoch, TxnStartOffset: e.txnFirst})
	}
	slices.SortFunc(dst[start:], func(a, b ProducerInfo) int { return cmp.Compare(a.ProducerID, b.ProducerID) })
	return dst
}

// update records a batch appended at firstOffset. timestamp is what Kafka
// records for it: the batch's max timestamp as written (the broker's append
// time in a LogAppendTime topic), kept as the batch's timestamp (answered
// with a duplicate) and as the producer's last timestamp (expiry). The Log
// passes h.MaxTimestamp, which is what rebuildFrom replays.
//
// A data batch sets the producer's epoch (forgetting the batches of an
// older one) and becomes its newest batch; a control batch (a transaction
// marker) sets the epoch and the last timestamp only, and an empty control
// batch is skipped, as in Kafka's ProducerAppendInfo.append. A batch without
// a producer id is ignored. A transactional data batch opens the producer's
// transaction at firstOffset if none is open; a control batch ends the open
// one. txn reports that a transaction opened or ended. update does not
// allocate except for a producer new to the partition.
func (s *producerState) update(h *BatchHeader, firstOffset int64, timestamp int64) (txn bool) {
	if h.ProducerID < 0 || (h.Control() && h.NumRecords == 0) {
		return false
	}
	e := s.producers[h.ProducerID]
	if e == nil {
		e = &producerEntry{epoch: noProducerEpoch, txnFirst: noTxn, coordinatorEpoch: -1}
		s.producers[h.ProducerID] = e
	}
	e.setEpoch(h.ProducerEpoch)
	e.lastTimestamp = timestamp
	if h.Transactional() {
		// Kafka's UnifiedLog.updateProducers: the transaction opened or
		// ended, either way its verification is done.
		s.forgetVerification(h.ProducerID)
	}
	switch {
	case h.Control() && e.txnFirst != noTxn:
		e.txnFirst = noTxn
		s.open--
		txn = true
	case !h.Control() && h.Transactional() && e.txnFirst == noTxn:
		e.txnFirst = firstOffset
		s.open++
		txn = true
	}
	if h.Control() || h.BaseSequence < 0 {
		return txn
	}
	e.addBatch(batchMeta{
		firstSeq:    h.BaseSequence,
		lastSeq:     lastSequence(h),
		firstOffset: firstOffset,
		lastOffset:  firstOffset + int64(h.LastOffsetDelta),
		timestamp:   timestamp,
	})
	return txn
}

// openTxnFirst is the first offset of producer id's open transaction, or
// -1 with none open.
func (s *producerState) openTxnFirst(id int64) int64 {
	if e := s.producers[id]; e != nil && e.txnFirst != noTxn {
		return e.txnFirst
	}
	return -1
}

// lastStableAfter is the last stable offset once producer id's transaction
// ends with a marker at offset, as Kafka's ProducerStateManager
// .lastStableOffset(completedTxn): the first offset of the oldest other
// transaction open, else offset + 1.
func (s *producerState) lastStableAfter(id int64, offset int64) int64 {
	lso := offset + 1
	for pid, e := range s.producers {
		if pid != id && e.txnFirst != noTxn && e.txnFirst < lso {
			lso = e.txnFirst
		}
	}
	return lso
}

// firstUnstableOffset is the first offset of the oldest open transaction,
// or -1 with none open. It looks at every producer only while one is open.
func (s *producerState) firstUnstableOffset() int64 {
	first := int64(-1)
	if s.open == 0 {
		return first
	}
	for _, e := range s.producers {
		if e.txnFirst != noTxn && (first < 0 || e.txnFirst < first) {
			first = e.txnFirst
		}
	}
	return first
}

// rebuildFrom replays stored batches, oldest first, as Kafka replays the
// log after its latest snapshot (AppendOrigin.REPLICATION: nothing is
// checked, everything is recorded): each header's base offset and max
// timestamp are the update's offset and timestamp.
func (s *producerState) rebuildFrom(headers ...BatchHeader) {
	for i := range headers {
		s.update(&headers[i], headers[i].BaseOffset, headers[i].MaxTimestamp)
	}
}

// expire removes the producers idle for expirationMs or longer at now (both
// in ms), Kafka's producer.id.expiration.ms (default one day). It returns
// how many it removed. A producer with an open transaction stays, as in
// Kafka's ProducerStateManager.isProducerExpired.
func (s *producerState) expire(now, expirationMs int64) int {
	s.expireVerifications(now, expirationMs)
	n := 0
	for id, e := range s.producers {
		if e.txnFirst == noTxn && now-e.lastTimestamp >= expirationMs {
			delete(s.producers, id)
			n++
		}
	}
	return n
}

// appendSnapshot appends the snapshot of the state at offset to dst (see
// the top of the file). A caller holding a lock can encode under it and
// write the file after releasing it.
func (s *producerState) appendSnapshot(dst []byte, offset int64) []byte {
	ids := make([]int64, 0, len(s.producers))
	for id := range s.producers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	start := len(dst)
	be := binary.BigEndian
	dst = be.AppendUint16(dst, snapshotVersion)
	dst = be.AppendUint32(dst, 0) // the CRC, written last
	dst = be.AppendUint64(dst, uint64(offset))
	dst = be.AppendUint32(dst, uint32(len(ids)))
	for _, id := range ids {
		e := s.producers[id]
		dst = be.AppendUint64(dst, uint64(id))
		dst = be.AppendUint16(dst, uint16(e.epoch))
		dst = be.AppendUint64(dst, uint64(e.lastTimestamp))
		dst = be.AppendUint64(dst, uint64(e.txnFirst))
		dst = be.AppendUint32(dst, uint32(e.coordinatorEpoch))
		dst = append(dst, byte(e.n))
		for _, b := range e.batches[:e.n] {
			dst = be.AppendUint32(dst, uint32(b.firstSeq))
			dst = be.AppendUint32(dst, uint32(b.lastSeq))
			dst = be.AppendUint64(dst, uint64(b.firstOffset))
			dst = be.AppendUint64(dst, uint64(b.lastOffset))
			dst = be.AppendUint64(dst, uint64(b.timestamp))
		}
	}
	snap := dst[start:]
	be.PutUint32(snap[2:], crc32.Checksum(snap[snapshotCRCStart:], castagnoli))
	return dst
}

// snapshotPath is the snapshot file of offset in dir.
func snapshotPath(dir string, offset int64) string { return segmentName(dir, offset, snapshotSuffix) }

// writeSnapshot writes the state as the snapshot at offset (the log end
// offset it describes) with writeFileAtomic: a crash leaves the old files
// or the new one whole.
func (s *producerState) writeSnapshot(fs FS, dir string, offset int64) error {
	return writeFileAtomic(fs, snapshotPath(dir, offset), s.appendSnapshot(nil, offset))
}

// decodeSnapshot parses a snapshot file's content. Every defect is an error
// wrapping ErrCorrupt naming path and the byte position.
func decodeSnapshot(path string, wantOffset int64, b []byte) (*producerState, error) {
	bad := func(pos int, format string, args ...any) error {
		return fmt.Errorf("%w: producer snapshot %s at position %d: %s", ErrCorrupt, path, pos, fmt.Sprintf(format, args...))
	}
	be := binary.BigEndian
	if len(b) < snapshotHeaderSize {
		return nil, bad(len(b), "%d bytes, shorter than the %d-byte header", len(b), snapshotHeaderSize)
	}
	v := int16(be.Uint16(b))
	var fixed int
	switch v {
	case snapshotVersion:
		fixed = snapshotProducer
	case snapshotVersion2:
		fixed = snapshotProducerV2
	case snapshotVersion1:
		fixed = snapshotProducerV1
	default:
		return nil, bad(0, "version %d, want %d to %d", v, snapshotVersion1, snapshotVersion)
	}
	if crc, got := be.Uint32(b[2:]), crc32.Checksum(b[snapshotCRCStart:], castagnoli); crc != got {
		return nil, bad(2, "CRC 0x%08x, computed 0x%08x", crc, got)
	}
	if off := int64(be.Uint64(b[6:])); off != wantOffset {
		return nil, bad(6, "offset %d, the file is named for %d", off, wantOffset)
	}
	count := int64(int32(be.Uint32(b[14:])))
	if count < 0 || count > int64(len(b)-snapshotHeaderSize)/int64(fixed) {
		return nil, bad(14, "producer count %d in %d bytes", count, len(b))
	}
	s := &producerState{producers: make(map[int64]*producerEntry, count)}
	p := snapshotHeaderSize
	prev := int64(math.MinInt64)
	for i := range count {
		if len(b)-p < fixed {
			return nil, bad(p, "producer %d of %d: %d bytes left", i, count, len(b)-p)
		}
		id := int64(be.Uint64(b[p:]))
		if id < 0 || (i > 0 && id <= prev) {
			return nil, bad(p, "producer id %d after %d: ids must be >= 0 and increase", id, prev)
		}
		prev = id
		e := &producerEntry{epoch: int16(be.Uint16(b[p+8:])), lastTimestamp: int64(be.Uint64(b[p+10:])), txnFirst: noTxn, coordinatorEpoch: -1}
		e.n = int(b[p+fixed-1])
		if v >= snapshotVersion2 {
			e.txnFirst = int64(be.Uint64(b[p+18:]))
			if e.txnFirst < noTxn {
				return nil, bad(p+18, "producer %d's transaction first offset %d", id, e.txnFirst)
			}
			if e.txnFirst != noTxn {
				s.open++
			}
		}
		if v >= snapshotVersion {
			e.coordinatorEpoch = int32(be.Uint32(b[p+26:]))
		}
		if e.n > batchesRetained {
			return nil, bad(p+fixed-1, "producer %d has %d batches, at most %d", id, e.n, batchesRetained)
		}
		p += fixed
		if len(b)-p < e.n*snapshotBatchSize {
			return nil, bad(p, "producer %d's %d batches: %d bytes left", id, e.n, len(b)-p)
		}
		for j := range e.n {
			e.batches[j] = batchMeta{
				firstSeq:    int32(be.Uint32(b[p:])),
				lastSeq:     int32(be.Uint32(b[p+4:])),
				firstOffset: int64(be.Uint64(b[p+8:])),
				lastOffset:  int64(be.Uint64(b[p+16:])),
				timestamp:   int64(be.Uint64(b[p+24:])),
			}
			p += snapshotBatchSize
		}
		s.producers[id] = e
	}
	if p != len(b) {
		return nil, bad(p, "%d bytes after the last producer", len(b)-p)
	}
	return s, nil
}

// snapshotOffsets lists the offsets of the snapshot files in dir,
// increasing.
func snapshotOffsets(fs FS, dir string) ([]int64, error) {
	ents, err := fs.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("engine: read dir %s: %w", dir, err)
	}
	var out []int64
	for _, e := range ents {
		if off, ok := parseSegmentName(e.Name(), snapshotSuffix); ok {
			out = append(out, off)
		}
	}
	slices.Sort(out)
	return out, nil
}

// loadLatestSnapshot loads the newest valid producer snapshot in dir and
// returns the state and its offset; the caller replays the log from that
// offset with rebuildFrom. A snapshot that fails its checks (ErrCorrupt) is
// logged, removed and the next older one tried, as Kafka's
// ProducerStateManager.loadFromSnapshot does; with none left the state is
// empty and the offset -1 (replay from the log start). An error reading a
// file is returned.
func loadLatestSnapshot(fs FS, dir string, logger *slog.Logger) (*producerState, int64, error) {
	if logger == nil {
		logger = slog.Default()
	}
	offsets, err := snapshotOffsets(fs, dir)
	if err != nil {
		return nil, -1, err
	}
	for i := len(offsets) - 1; i >= 0; i-- {
		path := snapshotPath(dir, offsets[i])
		data, err := readFile(fs, path)
		if err != nil {
			return nil, -1, fmt.Errorf("engine: read producer snapshot %s: %w", path, err)
		}
		s, err := decodeSnapshot(path, offsets[i], data)
		if err == nil {
			return s, offsets[i], nil
		}
		logger.Warn("skipping corrupt producer snapshot", "file", path, "err", err)
		if rerr := fs.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			logger.Warn("removing corrupt producer snapshot", "file", path, "err", rerr)
		}
	}
	return newProducerState(), -1, nil
}

// removeSnapshotsAbove removes the snapshots of offsets above offset: after
// the log is truncated to end at offset they describe records it no longer
// has (Kafka's truncateAndReload keeps a snapshot at the end offset itself).
func removeSnapshotsAbove(fs FS, dir string, offset int64) error {
	return removeSnapshots(fs, dir, func(off int64) bool { return off > offset })
}

// removeSnapshotsBelow removes the snapshots of offsets below offset, as
// Kafka's deleteSnapshotsBefore when segments are deleted.
func removeSnapshotsBelow(fs FS, dir string, offset int64) error {
	return removeSnapshots(fs, dir, func(off int64) bool { return off < offset })
}

func removeSnapshots(fs FS, dir string, drop func(int64) bool) error {
	offsets, err := snapshotOffsets(fs, dir)
	if err != nil {
		return err
	}
	removed := false
	var errs []error
	for _, off := range offsets {
		if !drop(off) {
			continue
		}
		if err := fs.Remove(snapshotPath(dir, off)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("engine: remove producer snapshot: %w", err))
			continue
		}
		removed = true
	}
	if removed {
		errs = append(errs, syncDir(fs, dir))
	}
	return errors.Join(errs...)
}
