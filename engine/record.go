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

// BatchBuilder builds one RecordBatch v2 (see batch.go for the layout),
// uncompressed with Build or compressed with BuildCompressed. The zero value
// is ready to use.
type BatchBuilder struct {
	buf     []byte // header placeholder followed by the encoded records
	cbuf    []byte // the last compressed batch built: header and compressed records
	n       int    // records added
	firstTS int64  // first record's timestamp, the batch's baseTimestamp
	maxTS   int64  // largest timestamp added
	// producer, when set, is the producer the batches carry (SetProducer).
	producer *batchProducer
}

type batchProducer struct {
	id            int64
	epoch         int16
	baseSequence  int32
	transactional bool
}

// SetProducer makes the batches built from now on carry producer id and
// epoch, baseSequence as their first record's sequence and, with
// transactional, the transactional attribute (bit 4): an idempotent or
// transactional producer's batch, or the group coordinator's transactional
// offset commit. Reset keeps it; SetProducer(-1, -1, -1, false) goes back to
// the default (no producer).
func (b *BatchBuilder) SetProducer(id int64, epoch int16, baseSequence int32, transactional bool) {
	if id < 0 && !transactional {
		b.producer = nil
		return
	}
	b.producer = &batchProducer{id, epoch, baseSequence, transactional}
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
// record timestamp, producerId -1, producerEpoch -1, baseSequence -1 (or
// SetProducer's, with its transactional attribute) and the CRC computed. The slice is owned by the builder and valid until the next Add
// or Reset. Building an empty batch returns nil. A batch must stay below
// 2 GiB, the limit of its int32 length field.
func (b *BatchBuilder) Build() []byte {
	if b.n == 0 {
		return nil
	}
	b.putHeader(b.buf, CompressionNone)
	return b.buf
}

// BuildCompressed returns the batch as Build does, but with its records
// section compressed with c and c in the attributes, framed as Kafka's Java
// producer frames each codec (see compression.go: gzip, xerial-framed
// snappy, LZ4 frames of 64 KiB blocks, zstd). CompressionNone gives what
// Build gives. Unlike a Kafka client it keeps the codec even when
// compressing does not shrink the records. The slice is owned by the builder
// and valid until the next Add, Reset or BuildCompressed. Building an empty
// batch returns nil; an unknown codec is an error.
func (b *BatchBuilder) BuildCompressed(c Compression) ([]byte, error) {
	if c == CompressionNone {
		return b.Build(), nil
	}
	if c < CompressionNone || c > CompressionZstd {
		return nil, fmt.Errorf("engine: cannot compress with %v", c)
	}
	if b.n == 0 {
		return nil, nil
	}
	out := append(b.cbuf[:0], make([]byte, BatchHeaderSize)...)
	out, err := compress(out, c, b.buf[BatchHeaderSize:])
	if err != nil {
		return nil, fmt.Errorf("engine: compress batch with %v: %w", c, err)
	}
	b.cbuf = out
	b.putHeader(out, c)
	return out, nil
}

// putHeader writes the header of the batch buf holds (see Build) with codec
// c in its attributes, and its CRC last.
func (b *BatchBuilder) putHeader(buf []byte, c Compression) {
	be := binary.BigEndian
	be.PutUint64(buf[offBaseOffset:], 0)
	be.PutUint32(buf[offBatchLength:], uint32(len(buf)-batchLogOverhead))
	be.PutUint32(buf[offLeaderEpoch:], uint32(0xffffffff)) // -1
	buf[offMagic] = batchMagic
	attrs := uint16(c)
	pid, epoch, seq := int64(-1), int16(-1), int32(-1)
	if p := b.producer; p != nil {
		pid, epoch, seq = p.id, p.epoch, p.baseSequence
		if p.transactional {
			attrs |= attrTransactional
		}
	}
	be.PutUint16(buf[offAttributes:], attrs)
	be.PutUint32(buf[offLastOffsetDelta:], uint32(b.n-1))
	be.PutUint64(buf[offBaseTimestamp:], uint64(b.firstTS))
	be.PutUint64(buf[offMaxTimestamp:], uint64(b.maxTS))
	be.PutUint64(buf[offProducerID:], uint64(pid))
	be.PutUint16(buf[offProducerEpoch:], uint16(epoch))
	be.PutUint32(buf[offBaseSequence:], uint32(seq))
	be.PutUint32(buf[offRecordCount:], uint32(b.n))
	be.PutUint32(buf[offCRC:], batchCRC(buf))
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
// skips control batches, and yields each record with its absolute offset
// (baseOffset + offsetDelta) and absolute timestamp (baseTimestamp +
// timestampDelta, or the batch's maxTimestamp for a LogAppendTime batch). A
// compressed batch's records are first decompressed (gzip, snappy raw or
// xerial-framed, lz4 frames, zstd: see compression.go) into a buffer the
// iterator owns and reuses, then walked the same way. A defect stops
// iteration with an error wrapping ErrCorrupt that names the byte position
// in the input (for a compressed batch, the batch's position and the
// position in its decompressed records); a batch whose records decompress to
// more than 1 GiB stops it with an error wrapping ErrBatchTooLarge. A
// trailing partial batch (shorter than its header announces) ends iteration
// without error, as a Kafka consumer treats a truncated fetch.
//
// A Record's Key, Value and header values alias the input for an
// uncompressed batch, and the iterator's decompression buffer for a
// compressed one, which the next compressed batch overwrites: copy them to
// keep them past the batch. The Headers slice is reused by the next call to
// Next. Header keys are strings and so cannot alias the input: the iterator
// reuses the previous record's key strings when they match, so records with
// recurring header keys iterate without allocating.
type RecordIterator struct {
	data     []byte // the batches
	next     int    // position in data of the next batch
	batch    []byte // the batch being walked; nil between batches
	batchPos int    // position in data of batch
	h        BatchHeader
	recs     []byte // where the batch's records are: batch itself, or buf when compressed
	pos      int    // position in recs of the next record
	left     int32  // records of batch not yet yielded
	rec      Record
	headers  []Header
	keys     []string // header keys by index, kept from earlier records
	buf      []byte   // decompressed records of the current compressed batch; reused
	control  bool     // yield the records of control batches instead of skipping them
	err      error
}

// NewRecordIterator returns an iterator over the records of batches, one or
// more concatenated RecordBatch v2.
func NewRecordIterator(batches []byte) *RecordIterator {
	it := new(RecordIterator)
	it.reset(batches)
	return it
}

// reset starts the iterator over on batches, keeping its buffers and mode.
func (it *RecordIterator) reset(batches []byte) {
	*it = RecordIterator{data: batches, headers: it.headers[:0], keys: it.keys, buf: it.buf[:0], control: it.control}
}

// Next advances to the next record and reports whether there is one. It
// returns false at the end of the input or on an error; Err tells which.
func (it *RecordIterator) Next() bool {
	for it.err == nil {
		if it.left > 0 {
			return it.nextRecord()
		}
		if it.batch != nil && it.pos != len(it.recs) {
			it.err = fmt.Errorf("%w: %d bytes %s after the last of %d records of the batch at position %d",
				ErrCorrupt, len(it.recs)-it.pos, it.where(it.pos), it.h.NumRecords, it.batchPos)
			return false
		}
		it.batch = nil
		if !it.nextBatch() {
			return false
		}
	}
	return false
}

// compressed reports whether the current batch's records are decompressed
// into it.buf.
func (it *RecordIterator) compressed() bool { return it.h.Compression() != CompressionNone }

// where names position p of it.recs for an error: a position in the input
// for an uncompressed batch, a position in the decompressed records for a
// compressed one.
func (it *RecordIterator) where(p int) string {
	if it.compressed() {
		return fmt.Sprintf("at byte %d of its %v-decompressed records", p, it.h.Compression())
	}
	return fmt.Sprintf("at position %d", it.batchPos+p)
}

// nextBatch moves to the next batch, setting it.batch, it.recs and it.left.
// It returns false at the end of the input or on an error.
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
	it.recs, it.pos = it.batch, BatchHeaderSize
	it.left = 0
	if h.Control() && !it.control {
		it.batch = nil
		return true
	}
	switch c := h.Compression(); {
	case c > CompressionZstd:
		it.err = fmt.Errorf("%w: unknown compression codec %d in the batch at position %d",
			ErrCorrupt, int8(c), it.batchPos)
		return false
	case c != CompressionNone:
		it.buf, err = decompress(it.buf, c, it.batch[BatchHeaderSize:])
		if errors.Is(err, errDecompressTooLarge) {
			it.err = fmt.Errorf("%w: %v batch at position %d: records decompress to more than %d bytes",
				ErrBatchTooLarge, c, it.batchPos, maxDecompressedBatchBytes)
			return false
		}
		if err != nil {
			it.err = fmt.Errorf("%w: %v batch at position %d does not decompress: %v", ErrCorrupt, c, it.batchPos, err)
			return false
		}
		it.recs, it.pos = it.buf, 0
	}
	it.left = h.NumRecords
	return true
}

// nextRecord decodes the record at it.pos of it.recs into it.rec.
func (it *RecordIterator) nextRecord() bool {
	index := it.h.NumRecords - it.left
	var f recordFrame
	var d defect
	if !scanRecord(it.recs, it.pos, &f, &d) {
		it.err = fmt.Errorf("%w: record %d of the batch at position %d, %s: %v",
			ErrCorrupt, index, it.batchPos, it.where(d.pos), d)
		return false
	}
	if f.offsetDelta < 0 || f.offsetDelta > it.h.LastOffsetDelta {
		it.err = fmt.Errorf("%w: record %d of the batch at position %d, %s: offset delta %d outside [0, %d]",
			ErrCorrupt, index, it.batchPos, it.where(f.offsetDeltaPos), f.offsetDelta, it.h.LastOffsetDelta)
		return false
	}
	b := it.recs
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
// the input (for an uncompressed batch) or the iterator's decompression
// buffer (for a compressed one, until Next moves to another compressed
// batch); its Headers slice is reused by the next call to Next.
func (it *RecordIterator) Record() Record { return it.rec }

// Err returns the error that stopped the iteration, or nil if it ran to the
// end of the input (or to a trailing partial batch).
func (it *RecordIterator) Err() error { return it.err }
