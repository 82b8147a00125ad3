package engine

// Recompression: a log whose Options.Recompression is enabled (Kafka's
// compression.type set to a codec or to uncompressed, rather than
// producer) stores every produced batch in its codec, as Kafka's
// LogValidator does when the producer's codec is not the topic's:
//
//   - A batch already in the log's codec is stored as it came (the
//     zero-copy path of compression.type=producer).
//   - Any other batch has its records section decompressed (unless it is
//     uncompressed), checked record by record as ValidateBatch checks an
//     uncompressed batch, and compressed again with the log's codec at its
//     level (or left uncompressed). The header is the producer's but for the
//     codec bits of the attributes, the batch length and the CRC: base
//     timestamp, max timestamp, producer id, epoch and sequence, record count
//     and every record's bytes are kept, so idempotence and timestamps work
//     as for any batch. Append then assigns offsets and the leader epoch and,
//     in a LogAppendTime log, stamps the time, as it does for every batch.
//   - Control batches (transaction markers) are stored as they came: Kafka
//     does not compress an uncompressed control batch, and its clients may
//     not write control batches at all.
//   - The rebuilt batch must fit max.message.bytes, as Kafka checks the
//     batch it stores after recompressing (MESSAGE_TOO_LARGE otherwise).
//
// The work runs in Append on the caller's goroutine, before the log's lock
// is taken, in buffers drawn from a pool: once the pool's buffers have
// grown to the batches' size, recompressing allocates nothing.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
)

// Recompression is the codec a log stores produced batches in (Kafka's
// compression.type with its KIP-390 levels). The zero value keeps every
// batch in its producer's codec (compression.type=producer).
type Recompression struct {
	// Enabled turns recompression on. Default false: batches are stored
	// in the codec their producer chose.
	Enabled bool

	// Codec is the codec batches are stored in; CompressionNone stores
	// them uncompressed (compression.type=uncompressed).
	Codec Compression

	// Level is Kafka's level for Codec: compression.gzip.level (-1 or
	// 1-9), compression.lz4.level (1-17) or compression.zstd.level
	// (-131072 to 22); snappy has none. Default 0: the codec's Kafka
	// default (gzip -1, lz4 9, zstd 3). compressLevel in compression.go
	// says how levels map onto the libraries'.
	Level int
}

// needed reports whether a batch with header h must be rebuilt to be
// stored under r.
func (r *Recompression) needed(h *BatchHeader) bool {
	return r.Enabled && h.Compression() != r.Codec && !h.Control()
}

// maxPooledRecompressBytes bounds the buffers the recompression pool keeps:
// a batch that decompresses to more uses buffers that are then dropped, so
// that one large batch does not pin its memory.
const maxPooledRecompressBytes = 16 << 20

// recompressBuffers are the scratch space of one recompression: plain holds
// the batch uncompressed (the header, then the records), out the batch in
// the target codec.
type recompressBuffers struct {
	plain, out []byte
}

var recompressPool = sync.Pool{New: func() any { return new(recompressBuffers) }}

func getRecompressBuffers() *recompressBuffers {
	return recompressPool.Get().(*recompressBuffers)
}

// put returns rb to the pool; the batch recompress returned must no longer
// be used.
func (rb *recompressBuffers) put() {
	if cap(rb.plain) > maxPooledRecompressBytes {
		rb.plain = nil
	}
	if cap(rb.out) > maxPooledRecompressBytes {
		rb.out = nil
	}
	recompressPool.Put(rb)
}

// recompress rebuilds batch, which ValidateBatch accepted with header h and
// r.needed(h) says must change, in r's codec, and updates h to describe the result (attributes, length,
// CRC). The result lives in rb. maxBytes is the batch limit: an
// uncompressed result above it is refused before it is built.
//
// A records section that does not decompress wraps ErrCorrupt (as a damaged
// batch does); records that decompress but are malformed wrap
// ErrInvalidBatch; output past the limit wraps ErrBatchTooLarge.
func (rb *recompressBuffers) recompress(batch []byte, h *BatchHeader, r *Recompression, maxBytes int) ([]byte, error) {
	plain := batch
	if c := h.Compression(); c != CompressionNone {
		limit := maxDecompressedBatchBytes
		if r.Codec == CompressionNone {
			limit = max(maxBytes-BatchHeaderSize, 0)
		}
		p, err := appendDecompressed(append(rb.plain[:0], batch[:BatchHeaderSize]...), c, batch[BatchHeaderSize:], limit)
		rb.plain = p
		switch {
		case errors.Is(err, errDecompressTooLarge):
			return nil, fmt.Errorf("%w: the %v records decompress to more than %d bytes", ErrBatchTooLarge, c, limit)
		case err != nil:
			return nil, fmt.Errorf("%w: %w: the %v records at position %d do not decompress: %v", ErrInvalidBatch, ErrCorrupt, c, BatchHeaderSize, err)
		}
		if !recordsWellFormed(p, h.NumRecords) {
			if err := walkRecords(p, h.NumRecords); err != nil {
				return nil, fmt.Errorf("%w (positions in the batch decompressed)", err)
			}
		}
		plain = p
	}
	out := plain // r.Codec is none: plain is the decompressed copy
	if r.Codec != CompressionNone {
		o, err := compressLevel(append(rb.out[:0], plain[:BatchHeaderSize]...), r.Codec, r.Level, plain[BatchHeaderSize:])
		rb.out = o
		if err != nil {
			return nil, fmt.Errorf("engine: compress a batch with %v: %w", r.Codec, err)
		}
		out = o
	}
	be := binary.BigEndian
	h.Attributes = h.Attributes&^attrCompressionMask | int16(r.Codec)
	h.Length = int32(len(out) - batchLogOverhead)
	be.PutUint32(out[offBatchLength:], uint32(h.Length))
	be.PutUint16(out[offAttributes:], uint16(h.Attributes))
	h.CRC = batchCRC(out)
	be.PutUint32(out[offCRC:], h.CRC)
	return out, nil
}
