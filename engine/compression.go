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
//	        read as raw, as Java's SnappyInputStream does. sluice writes
//	        xerial framing in 32 KiB blocks, as Kafka's brokers do when
//	        they recompress (SnappyCompression wraps Java's
//	        SnappyOutputStream): every client reads it
//	lz4     the LZ4 frame format (magic 0x184D2204, frame descriptor, blocks,
//	        end mark); Kafka's producer writes independent 64 KiB blocks
//	        without checksums
//	zstd    one or more zstd frames (RFC 8878)
//
// These framings are fixed by Kafka's clients and must not change.
//
// Decompression is for readers of the records (RecordIterator, timestamp
// lookups, the cleaner) and for recompression (recompress.go: a log whose
// compression.type names a codec); otherwise the produce path stores
// compressed batches as they come (see doc.go). Compression (compressLevel)
// is for recompression, the cleaner's rewrites and BatchBuilder, at Kafka's
// levels. Decoders are pooled (gzip, lz4) or shared (zstd), and output
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
	return appendDecompressed(dst[:0], c, src, maxDecompressedBatchBytes)
}

// appendDecompressed is decompress appending to dst (the bytes already in
// it are kept) and bounding what it appends at limit bytes.
func appendDecompressed(dst []byte, c Compression, src []byte, limit int) ([]byte, error) {
	start := len(dst)
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
		return readAllBounded(dst, &d.r, start+limit)
	case CompressionSnappy:
		return decodeSnappy(dst, src, limit)
	case CompressionLZ4:
		d := lz4Decoders.Get().(*lz4Decoder)
		defer d.put()
		d.src.Reset(src)
		d.r.Reset(&d.src)
		dst = slices.Grow(dst, min(4*len(src), limit)+1)
		return readAllBounded(dst, d.r, start+limit)
	case CompressionZstd:
		// DecodeAll allocates the frame content size a frame header
		// declares before decoding; reject a first frame declaring more than
		// zstd can produce from the input, or more than the limit.
		var fh zstd.Header
		if fh.Decode(src) == nil && fh.HasFCS {
			if fh.FrameContentSize > zstdMaxOutput(len(src)) {
				return dst, fmt.Errorf("zstd frame declares %d bytes from %d, more than zstd can encode", fh.FrameContentSize, len(src))
			}
			if fh.FrameContentSize > uint64(limit) {
				return dst, errDecompressTooLarge
			}
		}
		dec, err := zstdDecoder()
		if err != nil {
			return dst, err
		}
		out, err := dec.DecodeAll(src, dst)
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || len(out)-start > limit {
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
// errDecompressTooLarge once dst holds more than limit bytes in all. It
// grows dst by doubling and reads straight into its spare capacity.
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

// decodeSnappy appends to dst the decoding of xerial-framed or raw snappy
// (see the top of the file), at most limit bytes. Block lengths are walked
// first, so dst grows once to the summed decoded size and each block
// decodes in place. A block's declared decoded length is checked against
// what its size can encode before anything is allocated for it.
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
		out, err := snappy.Decode(dst[len(dst):len(dst)+n], src)
		if err != nil {
			return dst, err
		}
		return dst[:len(dst)+len(out)], nil
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

// streamEncoder is a pooled streaming compressor (gzip, lz4) with the
// writer it appends to, so that compressing allocates neither.
type streamEncoder struct {
	w interface {
		io.WriteCloser
		Reset(io.Writer)
	}
	out appendWriter
}

// compress appends src compressed to dst, leaving the encoder reset to
// nothing for the pool.
func (e *streamEncoder) compress(dst, src []byte) ([]byte, error) {
	e.out.b = dst
	e.w.Reset(&e.out)
	_, err := e.w.Write(src)
	if err == nil {
		err = e.w.Close()
	}
	out := e.out.b
	e.w.Reset(nil)
	e.out.b = nil
	if err != nil {
		return dst, err
	}
	return out, nil
}

// compress appends the compressed form of src to dst with codec c at its
// default level, framed as Kafka's Java producer frames it (see
// compressLevel). It is for building batches (tests, benchmarks, tools, the
// cleaner's rewrites).
func compress(dst []byte, c Compression, src []byte) ([]byte, error) {
	return compressLevel(dst, c, 0, src)
}

// compressLevel appends the compressed form of src to dst with codec c at
// level, Kafka's level of the codec (compression.gzip.level,
// compression.lz4.level, compression.zstd.level; 0 is the codec's default,
// and snappy has none), framed as Kafka's Java client frames it: one gzip
// member; xerial-framed snappy in 32 KiB blocks (Java's SnappyOutputStream,
// which Kafka's brokers also write when they recompress); an LZ4 frame of
// independent 64 KiB blocks without checksums; one zstd frame. Encoders are
// pooled (gzip, lz4, one pool per level) or shared (zstd, one per level):
// once dst has the room, compressing allocates nothing.
//
// Levels go to the libraries as follows:
//
//	gzip  -1 (and 0) is level 6, zlib's and so Java's default; 1-9 as given
//	lz4   9, Kafka's default, is the fast compressor, as Kafka's
//	      Lz4BlockOutputStream uses it for the default level; any other level
//	      is high compression (lz4-java's highCompressor) with a search depth
//	      rising with the level: 1-8 take pierrec/lz4's shallowest (Level1),
//	      10-17 its Level2 to Level9
//	zstd  zstd's levels (0 is 3, zstd's default) to klauspost/compress's
//	      four: below 3 fastest, 3-5 default, 6-9 better, 10 and up best
func compressLevel(dst []byte, c Compression, level int, src []byte) ([]byte, error) {
	switch c {
	case CompressionGzip:
		p := &gzipEncoders[gzipLevelIndex(level)]
		e := p.Get().(*streamEncoder)
		defer p.Put(e)
		return e.compress(dst, src)
	case CompressionSnappy:
		// xerial.Encode writes its header only into an empty dst, and
		// allocates unless the room for every block is there: give it the
		// empty tail of dst, grown to the most snappy can produce.
		blocks := (len(src) + xerialBlockSize - 1) / xerialBlockSize
		dst = slices.Grow(dst, xerialHeaderSize+blocks*4+snappy.MaxEncodedLen(min(len(src), xerialBlockSize))*blocks)
		enc := xerial.Encode(dst[len(dst):len(dst):cap(dst)], src)
		return dst[:len(dst)+len(enc)], nil
	case CompressionLZ4:
		p := &lz4Encoders[lz4LevelIndex(level)]
		e := p.Get().(*streamEncoder)
		defer p.Put(e)
		return e.compress(dst, src)
	case CompressionZstd:
		enc, err := zstdEncoders[zstdLevelIndex(level)]()
		if err != nil {
			return dst, err
		}
		return enc.EncodeAll(src, dst), nil
	}
	return dst, fmt.Errorf("engine: cannot compress with %v", c)
}

// xerialBlockSize is the decoded size of the blocks xerial-framed snappy is
// written in: Java's SnappyOutputStream default, and klauspost's.
const xerialBlockSize = 32 << 10

// appendWriter is an io.Writer appending to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// gzipEncoders are pools of gzip writers, one per level 1-9.
var gzipEncoders [9]sync.Pool

func gzipLevelIndex(level int) int {
	if level < 1 || level > 9 {
		level = 6
	}
	return level - 1
}

// lz4Levels are pierrec/lz4's levels, the pools of lz4Encoders in order.
var lz4Levels = [...]lz4.CompressionLevel{lz4.Fast, lz4.Level1, lz4.Level2, lz4.Level3,
	lz4.Level4, lz4.Level5, lz4.Level6, lz4.Level7, lz4.Level8, lz4.Level9}

// lz4Encoders are pools of LZ4 frame writers, one per entry of lz4Levels.
var lz4Encoders [len(lz4Levels)]sync.Pool

// lz4LevelIndex maps Kafka's compression.lz4.level to lz4Levels (see
// compressLevel).
func lz4LevelIndex(level int) int {
	switch {
	case level == 0 || level == 9 || level < 0 || level > 17:
		return 0
	case level < 9:
		return 1
	}
	return level - 8
}

func init() {
	for i := range gzipEncoders {
		level := i + 1
		gzipEncoders[i].New = func() any {
			w, _ := gzip.NewWriterLevel(nil, level) // a valid level: no error
			return &streamEncoder{w: w}
		}
	}
	for i := range lz4Encoders {
		level := lz4Levels[i]
		lz4Encoders[i].New = func() any {
			w := lz4.NewWriter(nil)
			// Kafka's Lz4BlockOutputStream: 64 KiB independent blocks, no
			// block or content checksum. The options are valid constants:
			// Apply cannot fail.
			_ = w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false),
				lz4.BlockChecksumOption(false), lz4.CompressionLevelOption(level))
			return &streamEncoder{w: w}
		}
	}
}

// zstdEncoders return the process's zstd encoder of each of klauspost's
// levels, made at first use; EncodeAll is safe for concurrent use. Each
// keeps one block encoder per CPU, whose history buffer holds the window
// and a block: a 1 MiB window (a batch is 1 MiB by default; larger ones
// compress a little less) and the lower-memory mode keep it near 1 MiB per
// CPU, where klauspost's default 8 MiB window makes it 16 MiB.
var zstdEncoders = [...]func() (*zstd.Encoder, error){
	zstdEncoderAt(zstd.SpeedFastest), zstdEncoderAt(zstd.SpeedDefault),
	zstdEncoderAt(zstd.SpeedBetterCompression), zstdEncoderAt(zstd.SpeedBestCompression),
}

const zstdWindowSize = 1 << 20

func zstdEncoderAt(l zstd.EncoderLevel) func() (*zstd.Encoder, error) {
	return sync.OnceValues(func() (*zstd.Encoder, error) {
		return zstd.NewWriter(nil, zstd.WithEncoderConcurrency(0), zstd.WithEncoderLevel(l),
			zstd.WithWindowSize(zstdWindowSize), zstd.WithLowerEncoderMem(true))
	})
}

// zstdLevelIndex maps a zstd level to zstdEncoders.
func zstdLevelIndex(level int) int {
	if level == 0 {
		level = 3
	}
	return int(zstd.EncoderLevelFromZstd(level)) - int(zstd.SpeedFastest)
}
