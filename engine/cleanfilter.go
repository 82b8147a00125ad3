package engine

// What a cleaning pass keeps of one batch, as Kafka 3.9's LogCleaner.cleanInto
// with MemoryRecords.filterTo decide it.
//
// A record is kept when its offset is past the end of the offset map's range
// (not yet deduplicated), or when it has a key, is the key's latest record
// in the map (offset >= the map's offset for the key; a key the map does not
// hold is kept), and is not an expired tombstone. Records without a key are
// dropped (a compacted topic cannot hold them). Control batches (transaction
// markers) are kept whole: the engine does not track transactions yet.
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
// the producer state) is never removed: when all its records go, an empty
// batch takes its place (61 bytes: Kafka's DefaultRecordBatch.writeEmptyHeader,
// record count 0, base timestamp -1, no codec), so the producer's last
// sequence survives a rebuild of the producer state from the log.
//
// A batch all of whose records stay, and that needs no horizon, is copied
// byte for byte. Otherwise it is rebuilt: same base offset, last offset
// delta, leader epoch, producer id, epoch and base sequence, attributes
// (codec, timestamp type, transactional) with the horizon bit as above, the
// kept records re-encoded (their offset deltas unchanged), compressed again
// with the batch's codec, and the CRC computed. The batch's offset range and
// sequence range stay whole, so an idempotent producer's retry of it is
// still recognised.

import (
	"encoding/binary"
	"fmt"
)

// cleanFilter holds a pass's filtering state and reusable buffers.
type cleanFilter struct {
	m               *offsetMap
	now             int64 // ms
	deleteRetention int64 // ms
	// lastOfProducer maps each producer id in the producer state to the last
	// offset of its last data batch.
	lastOfProducer map[int64]int64

	scratch []byte // decompressed records of the batch
	recs    []byte // records being rebuilt
	kept    []keptRecord

	recordsRead, recordsKept int64
	keyless                  int64 // records dropped for having no key
	tombstonesDropped        int64
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
		return append(dst, b...), nil
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
		if last, ok := f.lastOfProducer[h.ProducerID]; ok && h.ProducerID >= 0 && last == h.LastOffset() {
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
