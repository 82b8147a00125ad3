package engine

// Control batches: the transaction markers a transaction coordinator has
// written to a partition (through WriteTxnMarkers) to end a producer's
// transaction. A control batch has attribute bit 5 (0x20) set, the
// transactional bit 4 too, and one record, never compressed, whose key and
// value are Kafka's ControlRecordType and EndTransactionMarker, big-endian:
//
//	key                                  value
//	offset  size  field                  offset  size  field
//	     0     2  version  int16 (0)          0     2  version            int16 (0)
//	     2     2  type     int16              2     4  coordinator epoch  int32
//	                       0 abort, 1 commit
//
// Kafka's ControlRecordType.parseTypeId refuses a key shorter than 4 bytes
// or of a negative version, and reads the type of a newer version as it is
// (with a warning); EndTransactionMarker.deserializeValue refuses a value
// shorter than 6 bytes or of a negative version, and reads a newer one. The
// engine does the same, without the warnings. Types other than abort and
// commit (KRaft's leader-change and snapshot records, 2-4) are parsed and
// left to the caller, which treats them as markers of no transaction.

import (
	"encoding/binary"
	"fmt"
)

// ControlType is the type field of a control record's key.
type ControlType int16

// The control record types of transaction markers.
const (
	ControlAbort  ControlType = 0
	ControlCommit ControlType = 1
)

// String returns Kafka's name of the type: ABORT, COMMIT or UNKNOWN(n).
func (t ControlType) String() string {
	switch t {
	case ControlAbort:
		return "ABORT"
	case ControlCommit:
		return "COMMIT"
	}
	return fmt.Sprintf("UNKNOWN(%d)", int16(t))
}

// ControlRecord is a control batch's record, decoded.
type ControlRecord struct {
	KeyVersion       int16
	Type             ControlType
	ValueVersion     int16
	CoordinatorEpoch int32 // the coordinator epoch of an abort or commit marker
}

const (
	controlKeySize   = 4
	controlValueSize = 6
)

// ParseControlBatch decodes the control record of b, one whole control
// batch (BatchHeader.Control) as stored: its first record's key and, for an
// abort or commit marker, its value. Errors wrap ErrCorrupt and name the
// batch's base offset and the byte position in b. It does not allocate
// unless it fails.
func ParseControlBatch(b []byte) (ControlRecord, error) {
	if len(b) < BatchHeaderSize {
		return ControlRecord{}, fmt.Errorf("%w: control batch of %d bytes, shorter than the %d-byte header", ErrCorrupt, len(b), BatchHeaderSize)
	}
	h := parseHeader(b)
	bad := func(pos int, format string, args ...any) error {
		return fmt.Errorf("%w: control batch at offset %d, position %d: %s", ErrCorrupt, h.BaseOffset, pos, fmt.Sprintf(format, args...))
	}
	if !h.Control() {
		return ControlRecord{}, bad(offAttributes, "attributes 0x%x have no control bit", uint16(h.Attributes))
	}
	if c := h.Compression(); c != CompressionNone {
		return ControlRecord{}, bad(offAttributes, "compressed with %v", c)
	}
	if h.NumRecords < 1 {
		return ControlRecord{}, bad(offRecordCount, "record count %d, want 1", h.NumRecords)
	}
	end := min(int64(len(b)), h.Size())
	recs := b[:end]
	var f recordFrame
	var d defect
	if BatchHeaderSize >= len(recs) || !scanRecord(recs, BatchHeaderSize, &f, &d) {
		return ControlRecord{}, bad(BatchHeaderSize, "control record: %v", d)
	}
	be := binary.BigEndian
	if f.keyLen < controlKeySize {
		return ControlRecord{}, bad(max(f.keyPos, BatchHeaderSize), "control record key of %d bytes, want %d", f.keyLen, controlKeySize)
	}
	key := recs[f.keyPos:]
	r := ControlRecord{KeyVersion: int16(be.Uint16(key)), Type: ControlType(be.Uint16(key[2:]))}
	if r.KeyVersion < 0 {
		return ControlRecord{}, bad(f.keyPos, "control record key version %d", r.KeyVersion)
	}
	if r.Type != ControlAbort && r.Type != ControlCommit {
		return r, nil
	}
	if f.valueLen < controlValueSize {
		return ControlRecord{}, bad(max(f.valuePos, f.keyPos+f.keyLen), "%v marker value of %d bytes, want %d", r.Type, f.valueLen, controlValueSize)
	}
	val := recs[f.valuePos:]
	r.ValueVersion = int16(be.Uint16(val))
	r.CoordinatorEpoch = int32(be.Uint32(val[2:]))
	if r.ValueVersion < 0 {
		return ControlRecord{}, bad(f.valuePos, "%v marker value version %d", r.Type, r.ValueVersion)
	}
	return r, nil
}

// AppendControlBatch appends to dst a control batch of producer id and
// epoch holding one marker of type t (abort or commit) written by a
// coordinator of coordinatorEpoch, stamped with timestamp (ms): what a
// partition leader writes for WriteTxnMarkers. Its base offset is 0 and its
// leader epoch -1, for the log to assign.
func AppendControlBatch(dst []byte, producerID int64, epoch int16, t ControlType, coordinatorEpoch int32, timestamp int64) []byte {
	var key [controlKeySize]byte
	var val [controlValueSize]byte
	be := binary.BigEndian
	be.PutUint16(key[2:], uint16(t))
	be.PutUint32(val[2:], uint32(coordinatorEpoch))
	var bb BatchBuilder
	bb.Add(Record{Key: key[:], Value: val[:], Timestamp: timestamp})
	b := bb.Build()
	be.PutUint16(b[offAttributes:], attrTransactional|attrControl)
	be.PutUint64(b[offProducerID:], uint64(producerID))
	be.PutUint16(b[offProducerEpoch:], uint16(epoch))
	be.PutUint32(b[offCRC:], batchCRC(b))
	return append(dst, b...)
}
