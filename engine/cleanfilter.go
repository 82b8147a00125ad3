package engine

// What a cleaning pass keeps of one batch, as Kafka 3.9's LogCleaner.cleanInto
// with MemoryRecords.filterTo decide it.
//
// A record is kept when its offset is past the end of the offset map's range
// (not yet deduplicated), or when it has a key, is the key's latest record
// in the map (offset >= the map's offset for the key; a key the map does not
// hold is kept), and is not an expired tombstone. Records without a key are
// dropped (a compacted topic cannot hold them).
//
// Transactions (cleantxn.go says how a pass tells them apart): every record
// of a data batch of an aborted transaction is dropped, wherever it lies
// (past the map's range too). A control batch (a transaction marker) is
// kept whole while its transaction still has a batch in the log. Once its
// transaction has none, it is removable and goes as a tombstone does, by
// the delete horizon of KIP-534: the first pass that finds it removable
// rewrites it with the horizon stamped (below), a pass after the horizon
// drops it. Consumers reading the log meanwhile still see the transaction
// end. An abort marker's .txnindex entry goes in that first pass.
//
// Tombstones (null value) use the delete horizon of KIP-534, as Kafka 3.x:
// the first pass that keeps a tombstone rewrites its batch with attribute
// bit 6 set and the base timestamp holding the horizon, now +
// delete.retention.ms; a tombstone in a batch whose horizon has passed is
// dropped. Record timestamps are kept (each record's timestamp delta is
// rewritten against the new base timestamp). The horizon travels with the
// batch, so it survives restarts and replication; no segment modification
// time is involved.
//
// The batch that holds an active producer's last data (its last batch in
// the producer state) is never removed: when all its records go (compacted
// away or aborted), an empty batch takes its place (61 bytes: Kafka's
// DefaultRecordBatch.writeEmptyHeader, record count 0, base timestamp -1,
// no codec, no horizon), so the producer's last sequence survives a rebuild
// of the producer state from the log. A producer with no data batch since
// its epoch changed (its last record a marker, which carries the epoch)
// keeps its markers of that epoch the same way: a removable one past its
// horizon is emptied, not dropped. An empty batch is met by later passes
// and so keeps its transaction's marker.
//
// A batch all of whose records stay, and that needs no horizon, is copied
// byte for byte. Otherwise it is rebuilt: same base offset, last offset
// delta, leader epoch, producer id, epoch and base sequence, attributes
// (codec, timestamp type, transactional, control) with the horizon bit as
// above, the kept records re-encoded (their offset deltas unchanged),
// compressed again with the batch's codec, and the CRC computed. The
// batch's offset range and sequence range stay whole, so an idempotent
// producer's retry of it is still recognised.

import (
	"encoding/binary"
	"fmt"
)

// cleanFilter holds a pass's filtering state and reusable buffers.
type cleanFilter struct {
	m               *offsetMap
	now             int64 // ms
	deleteRetention int64 // ms
	// lastOfProducer maps each producer id in the producer state to what
	// of it must stay (see producerLast).
	lastOfProducer map[int64]producerLast
	txns           cleanTxns // the pass's transactions

	scratch []byte // decompressed records of the batch
	recs    []byte // records being rebuilt
	kept    []keptRecord

	recordsRead, recordsKept int64
	keyless                  int64 // records dropped for having no key
	tombstonesDropped        int64
	abortedDropped           int64 // records of aborted transactions dropped
	markersDropped           int64 // control batches dropped or emptied past their horizon
}

// producerLast is what a pass keeps of a producer in the producer state
// (Kafka's lastRecordsOfActiveProducers): the batch ending at lastData,
// the last offset of its last data batch, or, when it has none (-1), its
// control batches of its epoch.
type producerLast struct {
	lastData int64
	epoch    int16
}

type keptRecord struct {
	attr    int8
	ts      int64 // the record's timestamp: base timestamp + delta as written
	offDel  int32
	restPos int // start of the key length field in the records
	end     int // end of the record
}

func hasDeleteHorizon(h *BatchHeader) bool { return h.Attributes&attrDeleteHorizon != 0 }

// filterBatch appends to dst what the cleaned segment keeps of the batch b
// with header h: b itself, a rebuilt batch, an empty batch, or nothing.
func (f *cleanFilter) filterBatch(dst, b []byte, h *BatchHeader) ([]byte, error) {
	if h.Control() {
		return f.filterControl(dst, b, h)
	}
	if f.txns.onData(h) {
		f.recordsRead += int64(h.NumRecords)
		f.abortedDropped += int64(h.NumRecords)
		if f.isProducerLast(h) {
			return appendEmptyBatch(dst, h), nil
		}
		return dst, nil
	}
	recs, pos := b, BatchHeaderSize
	if c := h.Compression(); c != CompressionNone {
		if c > CompressionZstd {
			return dst, fmt.Errorf("%w: unknown compression codec %d in the batch at offset %d", ErrCorrupt, int8(c), h.BaseOffset)
		}
		var err error
		f.scratch, err = decompress(f.scratch, c, b[BatchHeaderSize:])
		if err != nil {
			return dst, fmt.Errorf("%w: %v batch at offset %d does not decompress: %v", ErrCorrupt, c, h.BaseOffset, err)
		}
		recs, pos = f.scratch, 0
	}
	retainDeletes := !hasDeleteHorizon(h) || f.now < h.BaseTimestamp
	f.kept = f.kept[:0]
	tombs := false
	for i := int32(0); i < h.NumRecords; i++ {
		var fr recordFrame
		var d defect
		if !scanRecord(recs, pos, &fr, &d) {
			return dst, fmt.Errorf("%w: record %d of the batch at offset %d: %v", ErrCorrupt, i, h.BaseOffset, d)
		}
		f.recordsRead++
		off := h.BaseOffset + int64(fr.offsetDelta)
		keep := true
		if off <= f.m.latest {
			switch {
			case fr.keyPos < 0:
				keep = false
				f.keyless++
			case off < f.m.get(recs[fr.keyPos:fr.keyPos+fr.keyLen]):
				keep = false
			case fr.valuePos < 0 && !retainDeletes:
				keep = false
				f.tombstonesDropped++
			}
		}
		if keep {
			_, n := binary.Varint(recs[fr.offsetDeltaPos:fr.end])
			f.kept = append(f.kept, keptRecord{
				attr: fr.attributes, ts: h.BaseTimestamp + fr.timestampDelta, offDel: fr.offsetDelta,
				restPos: fr.offsetDeltaPos + n, end: fr.end,
			})
			tombs = tombs || fr.valuePos < 0
		}
		pos = fr.end
	}
	if pos != len(recs) {
		return dst, fmt.Errorf("%w: %d bytes after the last of %d records of the batch at offset %d", ErrCorrupt, len(recs)-pos, h.NumRecords, h.BaseOffset)
	}
	f.recordsKept += int64(len(f.kept))
	if len(f.kept) == 0 {
		if f.isProducerLast(h) {
			return appendEmptyBatch(dst, h), nil
		}
		return dst, nil
	}
	needHorizon := tombs && !hasDeleteHorizon(h)
	if len(f.kept) == int(h.NumRecords) && !needHorizon {
		return append(dst, b...), nil
	}
	return f.rebuild(dst, recs, h, needHorizon)
}

// isProducerLast reports whether h is a batch its producer's state needs
// kept (see producerLast).
func (f *cleanFilter) isProducerLast(h *BatchHeader) bool {
	if h.ProducerID < 0 {
		return false
	}
	p, ok := f.lastOfProducer[h.ProducerID]
	if !ok {
		return false
	}
	if p.lastData >= 0 {
		return h.LastOffset() == p.lastData
	}
	return h.Control() && h.ProducerEpoch == p.epoch
}

// filterControl appends what the cleaned segment keeps of the control
// batch b (see the top of the file): b itself, b with its delete horizon
// stamped, an empty batch, or nothing.
func (f *cleanFilter) filterControl(dst, b []byte, h *BatchHeader) ([]byte, error) {
	if !f.txns.onControl(h, b) {
		return append(dst, b...), nil
	}
	switch {
	case h.NumRecords == 0:
		if f.isProducerLast(h) {
			return append(dst, b...), nil
		}
		return dst, nil
	case hasDeleteHorizon(h) && h.BaseTimestamp <= f.now:
		f.markersDropped++
		if f.isProducerLast(h) {
			return appendEmptyBatch(dst, h), nil
		}
		return dst, nil
	case hasDeleteHorizon(h):
		return append(dst, b...), nil
	}
	// Removable for the first time: stamp the horizon on the marker.
	f.kept = f.kept[:0]
	pos := BatchHeaderSize
	for i := int32(0); i < h.NumRecords; i++ {
		var fr recordFrame
		var d defect
		if !scanRecord(b, pos, &fr, &d) {
			return dst, fmt.Errorf("%w: record %d of the control batch at offset %d: %v", ErrCorrupt, i, h.BaseOffset, d)
		}
		_, n := binary.Varint(b[fr.offsetDeltaPos:fr.end])
		f.kept = append(f.kept, keptRecord{
			attr: fr.attributes, ts: h.BaseTimestamp + fr.timestampDelta, offDel: fr.offsetDelta,
			restPos: fr.offsetDeltaPos + n, end: fr.end,
		})
		pos = fr.end
	}
	return f.rebuild(dst, b, h, true)
}

// rebuild appends the batch of h holding only f.kept, whose bytes are in
// recs (see the top of the file).
func (f *cleanFilter) rebuild(dst, recs []byte, h *BatchHeader, setHorizon bool) ([]byte, error) {
	attrs := h.Attributes
	base := f.kept[0].ts
	switch {
	case setHorizon:
		attrs |= attrDeleteHorizon
		base = f.now + f.deleteRetention
	case hasDeleteHorizon(h):
		base = h.BaseTimestamp
	}
	maxTs := h.MaxTimestamp
	if !h.LogAppendTime() {
		maxTs = f.kept[0].ts
		for _, k := range f.kept[1:] {
			maxTs = max(maxTs, k.ts)
		}
	}
	out := f.recs[:0]
	for _, k := range f.kept {
		rest := recs[k.restPos:k.end]
		tsDelta := k.ts - base
		size := 1 + varintLen(tsDelta) + varintLen(int64(k.offDel)) + len(rest)
		out = binary.AppendVarint(out, int64(size))
		out = append(out, byte(k.attr))
		out = binary.AppendVarint(out, tsDelta)
		out = binary.AppendVarint(out, int64(k.offDel))
		out = append(out, rest...)
	}
	f.recs = out
	start := len(dst)
	dst = append(dst, make([]byte, BatchHeaderSize)...)
	if c := h.Compression(); c != CompressionNone {
		var err error
		if dst, err = compress(dst, c, out); err != nil {
			return dst[:start], fmt.Errorf("engine: recompress the batch at offset %d with %v: %w", h.BaseOffset, c, err)
		}
	} else {
		dst = append(dst, out...)
	}
	b := dst[start:]
	putBatchHeader(b, h, attrs, base, maxTs, int32(len(f.kept)))
	return dst, nil
}

// putBatchHeader writes the header of the batch b (whose records follow the
// header): h's offsets, epochs and sequence with the given attributes,
// timestamps and record count, its length, and the CRC last.
func putBatchHeader(b []byte, h *BatchHeader, attrs int16, baseTs, maxTs int64, count int32) {
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], uint64(h.BaseOffset))
	be.PutUint32(b[offBatchLength:], uint32(len(b)-batchLogOverhead))
	be.PutUint32(b[offLeaderEpoch:], uint32(h.LeaderEpoch))
	b[offMagic] = batchMagic
	be.PutUint16(b[offAttributes:], uint16(attrs))
	be.PutUint32(b[offLastOffsetDelta:], uint32(h.LastOffsetDelta))
	be.PutUint64(b[offBaseTimestamp:], uint64(baseTs))
	be.PutUint64(b[offMaxTimestamp:], uint64(maxTs))
	be.PutUint64(b[offProducerID:], uint64(h.ProducerID))
	be.PutUint16(b[offProducerEpoch:], uint16(h.ProducerEpoch))
	be.PutUint32(b[offBaseSequence:], uint32(h.BaseSequence))
	be.PutUint32(b[offRecordCount:], uint32(count))
	be.PutUint32(b[offCRC:], batchCRC(b))
}

// appendEmptyBatch appends the empty batch that keeps h's offset and
// sequence ranges, producer and epoch: Kafka's writeEmptyHeader (no codec,
// no horizon, base timestamp -1, the max timestamp kept).
func appendEmptyBatch(dst []byte, h *BatchHeader) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, BatchHeaderSize)...)
	attrs := h.Attributes &^ (attrCompressionMask | attrDeleteHorizon)
	putBatchHeader(dst[start:], h, attrs, -1, h.MaxTimestamp, 0)
	return dst
}
