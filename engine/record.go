package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
)

// Header is a record header. Value nil means a null value.
type Header struct {
	Key   string
	Value []byte
}

// Record is one record. Timestamp is milliseconds since the Unix epoch
// (Kafka's unit). Key or Value nil means null. Offset is filled in by the
// iterator.
type Record struct {
	Offset    int64
	Timestamp int64
	Key       []byte
	Value     []byte
	Headers   []Header
}

// BatchBuilder builds one uncompressed RecordBatch v2 (see batch.go for the
// layout). The zero value is ready to use.
type BatchBuilder struct {
	buf     []byte // header placeholder followed by the encoded records
	n       int    // records added
	firstTS int64  // first record's timestamp, the batch's baseTimestamp
	maxTS   int64  // largest timestamp added
}

// Add appends a record to the batch. Its offsetDelta is its index in the
// batch and its timestampDelta is relative to the first record's timestamp;
// r.Offset is ignored. Add copies r's bytes, so the caller may reuse them.
func (b *BatchBuilder) Add(r Record) {
	if b.n == 0 {
		b.buf = append(b.buf[:0], make([]byte, BatchHeaderSize)...)
		b.firstTS, b.maxTS = r.Timestamp, r.Timestamp
	}
	b.maxTS = max(b.maxTS, r.Timestamp)
	tsDelta := r.Timestamp - b.firstTS
	offsetDelta := int64(b.n)

	size := 1 + varintLen(tsDelta) + varintLen(offsetDelta) +
		bytesFieldLen(r.Key) + bytesFieldLen(r.Value) + varintLen(int64(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		size += varintLen(int64(len(h.Key))) + len(h.Key) + bytesFieldLen(h.Value)
	}

	buf := binary.AppendVarint(b.buf, int64(size))
	buf = append(buf, 0) // attributes
	buf = binary.AppendVarint(buf, tsDelta)
	buf = binary.AppendVarint(buf, offsetDelta)
	buf = appendBytesField(buf, r.Key)
	buf = appendBytesField(buf, r.Value)
	buf = binary.AppendVarint(buf, int64(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		buf = binary.AppendVarint(buf, int64(len(h.Key)))
		buf = append(buf, h.Key...)
		buf = appendBytesField(buf, h.Value)
	}
	b.buf = buf
	b.n++
}

// Len returns the number of records added since the builder was created or
// last reset.
func (b *BatchBuilder) Len() int { return b.n }

// Reset empties the builder, keeping its buffer's capacity.
func (b *BatchBuilder) Reset() {
	b.buf = b.buf[:0]
	b.n = 0
	b.firstTS, b.maxTS = 0, 0
}

// Build returns the batch: baseOffset 0, partitionLeaderEpoch -1, magic 2,
// attributes 0 (uncompressed, CreateTime), lastOffsetDelta = n-1,
// baseTimestamp = the first record's timestamp, maxTimestamp = the largest
// record timestamp, producerId -1, producerEpoch -1, baseSequence -1 and the
// CRC computed. The slice is owned by the builder and valid until the next Add
// or Reset. Building an empty batch returns nil. A batch must stay below
// 2 GiB, the limit of its int32 length field.
func (b *BatchBuilder) Build() []byte {
	if b.n == 0 {
		return nil
	}
	buf := b.buf
	be := binary.BigEndian
	be.PutUint64(buf[offBaseOffset:], 0)
	be.PutUint32(buf[offBatchLength:], uint32(len(buf)-batchLogOverhead))
	be.PutUint32(buf[offLeaderEpoch:], uint32(0xffffffff)) // -1
	buf[offMagic] = batchMagic
	be.PutUint16(buf[offAttributes:], 0)
	be.PutUint32(buf[offLastOffsetDelta:], uint32(b.n-1))
	be.PutUint64(buf[offBaseTimestamp:], uint64(b.firstTS))
	be.PutUint64(buf[offMaxTimestamp:], uint64(b.maxTS))
	be.PutUint64(buf[offProducerID:], 0xffffffffffffffff)   // -1
	be.PutUint16(buf[offProducerEpoch:], 0xffff)            // -1
	be.PutUint32(buf[offBaseSequence:], uint32(0xffffffff)) // -1
	be.PutUint32(buf[offRecordCount:], uint32(b.n))
	be.PutUint32(buf[offCRC:], batchCRC(buf))
	return buf
}

// varintLen returns the length of v as a zig-zag varint.
func varintLen(v int64) int {
	ux := uint64(v)<<1 ^ uint64(v>>63)
	return (bits.Len64(ux|1) + 6) / 7
}

// bytesFieldLen returns the encoded length of a nullable byte field: its
// length varint (-1 for nil) and its bytes.
func bytesFieldLen(p []byte) int {
	if p == nil {
		return varintLen(-1)
	}
	return varintLen(int64(len(p))) + len(p)
}

// appendBytesField appends a nullable byte field: its length varint (-1 for
// nil) and its bytes.
func appendBytesField(dst, p []byte) []byte {
	if p == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(p)))
	return append(dst, p...)
}

// RecordIterator walks the records of one or more concatenated batches, for
// example the bytes of a read view.
//
// It checks each batch with checkStoredBatch and the framing of each record,
// skips control batches, and for uncompressed batches yields each record with
// its absolute offset (baseOffset + offsetDelta) and absolute timestamp
// (baseTimestamp + timestampDelta, or the batch's maxTimestamp for a
// LogAppendTime batch). A compressed batch stops iteration with an error
// wrapping ErrUnsupportedCompression; a defect stops it with an error wrapping
// ErrCorrupt that names the byte position in the input. A trailing partial
// batch (shorter than its header announces) ends iteration without error, as a
// Kafka consumer treats a truncated fetch.
//
// A Record's Key, Value and header values alias the input, and its Headers
// slice is reused by the next call to Next. Header keys are strings and so
// cannot alias the input: the iterator reuses the previous record's key
// strings when they match, so records with recurring header keys iterate
// without allocating.
type RecordIterator struct {
	data     []byte // the batches
	next     int    // position in data of the next batch
	batch    []byte // the batch being walked; nil between batches
	batchPos int    // position in data of batch
	h        BatchHeader
	pos      int   // position in batch of the next record
	left     int32 // records of batch not yet yielded
	rec      Record
	headers  []Header
	keys     []string // header keys by index, kept from earlier records
	err      error
}

// NewRecordIterator returns an iterator over the records of batches, one or
// more concatenated RecordBatch v2.
func NewRecordIterator(batches []byte) *RecordIterator {
	it := new(RecordIterator)
	it.reset(batches)
	return it
}

// reset starts the iterator over on batches, keeping its buffers.
func (it *RecordIterator) reset(batches []byte) {
	*it = RecordIterator{data: batches, headers: it.headers[:0], keys: it.keys}
}

// Next advances to the next record and reports whether there is one. It
// returns false at the end of the input or on an error; Err tells which.
func (it *RecordIterator) Next() bool {
	for it.err == nil {
		if it.left > 0 {
			return it.nextRecord()
		}
		if it.batch != nil && it.pos != len(it.batch) {
			it.err = fmt.Errorf("%w: %d bytes at position %d after the last of %d records of the batch at position %d",
				ErrCorrupt, len(it.batch)-it.pos, it.batchPos+it.pos, it.h.NumRecords, it.batchPos)
			return false
		}
		it.batch = nil
		if !it.nextBatch() {
			return false
		}
	}
	return false
}

// nextBatch moves to the next batch, setting it.batch and it.left. It
// returns false at the end of the input or on an error.
func (it *RecordIterator) nextBatch() bool {
	if it.next >= len(it.data) {
		return false
	}
	h, err := checkStoredBatch(it.data[it.next:])
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			// A torn tail: the records before it are all there is.
			it.next = len(it.data)
			return false
		}
		it.err = fmt.Errorf("%w at position %d", err, it.next)
		return false
	}
	size := int(h.Size())
	it.h = h
	it.batch = it.data[it.next : it.next+size]
	it.batchPos = it.next
	it.next += size
	it.pos = BatchHeaderSize
	it.left = 0
	if h.Control() {
		it.batch = nil
		return true
	}
	switch c := h.Compression(); {
	case c > CompressionZstd:
		it.err = fmt.Errorf("%w: unknown compression codec %d in the batch at position %d",
			ErrCorrupt, int8(c), it.batchPos)
		return false
	case c != CompressionNone:
		it.err = fmt.Errorf("%w: %s batch at position %d", ErrUnsupportedCompression, c, it.batchPos)
		return false
	}
	it.left = h.NumRecords
	return true
}

// nextRecord decodes the record at it.pos of it.batch into it.rec.
func (it *RecordIterator) nextRecord() bool {
	index := it.h.NumRecords - it.left
	var f recordFrame
	var d defect
	if !scanRecord(it.batch, it.pos, &f, &d) {
		it.err = fmt.Errorf("%w: record %d of the batch at position %d, at position %d: %v",
			ErrCorrupt, index, it.batchPos, it.batchPos+d.pos, d)
		return false
	}
	if f.offsetDelta < 0 || f.offsetDelta > it.h.LastOffsetDelta {
		it.err = fmt.Errorf("%w: record %d of the batch at position %d, at position %d: offset delta %d outside [0, %d]",
			ErrCorrupt, index, it.batchPos, it.batchPos+f.offsetDeltaPos, f.offsetDelta, it.h.LastOffsetDelta)
		return false
	}
	b := it.batch
	r := &it.rec
	r.Offset = it.h.BaseOffset + int64(f.offsetDelta)
	if it.h.LogAppendTime() {
		r.Timestamp = it.h.MaxTimestamp
	} else {
		r.Timestamp = it.h.BaseTimestamp + f.timestampDelta
	}
	r.Key = subslice(b, f.keyPos, f.keyLen)
	r.Value = subslice(b, f.valuePos, f.valueLen)
	hs := it.headers[:0]
	s := recordScanner{b: b, p: f.headersPos, end: f.end}
	for j := range f.headerCount {
		// scanRecord has checked the framing: these reads cannot fail.
		kp, kl, _ := s.bytes(fieldHeaderKeyLength, fieldHeaderKey, false)
		vp, vl, _ := s.bytes(fieldHeaderValueLength, fieldHeaderValue, true)
		hs = append(hs, Header{Key: it.headerKey(j, b[kp:kp+kl]), Value: subslice(b, vp, vl)})
	}
	it.headers = hs
	if len(hs) == 0 {
		r.Headers = nil
	} else {
		r.Headers = hs
	}
	it.pos = f.end
	it.left--
	return true
}

// headerKey returns key as a string, reusing the string of the j-th header of
// an earlier record when it is equal.
func (it *RecordIterator) headerKey(j int, key []byte) string {
	if j < len(it.keys) {
		if it.keys[j] == string(key) {
			return it.keys[j]
		}
		it.keys[j] = string(key)
		return it.keys[j]
	}
	s := string(key)
	if j == len(it.keys) {
		it.keys = append(it.keys, s)
	}
	return s
}

// subslice returns b[pos:pos+n] with its capacity capped, or nil when pos is
// -1 (a null field).
func subslice(b []byte, pos, n int) []byte {
	if pos < 0 {
		return nil
	}
	return b[pos : pos+n : pos+n]
}

// Record returns the current record. Its Key, Value and header values alias
// the input and stay valid as long as it does; its Headers slice is reused by
// the next call to Next.
func (it *RecordIterator) Record() Record { return it.rec }

// Err returns the error that stopped the iteration, or nil if it ran to the
// end of the input (or to a trailing partial batch).
func (it *RecordIterator) Err() error { return it.err }
