// Kafka RecordBatch v2 (magic 2), the unit the log stores, all integers
// big-endian:
//
//	 offset  size  field
//	      0     8  baseOffset           int64   (assigned by the broker, outside the CRC)
//	      8     4  batchLength          int32   (bytes after this field: total size - 12)
//	     12     4  partitionLeaderEpoch int32   (stamped by the broker, outside the CRC)
//	     16     1  magic                int8    (2)
//	     17     4  crc                  uint32  CRC-32C (Castagnoli) of bytes [21, end)
//	     21     2  attributes           int16   bits 0-2 compression (0 none, 1 gzip,
//	                                            2 snappy, 3 lz4, 4 zstd), bit 3 timestamp
//	                                            type (1 = LogAppendTime), bit 4
//	                                            transactional, bit 5 control, bit 6
//	                                            delete horizon set
//	     23     4  lastOffsetDelta      int32
//	     27     8  baseTimestamp        int64
//	     35     8  maxTimestamp         int64
//	     43     8  producerId           int64
//	     51     2  producerEpoch        int16
//	     53     4  baseSequence         int32
//	     57     4  recordCount          int32
//	     61     …  records
//
// When the batch is compressed, the records section is the compressed form of
// the records; otherwise it is recordCount records back to back, each framed
// as follows (varint = zig-zag varint of an int32, at most 5 bytes; varlong =
// zig-zag varint of an int64, at most 10 bytes; Kafka's encoding, which is
// encoding/binary's Varint):
//
//	length            varint  bytes of the record after this field
//	attributes        int8    unused, 0
//	timestampDelta    varlong timestamp - baseTimestamp
//	offsetDelta       varint  offset - baseOffset
//	keyLength         varint  -1 = null key
//	key               keyLength bytes
//	valueLength       varint  -1 = null value
//	value             valueLength bytes
//	headerCount       varint
//	headers           headerCount times:
//	    headerKeyLength   varint  >= 0
//	    headerKey         headerKeyLength bytes (UTF-8)
//	    headerValueLength varint  -1 = null value
//	    headerValue       headerValueLength bytes

package engine

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"strconv"
)

// Field offsets in a RecordBatch v2 header.
const (
	offBaseOffset      = 0
	offBatchLength     = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57
)

// BatchHeaderSize is the size of a RecordBatch v2 header: the batch's
// records start at this offset.
const BatchHeaderSize = 61

// batchLogOverhead is the part of a batch that batchLength does not count:
// baseOffset and batchLength itself.
const batchLogOverhead = 12

// minBatchLength is the smallest valid batchLength: a header without records.
const minBatchLength = BatchHeaderSize - batchLogOverhead

// batchMagic is the magic byte of RecordBatch v2, the only format the engine
// stores.
const batchMagic = 2

// Attribute bits.
const (
	attrCompressionMask = 0x07
	attrLogAppendTime   = 0x08
	attrTransactional   = 0x10
	attrControl         = 0x20
	attrDeleteHorizon   = 0x40
)

// Compression is the codec of a batch's records, attribute bits 0-2.
type Compression int8

// The codecs Kafka defines.
const (
	CompressionNone   Compression = 0
	CompressionGzip   Compression = 1
	CompressionSnappy Compression = 2
	CompressionLZ4    Compression = 3
	CompressionZstd   Compression = 4
)

// String returns the codec's name as Kafka's compression.type spells it, or
// "Compression(n)" for a value Kafka does not define.
func (c Compression) String() string {
	switch c {
	case CompressionNone:
		return "none"
	case CompressionGzip:
		return "gzip"
	case CompressionSnappy:
		return "snappy"
	case CompressionLZ4:
		return "lz4"
	case CompressionZstd:
		return "zstd"
	}
	return "Compression(" + strconv.Itoa(int(c)) + ")"
}

// BatchHeader is the decoded 61-byte header of a RecordBatch v2.
type BatchHeader struct {
	BaseOffset      int64
	Length          int32 // the batchLength field
	LeaderEpoch     int32
	Magic           int8
	CRC             uint32
	Attributes      int16
	LastOffsetDelta int32
	BaseTimestamp   int64
	MaxTimestamp    int64
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	NumRecords      int32
}

// LastOffset returns the offset of the batch's last record:
// BaseOffset + LastOffsetDelta.
func (h *BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// Size returns the size of the whole batch in bytes: Length + 12.
func (h *BatchHeader) Size() int64 { return int64(h.Length) + batchLogOverhead }

// Compression returns the codec of the batch's records.
func (h *BatchHeader) Compression() Compression {
	return Compression(h.Attributes & attrCompressionMask)
}

// LogAppendTime reports whether the batch's timestamps are the broker's
// append time (MaxTimestamp) rather than the producer's create time.
func (h *BatchHeader) LogAppendTime() bool { return h.Attributes&attrLogAppendTime != 0 }

// Transactional reports whether the batch belongs to a transaction.
func (h *BatchHeader) Transactional() bool { return h.Attributes&attrTransactional != 0 }

// Control reports whether the batch holds control records (transaction
// markers) rather than data.
func (h *BatchHeader) Control() bool { return h.Attributes&attrControl != 0 }

// ParseBatchHeader decodes the 61-byte header at the start of b. It checks
// only that b holds 61 bytes; a shorter b gives an error wrapping
// io.ErrUnexpectedEOF.
func ParseBatchHeader(b []byte) (BatchHeader, error) {
	if len(b) < BatchHeaderSize {
		return BatchHeader{}, fmt.Errorf("engine: record batch header needs %d bytes, have %d: %w",
			BatchHeaderSize, len(b), io.ErrUnexpectedEOF)
	}
	return parseHeader(b), nil
}

// parseHeader decodes the header at the start of b, which holds at least
// BatchHeaderSize bytes.
func parseHeader(b []byte) BatchHeader {
	_ = b[BatchHeaderSize-1]
	be := binary.BigEndian
	return BatchHeader{
		BaseOffset:      int64(be.Uint64(b[offBaseOffset:])),
		Length:          int32(be.Uint32(b[offBatchLength:])),
		LeaderEpoch:     int32(be.Uint32(b[offLeaderEpoch:])),
		Magic:           int8(b[offMagic]),
		CRC:             be.Uint32(b[offCRC:]),
		Attributes:      int16(be.Uint16(b[offAttributes:])),
		LastOffsetDelta: int32(be.Uint32(b[offLastOffsetDelta:])),
		BaseTimestamp:   int64(be.Uint64(b[offBaseTimestamp:])),
		MaxTimestamp:    int64(be.Uint64(b[offMaxTimestamp:])),
		ProducerID:      int64(be.Uint64(b[offProducerID:])),
		ProducerEpoch:   int16(be.Uint16(b[offProducerEpoch:])),
		BaseSequence:    int32(be.Uint32(b[offBaseSequence:])),
		NumRecords:      int32(be.Uint32(b[offRecordCount:])),
	}
}

// ValidateBatch checks a batch a client sent (the produce path). b must be
// exactly one batch.
//
// It checks that b holds a header, that batchLength+12 == len(b), that magic
// is 2, the CRC-32C, that the compression codec is one Kafka defines, that
// recordCount > 0 and lastOffsetDelta == recordCount-1. For an uncompressed
// batch it also walks every record's framing: each record's length prefix
// covers exactly its fields, the i-th record's offsetDelta is i, key and
// value lengths are >= -1, header counts and header key lengths are >= 0,
// varints are at most Kafka's length (5 bytes for an int32, 10 for an int64),
// and exactly recordCount records end exactly at the end of b. A compressed
// batch's payload is not inspected.
//
// ValidateBatch does not allocate unless it fails. Errors wrap
// ErrInvalidBatch (and also ErrCorrupt for a wrong length, magic or CRC:
// bytes damaged rather than a batch built wrong) and name the defect and its byte position in b (for a
// record, the position of the offending field), e.g. "engine: invalid record
// batch: record 3 at position 190: key length -2".
func ValidateBatch(b []byte) (BatchHeader, error) {
	if len(b) < BatchHeaderSize {
		return BatchHeader{}, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header",
			ErrInvalidBatch, len(b), BatchHeaderSize)
	}
	h := parseHeader(b)
	if h.Size() != int64(len(b)) {
		return h, fmt.Errorf("%w: %w: batch length %d at position %d announces %d bytes, have %d",
			ErrInvalidBatch, ErrCorrupt, h.Length, offBatchLength, h.Size(), len(b))
	}
	if h.Magic != batchMagic {
		return h, fmt.Errorf("%w: %w: magic %d at position %d, want %d",
			ErrInvalidBatch, ErrCorrupt, h.Magic, offMagic, batchMagic)
	}
	if crc := batchCRC(b); crc != h.CRC {
		return h, fmt.Errorf("%w: %w: CRC 0x%08x at position %d, computed 0x%08x",
			ErrInvalidBatch, ErrCorrupt, h.CRC, offCRC, crc)
	}
	if c := h.Compression(); c > CompressionZstd {
		return h, fmt.Errorf("%w: unknown compression codec %d in attributes at position %d",
			ErrInvalidBatch, int8(c), offAttributes)
	}
	if h.NumRecords <= 0 {
		return h, fmt.Errorf("%w: record count %d at position %d, want > 0",
			ErrInvalidBatch, h.NumRecords, offRecordCount)
	}
	if int64(h.LastOffsetDelta) != int64(h.NumRecords)-1 {
		return h, fmt.Errorf("%w: last offset delta %d at position %d, want record count - 1 = %d",
			ErrInvalidBatch, h.LastOffsetDelta, offLastOffsetDelta, h.NumRecords-1)
	}
	if h.Compression() != CompressionNone {
		return h, nil
	}
	if recordsWellFormed(b, h.NumRecords) {
		return h, nil
	}
	return h, walkRecords(b, h.NumRecords)
}

// walkRecords is ValidateBatch's detailed record walk: it checks, with
// scanRecord, that b, a whole uncompressed batch, holds exactly n records
// from BatchHeaderSize to its end, the i-th with offset delta i, and returns
// the error ValidateBatch reports for the first defect, or nil.
// recordsWellFormed gives the same answer faster; ValidateBatch calls
// walkRecords only for its error.
func walkRecords(b []byte, n int32) error {
	pos := BatchHeaderSize
	for i := int32(0); i < n; i++ {
		if pos == len(b) {
			return fmt.Errorf("%w: record %d at position %d: batch ends after %d of %d records",
				ErrInvalidBatch, i, pos, i, n)
		}
		var f recordFrame
		var d defect
		if !scanRecord(b, pos, &f, &d) {
			return fmt.Errorf("%w: record %d at position %d: %v", ErrInvalidBatch, i, d.pos, d)
		}
		if f.offsetDelta != i {
			return fmt.Errorf("%w: record %d at position %d: offset delta %d, want %d",
				ErrInvalidBatch, i, f.offsetDeltaPos, f.offsetDelta, i)
		}
		pos = f.end
	}
	if pos != len(b) {
		return fmt.Errorf("%w: %d bytes at position %d after the last of %d records",
			ErrInvalidBatch, len(b)-pos, pos, n)
	}
	return nil
}

// checkStoredBatch checks a batch found on disk or fetched from a leader
// (recovery, follower append). b holds at least the whole batch; the batch is
// b[:h.Size()] and the rest of b is ignored.
//
// It checks that batchLength >= 49, magic is 2, the CRC-32C, and that
// lastOffsetDelta >= 0 and 0 <= recordCount <= lastOffsetDelta+1: it allows
// the empty batches and offset gaps Kafka's log cleaner leaves. It does not
// walk the records. Errors wrap ErrCorrupt and do not name a position (the
// caller adds the file and position).
//
// When b is shorter than the header, or than the batch the header announces,
// the error wraps io.ErrUnexpectedEOF instead (and not ErrCorrupt), so that
// recovery can tell a torn tail from corruption. The header is returned
// whenever b holds one.
func checkStoredBatch(b []byte) (BatchHeader, error) {
	if len(b) < BatchHeaderSize {
		return BatchHeader{}, fmt.Errorf("engine: record batch truncated: %d bytes, shorter than the %d-byte header: %w",
			len(b), BatchHeaderSize, io.ErrUnexpectedEOF)
	}
	h := parseHeader(b)
	if h.Length < minBatchLength {
		return h, fmt.Errorf("%w: batch length %d below the minimum %d",
			ErrCorrupt, h.Length, minBatchLength)
	}
	if h.Magic != batchMagic {
		return h, fmt.Errorf("%w: batch magic %d, want %d", ErrCorrupt, h.Magic, batchMagic)
	}
	if h.Size() > int64(len(b)) {
		return h, fmt.Errorf("engine: record batch truncated: header announces %d bytes, have %d: %w",
			h.Size(), len(b), io.ErrUnexpectedEOF)
	}
	if crc := batchCRC(b[:h.Size()]); crc != h.CRC {
		return h, fmt.Errorf("%w: batch CRC 0x%08x, computed 0x%08x", ErrCorrupt, h.CRC, crc)
	}
	if h.LastOffsetDelta < 0 {
		return h, fmt.Errorf("%w: batch last offset delta %d is negative", ErrCorrupt, h.LastOffsetDelta)
	}
	if h.NumRecords < 0 || int64(h.NumRecords) > int64(h.LastOffsetDelta)+1 {
		return h, fmt.Errorf("%w: batch record count %d outside [0, last offset delta + 1 = %d]",
			ErrCorrupt, h.NumRecords, int64(h.LastOffsetDelta)+1)
	}
	return h, nil
}

// setBaseOffset writes the baseOffset field of the batch b. The field is
// outside the CRC.
func setBaseOffset(b []byte, off int64) {
	binary.BigEndian.PutUint64(b[offBaseOffset:offBaseOffset+8], uint64(off))
}

// setLeaderEpoch writes the partitionLeaderEpoch field of the batch b. The
// field is outside the CRC.
func setLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:offLeaderEpoch+4], uint32(epoch))
}

// castagnoli is the CRC-32C table Kafka's batch CRC uses.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batchCRC returns the CRC-32C of b[21:], the bytes the crc field of the
// batch b covers. b must be exactly the batch.
func batchCRC(b []byte) uint32 {
	return crc32.Checksum(b[offAttributes:], castagnoli)
}

// recordFrame is the layout of one record found by scanRecord. Positions are
// indexes into the batch.
type recordFrame struct {
	end            int // first byte after the record
	attributes     int8
	timestampDelta int64
	offsetDelta    int32
	offsetDeltaPos int
	keyPos         int // first byte of the key; -1 for a null key
	keyLen         int
	valuePos       int // first byte of the value; -1 for a null value
	valueLen       int
	headerCount    int
	headersPos     int // first byte of the first header
}

// defectKind says what scanRecord found wrong with a record.
type defectKind uint8

const (
	defectNone       defectKind = iota
	defectTruncated             // a field runs past the end of the record
	defectBatchEnd              // the record length runs past the end of the batch
	defectLongVarint            // varint longer than Kafka allows for its type
	defectNegative              // a length or count below its minimum
	defectLeftover              // bytes after the last header inside the record
)

// defect describes a record's framing error without allocating; String
// formats it when the caller builds an error.
type defect struct {
	kind  defectKind
	field string // the field involved, e.g. "key length"
	pos   int    // byte position of the field in the batch
	val   int64  // the value read, where one was
	room  int    // bytes left where the field needed more
}

func (d defect) String() string {
	switch d.kind {
	case defectTruncated:
		if d.val < 0 {
			return fmt.Sprintf("%s runs past the end of the record (%d bytes left)", d.field, d.room)
		}
		return fmt.Sprintf("%s of %d bytes runs past the end of the record (%d bytes left)", d.field, d.val, d.room)
	case defectBatchEnd:
		if d.val < 0 {
			return fmt.Sprintf("%s runs past the end of the batch (%d bytes left)", d.field, d.room)
		}
		return fmt.Sprintf("%s %d runs past the end of the batch (%d bytes left)", d.field, d.val, d.room)
	case defectLongVarint:
		return fmt.Sprintf("%s varint too long or out of range", d.field)
	case defectNegative:
		return fmt.Sprintf("%s %d", d.field, d.val)
	case defectLeftover:
		return fmt.Sprintf("record length %d leaves %d bytes after the last header", d.val, d.room)
	}
	return "no defect"
}

// Field names used in defects.
const (
	fieldRecordLength      = "record length"
	fieldAttributes        = "attributes"
	fieldTimestampDelta    = "timestamp delta"
	fieldOffsetDelta       = "offset delta"
	fieldKeyLength         = "key length"
	fieldKey               = "key"
	fieldValueLength       = "value length"
	fieldValue             = "value"
	fieldHeaderCount       = "header count"
	fieldHeaderKeyLength   = "header key length"
	fieldHeaderKey         = "header key"
	fieldHeaderValueLength = "header value length"
	fieldHeaderValue       = "header value"
)

// maxVarint32Len is the longest varint Kafka reads for an int32.
const maxVarint32Len = 5

// recordScanner reads the fields of a record in a batch, checking each
// against the end of the record. The first defect stops it and is kept in d.
type recordScanner struct {
	b   []byte // the batch
	p   int    // position of the next field
	end int    // end of the record (of the batch, for the length prefix)
	d   defect
}

// varint32 reads the zig-zag varint of an int32. As Kafka, it reads at most 5
// bytes; it also rejects a 5-byte encoding whose value overflows 32 bits,
// which Kafka would silently truncate.
func (s *recordScanner) varint32(field string) (int32, bool) {
	if p := s.p; p < s.end {
		if c := s.b[p]; c < 0x80 {
			s.p = p + 1
			return int32(c>>1) ^ -int32(c&1), true
		}
	}
	return s.varint32Slow(field)
}

func (s *recordScanner) varint32Slow(field string) (int32, bool) {
	lim := min(s.end, s.p+maxVarint32Len)
	ux, n := binary.Uvarint(s.b[s.p:lim])
	switch {
	case n == 0 && lim-s.p == maxVarint32Len, n < 0, ux > math.MaxUint32:
		s.d = defect{kind: defectLongVarint, field: field, pos: s.p}
		return 0, false
	case n == 0:
		s.d = defect{kind: defectTruncated, field: field, pos: s.p, val: -1, room: s.end - s.p}
		return 0, false
	}
	s.p += n
	x := uint32(ux)
	return int32(x>>1) ^ -int32(x&1), true
}

// varint64 reads the zig-zag varint of an int64, at most 10 bytes.
func (s *recordScanner) varint64(field string) (int64, bool) {
	if s.p < s.end && s.b[s.p] < 0x80 {
		c := s.b[s.p]
		s.p++
		return int64(c>>1) ^ -int64(c&1), true
	}
	v, n := binary.Varint(s.b[s.p:s.end])
	switch {
	case n < 0:
		s.d = defect{kind: defectLongVarint, field: field, pos: s.p}
		return 0, false
	case n == 0:
		s.d = defect{kind: defectTruncated, field: field, pos: s.p, val: -1, room: s.end - s.p}
		return 0, false
	}
	s.p += n
	return v, true
}

// bytes reads a length varint followed by that many bytes, the framing of
// keys, values and header parts. It returns the position and length of the
// bytes; the position is -1 for a nullable field of length -1.
func (s *recordScanner) bytes(lenField, dataField string, nullable bool) (pos, n int, ok bool) {
	lenPos := s.p
	l, ok := s.varint32(lenField)
	if !ok {
		return 0, 0, false
	}
	if l < 0 {
		if l == -1 && nullable {
			return -1, 0, true
		}
		s.d = defect{kind: defectNegative, field: lenField, pos: lenPos, val: int64(l)}
		return 0, 0, false
	}
	if int(l) > s.end-s.p {
		s.d = defect{kind: defectTruncated, field: dataField, pos: s.p, val: int64(l), room: s.end - s.p}
		return 0, 0, false
	}
	pos = s.p
	s.p += int(l)
	return pos, int(l), true
}

// scanRecord checks the framing of the record starting at b[pos], where b is
// a whole batch, and stores its layout in f. On a defect it stores it in d and
// returns false. It does not allocate. The record's offset delta is returned,
// not checked.
func scanRecord(b []byte, pos int, f *recordFrame, d *defect) bool {
	s := recordScanner{b: b, p: pos, end: len(b)}
	length, ok := s.varint32(fieldRecordLength)
	if !ok {
		if s.d.kind == defectTruncated {
			s.d.kind = defectBatchEnd
		}
		*d = s.d
		return false
	}
	if length < 0 {
		*d = defect{kind: defectNegative, field: fieldRecordLength, pos: pos, val: int64(length)}
		return false
	}
	if int(length) > len(b)-s.p {
		*d = defect{kind: defectBatchEnd, field: fieldRecordLength, pos: pos, val: int64(length), room: len(b) - s.p}
		return false
	}
	s.end = s.p + int(length)
	f.end = s.end

	if s.p == s.end {
		*d = defect{kind: defectTruncated, field: fieldAttributes, pos: s.p, val: -1}
		return false
	}
	f.attributes = int8(b[s.p])
	s.p++
	if f.timestampDelta, ok = s.varint64(fieldTimestampDelta); !ok {
		*d = s.d
		return false
	}
	f.offsetDeltaPos = s.p
	if f.offsetDelta, ok = s.varint32(fieldOffsetDelta); !ok {
		*d = s.d
		return false
	}
	if f.keyPos, f.keyLen, ok = s.bytes(fieldKeyLength, fieldKey, true); !ok {
		*d = s.d
		return false
	}
	if f.valuePos, f.valueLen, ok = s.bytes(fieldValueLength, fieldValue, true); !ok {
		*d = s.d
		return false
	}
	countPos := s.p
	count, ok := s.varint32(fieldHeaderCount)
	if !ok {
		*d = s.d
		return false
	}
	if count < 0 {
		*d = defect{kind: defectNegative, field: fieldHeaderCount, pos: countPos, val: int64(count)}
		return false
	}
	f.headerCount = int(count)
	f.headersPos = s.p
	for range count {
		if _, _, ok = s.bytes(fieldHeaderKeyLength, fieldHeaderKey, false); !ok {
			*d = s.d
			return false
		}
		if _, _, ok = s.bytes(fieldHeaderValueLength, fieldHeaderValue, true); !ok {
			*d = s.d
			return false
		}
	}
	if s.p != s.end {
		*d = defect{kind: defectLeftover, pos: s.p, val: int64(length), room: s.end - s.p}
		return false
	}
	return true
}
