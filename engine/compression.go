package engine

// Compressed record batches. The codec is in bits 0-2 of a batch's
// attributes; only the records section (from byte 61 to the end) is
// compressed, the header stays in the clear. Each codec's framing, as Kafka's
// clients write it and as this file reads it:
//
//	gzip    RFC 1952 members (one, as Java's GZIPOutputStream writes; more are
//	        read back to back)
//	snappy  either xerial framing, which Kafka's Java client writes:
//
//	          offset  size  field
//	               0     8  magic   0x82 'S' 'N' 'A' 'P' 'P' 'Y' 0x00
//	               8     4  version             int32 big-endian (1)
//	              12     4  compatible version  int32 big-endian (1)
//	              16     …  blocks, each:
//	                          4  length of the block  int32 big-endian
//	                          …  one raw snappy block (at most 32 KiB decoded
//	                             when Java writes it)
//
//	        or one raw snappy block with no framing (librdkafka, franz-go and
//	        sarama write this); input that does not open with the magic is
//	        read as raw, as Java's SnappyInputStream does
//	lz4     the LZ4 frame format (magic 0x184D2204, frame descriptor, blocks,
//	        end mark); Kafka's producer writes independent 64 KiB blocks
//	        without checksums
//	zstd    one or more zstd frames (RFC 8878)
//
// These framings are fixed by Kafka's clients and must not change.
//
// Decompression is for readers of the records (RecordIterator, timestamp
// lookups); the produce path stores compressed batches as they come (see
// doc.go). Decoders are pooled (gzip, lz4) or shared (zstd), and output
// goes into a buffer the caller owns and reuses, so once that buffer has
// grown, iterating compressed batches allocates nothing per record or per
// batch. Sizes a producer's bytes declare (gzip's ISIZE, snappy's decoded
// length, zstd's frame content size) are bounded by what the input can
// encode before anything is allocated for them.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// maxDecompressedBatchBytes bounds what one batch's records may decompress
// to, so that a small hostile batch cannot make a reader allocate without
// limit. franz-go's consumer uses the same default bound (1 GiB); a batch is
// at most max.message.bytes compressed (1 MiB by default), so only a
// compression ratio above 1000:1 reaches it. A variable so tests can lower it.
var maxDecompressedBatchBytes = 1 << 30

// xerialMagic opens a xerial-framed snappy stream; xerialHeaderSize is the
// magic plus the two version fields.
var xerialMagic = [8]byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderSize = 16
	xerialMinVersion = 1 // Java's SnappyInputStream rejects a version below 1
)

// errDecompressTooLarge is wrapped, with ErrBatchTooLarge, when a batch's
// records decompress past maxDecompressedBatchBytes.
var errDecompressTooLarge = errors.New("decompressed records exceed the limit")

// decompress decompresses src, the records section of a batch compressed
// with c, into dst[:0], growing it as needed, and returns the result. The
// result is owned by the caller. A codec error is returned as it comes from
// the codec; output beyond maxDecompressedBatchBytes gives
// errDecompressTooLarge.
func decompress(dst []byte, c Compression, src []byte) ([]byte, error) {
	dst = dst[:0]
	limit := maxDecompressedBatchBytes
	switch c {
	case CompressionGzip:
		d := gzipDecoders.Get().(*gzipDecoder)
		defer d.put()
		d.src.Reset(src)
		if err := d.r.Reset(&d.src); err != nil {
			return dst, err
		}
		// The trailer's ISIZE is the last member's decoded size mod 2^32: a
		// first guess for one member, but only a guess (the bytes are the
		// producer's), so the buffer starts at most 16 times the input; it
		// then grows with what really decompresses.
		if n := len(src); n >= 4 {
			hint := int(binary.LittleEndian.Uint32(src[n-4:]))
			dst = slices.Grow(dst, min(hint, 16*n+4<<10, limit)+1)
		}
		return readAllBounded(dst, &d.r, limit)
	case CompressionSnappy:
		return decodeSnappy(dst, src, limit)
	case CompressionLZ4:
		d := lz4Decoders.Get().(*lz4Decoder)
		defer d.put()
		d.src.Reset(src)
		d.r.Reset(&d.src)
		dst = slices.Grow(dst, min(4*len(src), limit)+1)
		return readAllBounded(dst, d.r, limit)
	case CompressionZstd:
		// DecodeAll allocates the frame content size a frame header
		// declares before decoding; reject a first frame declaring more than
		// zstd can produce from the input.
		var fh zstd.Header
		if fh.Decode(src) == nil && fh.HasFCS && fh.FrameContentSize > zstdMaxOutput(len(src)) {
			return dst, fmt.Errorf("zstd frame declares %d bytes from %d, more than zstd can encode", fh.FrameContentSize, len(src))
		}
		dec, err := zstdDecoder()
		if err != nil {
			return dst, err
		}
		out, err := dec.DecodeAll(src, dst)
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || len(out) > limit {
			return out, errDecompressTooLarge
		}
		return out, err
	}
	return dst, fmt.Errorf("unknown compression codec %d", int8(c))
}

// zstdMaxOutput bounds what n bytes of zstd can decode to: every block has
// a 3-byte header and at least one byte of content (an RLE block), and
// regenerates at most 128 KiB (Block_Maximum_Size, RFC 8878 3.1.1.2.4).
func zstdMaxOutput(n int) uint64 { return uint64(n/4+1) * (128 << 10) }

// snappyMaxOutput bounds what a snappy block of n bytes can decode to: the
// densest element is a copy of 64 bytes in a 3-byte tag (the format's
// description in google/snappy).
func snappyMaxOutput(n int) int { return n * 64 / 3 }

// readAllBounded appends what r yields to dst until io.EOF, failing with
// errDecompressTooLarge once dst holds more than limit bytes. It grows dst
// by doubling and reads straight into its spare capacity.
func readAllBounded(dst []byte, r io.Reader, limit int) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			// len(dst) <= limit here, so the step is at least 1.
			dst = slices.Grow(dst, min(max(cap(dst), 4<<10), limit+1-len(dst)))
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst) > limit {
			return dst, errDecompressTooLarge
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

// decodeSnappy decodes xerial-framed or raw snappy (see the top of the
// file). Block lengths are walked first, so dst grows once to the summed
// decoded size and each block decodes in place. A block's declared decoded
// length is checked against what its size can encode before anything is
// allocated for it.
//
// The framing walk is written here rather than taken from
// klauspost/compress/snappy/xerial because that decoder neither bounds the
// decoded size before allocating nor rejects bytes after the last block.
func decodeSnappy(dst, src []byte, limit int) ([]byte, error) {
	if len(src) < len(xerialMagic) || [8]byte(src[:8]) != xerialMagic {
		n, err := snappy.DecodedLen(src)
		if err != nil {
			return dst, err
		}
		if n > snappyMaxOutput(len(src)) {
			return dst, fmt.Errorf("snappy block of %d bytes declares %d decoded bytes, more than snappy can encode", len(src), n)
		}
		if n > limit {
			return dst, errDecompressTooLarge
		}
		dst = slices.Grow(dst, n)
		return snappy.Decode(dst[:n], src)
	}
	if len(src) < xerialHeaderSize {
		return dst, fmt.Errorf("xerial snappy header of %d bytes, want %d", len(src), xerialHeaderSize)
	}
	if v := int32(binary.BigEndian.Uint32(src[8:])); v < xerialMinVersion {
		return dst, fmt.Errorf("xerial snappy version %d, want >= %d", v, xerialMinVersion)
	}
	total := 0
	for p := xerialHeaderSize; p < len(src); {
		blk, next, err := xerialBlock(src, p)
		if err != nil {
			return dst, err
		}
		n, err := snappy.DecodedLen(blk)
		if err != nil {
			return dst, fmt.Errorf("xerial snappy block at byte %d: %w", p, err)
		}
		if n > snappyMaxOutput(len(blk)) {
			return dst, fmt.Errorf("xerial snappy block at byte %d of %d bytes declares %d decoded bytes, more than snappy can encode", p, len(blk), n)
		}
		if n > limit-total {
			return dst, errDecompressTooLarge
		}
		total += n
		p = next
	}
	dst = slices.Grow(dst, total)
	for p := xerialHeaderSize; p < len(src); {
		blk, next, _ := xerialBlock(src, p) // checked above
		n, _ := snappy.DecodedLen(blk)
		if _, err := snappy.Decode(dst[len(dst):len(dst)+n], blk); err != nil {
			return dst, fmt.Errorf("xerial snappy block at byte %d: %w", p, err)
		}
		dst = dst[:len(dst)+n]
		p = next
	}
	return dst, nil
}

// xerialBlock returns the raw snappy block whose length field is at src[p],
// and the position after it.
func xerialBlock(src []byte, p int) ([]byte, int, error) {
	if len(src)-p < 4 {
		return nil, 0, fmt.Errorf("xerial snappy block length at byte %d: %d bytes left", p, len(src)-p)
	}
	n := int64(int32(binary.BigEndian.Uint32(src[p:])))
	if n < 0 || n > int64(len(src)-p-4) {
		return nil, 0, fmt.Errorf("xerial snappy block at byte %d: length %d, %d bytes left", p, n, len(src)-p-4)
	}
	return src[p+4 : p+4+int(n)], p + 4 + int(n), nil
}

// gzipDecoder is a pooled gzip reader with the bytes.Reader it reads from,
// so a decompression allocates neither.
type gzipDecoder struct {
	r   gzip.Reader
	src bytes.Reader
}

var gzipDecoders = sync.Pool{New: func() any { return new(gzipDecoder) }}

func (d *gzipDecoder) put() {
	d.src.Reset(nil) // drop the reference to the batch
	gzipDecoders.Put(d)
}

// lz4Decoder is a pooled LZ4 frame reader with its source.
type lz4Decoder struct {
	r   *lz4.Reader
	src bytes.Reader
}

var lz4Decoders = sync.Pool{New: func() any { return &lz4Decoder{r: lz4.NewReader(nil)} }}

func (d *lz4Decoder) put() {
	d.src.Reset(nil)
	d.r.Reset(nil)
	lz4Decoders.Put(d)
}

// zstdDecoder returns the process's zstd decoder. DecodeAll is safe for
// concurrent use; the decoder keeps one block decoder per CPU and bounds a
// batch's output (and the window it may claim) at the batch limit.
var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	limit := uint64(maxDecompressedBatchBytes)
	return zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(limit),
		zstd.WithDecoderMaxWindow(min(limit, zstd.MaxWindowSize)))
})

// streamEncoder is a pooled streaming compressor (gzip, lz4).
type streamEncoder interface {
	io.WriteCloser
	Reset(io.Writer)
}

// compressStream appends src compressed by w to dst, leaving w reset to
// nothing for the pool.
func compressStream(w streamEncoder, dst, src []byte) ([]byte, error) {
	out := appendWriter{b: dst}
	w.Reset(&out)
	if _, err := w.Write(src); err != nil {
		w.Reset(nil)
		return dst, err
	}
	err := w.Close()
	w.Reset(nil)
	return out.b, err
}

// compress appends the compressed form of src to dst with codec c, framed
// as Kafka's Java producer frames it: one gzip member; xerial-framed snappy
// in 32 KiB blocks; an LZ4 frame of independent 64 KiB blocks without
// checksums; one zstd frame. It is for building batches (tests, benchmarks,
// tools), not for a hot path.
func compress(dst []byte, c Compression, src []byte) ([]byte, error) {
	switch c {
	case CompressionGzip:
		w := gzipEncoders.Get().(*gzip.Writer)
		defer gzipEncoders.Put(w)
		return compressStream(w, dst, src)
	case CompressionSnappy:
		// xerial.Encode writes its header only into an empty dst: give it
		// the empty tail of dst.
		enc := xerial.Encode(dst[len(dst):len(dst):cap(dst)], src)
		return append(dst, enc...), nil
	case CompressionLZ4:
		w := lz4Encoders.Get().(*lz4.Writer)
		defer lz4Encoders.Put(w)
		return compressStream(w, dst, src)
	case CompressionZstd:
		enc, err := zstdEncoder()
		if err != nil {
			return dst, err
		}
		return enc.EncodeAll(src, dst), nil
	}
	return dst, fmt.Errorf("engine: cannot compress with %v", c)
}

// appendWriter is an io.Writer appending to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

var gzipEncoders = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

var lz4Encoders = sync.Pool{New: func() any {
	w := lz4.NewWriter(nil)
	// Kafka's Lz4BlockOutputStream: 64 KiB independent blocks, no block or
	// content checksum. The options are valid constants: Apply cannot fail.
	_ = w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false), lz4.BlockChecksumOption(false))
	return w
}}

// zstdEncoder returns the process's zstd encoder; EncodeAll is safe for
// concurrent use.
var zstdEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithEncoderConcurrency(0))
})
