package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

var allCodecs = []Compression{CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd}

// batchIn builds recs as one batch in codec c, a copy the caller owns.
func batchIn(t testing.TB, c Compression, recs []Record) []byte {
	t.Helper()
	var bb BatchBuilder
	for _, r := range recs {
		bb.Add(r)
	}
	b, err := bb.BuildCompressed(c)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(b)
}

// storedBatches reads every batch of l raw, checks each as recovery would
// (length, magic, CRC-32C) and returns them.
func storedBatches(t *testing.T, l *Log) [][]byte {
	t.Helper()
	var out [][]byte
	for off := l.StartOffset(); off < l.EndOffset(); {
		v, err := l.Read(off, 1<<30, l.EndOffset())
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		data, err := v.AppendTo(nil)
		v.Release()
		if err != nil {
			t.Fatal(err)
		}
		for len(data) > 0 {
			h, err := checkStoredBatch(data)
			if err != nil {
				t.Fatalf("stored batch at offset %d: %v", off, err)
			}
			out = append(out, data[:h.Size()])
			data = data[h.Size():]
			off = h.LastOffset() + 1
		}
	}
	return out
}

// Every pair of codecs: a batch in the producer's codec is stored in the
// log's, with a valid CRC, the producer's header fields and every record
// intact; a batch already in the log's codec is stored byte for byte as it
// came. The caller's batch is never changed by a recompression.
func TestRecompressCodecPairs(t *testing.T) {
	for _, recs := range [][]Record{testRecords(60), bigRecords(400)} { // bigRecords: several LZ4 and xerial blocks
		for _, src := range allCodecs {
			for _, dst := range allCodecs {
				t.Run(fmt.Sprintf("records=%d/%v-to-%v", len(recs), src, dst), func(t *testing.T) {
					l := mustOpen(t, t.TempDir(), Options{Recompression: Recompression{Enabled: true, Codec: dst}})
					defer l.Close()
					l.SetLeaderEpoch(7)
					first := batchIn(t, src, recs[:1])
					if _, err := l.Append(first); err != nil {
						t.Fatal(err)
					}
					in := batchIn(t, src, recs)
					orig := bytes.Clone(in)
					res, err := l.Append(in)
					if err != nil {
						t.Fatalf("Append: %v", err)
					}
					if res.FirstOffset != 1 || res.LastOffset != int64(len(recs)) {
						t.Fatalf("appended at [%d, %d], want [1, %d]", res.FirstOffset, res.LastOffset, len(recs))
					}
					if src != dst && !bytes.Equal(in, orig) {
						t.Error("the caller's batch was modified by its recompression")
					}
					stored := storedBatches(t, l)
					if len(stored) != 2 {
						t.Fatalf("%d batches stored, want 2", len(stored))
					}
					b := stored[1]
					got, want := parseHeader(b), parseHeader(orig)
					if got.Compression() != dst {
						t.Fatalf("stored with %v, want %v", got.Compression(), dst)
					}
					if got.BaseOffset != 1 || got.LeaderEpoch != 7 {
						t.Errorf("base offset %d and epoch %d, want 1 and 7", got.BaseOffset, got.LeaderEpoch)
					}
					// The header is the producer's but for codec, length and CRC.
					got.BaseOffset, got.LeaderEpoch, got.Length, got.CRC = want.BaseOffset, want.LeaderEpoch, want.Length, want.CRC
					got.Attributes = got.Attributes&^attrCompressionMask | want.Attributes&attrCompressionMask
					if got != want {
						t.Errorf("header fields changed:\n got %+v\nwant %+v", got, want)
					}
					if src == dst && !bytes.Equal(b[offMagic:], orig[offMagic:]) {
						t.Error("a batch in the log's codec was not stored as it came")
					}
					if dst != CompressionNone && src == CompressionNone && len(b) >= len(orig) {
						t.Errorf("compressed with %v to %d bytes from %d", dst, len(b), len(orig))
					}
					read, err := collect(b)
					if err != nil {
						t.Fatal(err)
					}
					checkRecords(t, read, recs, 1)
				})
			}
		}
	}
}

// Each codec at the ends of Kafka's level ranges and in between gives a
// batch that reads back, and the levels are honoured: the highest level
// gives output no larger than the lowest, and strictly smaller for LZ4
// (fast against high compression) and gzip.
func TestRecompressLevels(t *testing.T) {
	recs := eventRecords(2000)
	cases := []struct {
		c      Compression
		levels []int // lowest compression first, highest last
		strict bool  // the highest level compresses strictly better
	}{
		{CompressionGzip, []int{1, -1, 0, 5, 9}, true},
		{CompressionLZ4, []int{9, 0, 1, 8, 10, 17}, true},
		{CompressionZstd, []int{-131072, -1, 0, 3, 6, 10, 22}, true},
		{CompressionSnappy, []int{0}, false},
	}
	for _, tc := range cases {
		sizes := map[int]int{}
		for _, level := range tc.levels {
			l := mustOpen(t, t.TempDir(), Options{Recompression: Recompression{Enabled: true, Codec: tc.c, Level: level}})
			if _, err := l.Append(batchIn(t, CompressionNone, recs)); err != nil {
				t.Fatalf("%v level %d: %v", tc.c, level, err)
			}
			b := storedBatches(t, l)[0]
			read, err := collect(b)
			if err != nil {
				t.Fatalf("%v level %d: %v", tc.c, level, err)
			}
			checkRecords(t, read, recs, 0)
			sizes[level] = len(b)
			l.Close()
		}
		lo, hi := sizes[tc.levels[0]], sizes[tc.levels[len(tc.levels)-1]]
		if hi > lo || tc.strict && hi == lo {
			t.Errorf("%v: %d bytes at level %d, %d at level %d", tc.c, lo, tc.levels[0], hi, tc.levels[len(tc.levels)-1])
		}
	}
}

// A LogAppendTime log stamps the recompressed batch: the attribute, the
// append time as max timestamp and every record's timestamp, the CRC over
// the stamped header.
func TestRecompressLogAppendTime(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_123)
	l := mustOpen(t, t.TempDir(), Options{LogAppendTime: true, Now: func() time.Time { return now },
		Recompression: Recompression{Enabled: true, Codec: CompressionZstd}})
	defer l.Close()
	recs := testRecords(30)
	res, err := l.Append(batchIn(t, CompressionLZ4, recs))
	if err != nil {
		t.Fatal(err)
	}
	if res.LogAppendTime != now.UnixMilli() {
		t.Errorf("append time %d, want %d", res.LogAppendTime, now.UnixMilli())
	}
	b := storedBatches(t, l)[0]
	h := parseHeader(b)
	if h.Compression() != CompressionZstd || !h.LogAppendTime() || h.MaxTimestamp != now.UnixMilli() {
		t.Fatalf("stored %v, LogAppendTime %t, max timestamp %d", h.Compression(), h.LogAppendTime(), h.MaxTimestamp)
	}
	read, err := collect(b)
	if err != nil || len(read) != len(recs) {
		t.Fatalf("%d records, %v", len(read), err)
	}
	for _, r := range read {
		if r.Timestamp != now.UnixMilli() {
			t.Fatalf("record %d: timestamp %d, want the append time", r.Offset, r.Timestamp)
		}
	}
}

// A control batch is stored as it came, whatever the log's codec.
func TestRecompressSkipsControlBatches(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{Recompression: Recompression{Enabled: true, Codec: CompressionGzip}})
	defer l.Close()
	b := batchIn(t, CompressionNone, []Record{{Timestamp: 5, Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 0}}})
	be := binary.BigEndian
	be.PutUint16(b[offAttributes:], attrControl|attrTransactional)
	be.PutUint64(b[offProducerID:], 9)
	be.PutUint16(b[offProducerEpoch:], 0)
	fixCRC(b)
	orig := bytes.Clone(b)
	if _, err := l.Append(b); err != nil {
		t.Fatal(err)
	}
	if got := storedBatches(t, l)[0]; !bytes.Equal(got[offMagic:], orig[offMagic:]) {
		t.Errorf("the control batch was changed: attributes 0x%x", parseHeader(got).Attributes)
	}
}

// eventRecords returns n records shaped like application events: keyed
// JSON values of about 140 bytes with a header, from a fixed seed, compressing about as
// real data does (neither runs of one byte nor random bytes).
func eventRecords(n int) []Record {
	rng := rand.New(rand.NewPCG(3, 4))
	words := []string{"click", "view", "purchase", "signup", "logout", "search", "share", "comment"}
	recs := make([]Record, n)
	for i := range recs {
		user := rng.IntN(5000)
		recs[i] = Record{
			Timestamp: 1_700_000_000_000 + int64(i*3+rng.IntN(3)),
			Key:       fmt.Appendf(nil, "user-%05d", user),
			Value: fmt.Appendf(nil, `{"user":"user-%05d","event":%q,"session":"%016x","page":"/p/%d","ms":%d,"ok":%t,"ref":%q}`,
				user, words[rng.IntN(len(words))], rng.Uint64(), rng.IntN(300), rng.IntN(20000), rng.IntN(9) != 0,
				words[rng.IntN(len(words))]+"-"+words[rng.IntN(len(words))]),
			Headers: []Header{{Key: "trace", Value: fmt.Appendf(nil, "%08x", rng.Uint32())}},
		}
	}
	return recs
}

// incompressible returns n records of size bytes of random data.
func incompressible(n, size int) []Record {
	rng := rand.New(rand.NewPCG(1, 2))
	recs := make([]Record, n)
	for i := range recs {
		v := make([]byte, size)
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		recs[i] = Record{Timestamp: int64(i), Value: v}
	}
	return recs
}

// What recompression refuses, and with which error; nothing is appended.
func TestRecompressDefects(t *testing.T) {
	recs := testRecords(10)
	raw := recordsSection(recs)
	zstdOf := func(p []byte) []byte {
		out, err := compress(nil, CompressionZstd, p)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	compressed := func(c Compression, payload []byte, count int32) []byte {
		b := rawBatch(count, count-1, payload)
		b[offAttributes+1] |= byte(c)
		return fixCRC(b)
	}
	big := batchIn(t, CompressionNone, incompressible(4, 10_000))
	cases := []struct {
		name     string
		batch    []byte
		codec    Compression
		maxBytes int
		want     []error
		notWant  error
		msg      string
	}{
		{"garbage lz4 to gzip", compressed(CompressionLZ4, []byte("not lz4 at all"), 10), CompressionGzip, 0,
			[]error{ErrInvalidBatch, ErrCorrupt}, nil, "the lz4 records at position 61 do not decompress"},
		{"garbage gzip to none", compressed(CompressionGzip, []byte("not gzip at all"), 10), CompressionNone, 0,
			[]error{ErrInvalidBatch, ErrCorrupt}, nil, "the gzip records at position 61 do not decompress"},
		{"malformed record", compressed(CompressionZstd, zstdOf(append(bytes.Clone(raw[:len(raw)-1]), 2)), 10), CompressionLZ4, 0,
			[]error{ErrInvalidBatch}, ErrCorrupt, "record 9 at position"},
		{"fewer records than the count", compressed(CompressionZstd, zstdOf(raw), 11), CompressionNone, 0,
			[]error{ErrInvalidBatch}, ErrCorrupt, "batch ends after 10 of 11 records (positions in the batch decompressed)"},
		{"decompresses past max.message.bytes", batchIn(t, CompressionZstd, bigRecords(400)), CompressionNone, 20_000,
			[]error{ErrBatchTooLarge}, nil, "decompress to more than 19939 bytes"},
		{"recompresses past max.message.bytes", big, CompressionGzip, len(big),
			[]error{ErrBatchTooLarge}, nil, "once recompressed with gzip"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ValidateBatch(tc.batch); err != nil {
				t.Fatalf("the batch itself is refused: %v", err)
			}
			l := mustOpen(t, t.TempDir(), Options{MaxBatchBytes: tc.maxBytes, Recompression: Recompression{Enabled: true, Codec: tc.codec}})
			defer l.Close()
			_, err := l.Append(tc.batch)
			for _, w := range tc.want {
				if !errors.Is(err, w) {
					t.Errorf("error %v does not wrap %v", err, w)
				}
			}
			if tc.notWant != nil && errors.Is(err, tc.notWant) {
				t.Errorf("error %v wraps %v", err, tc.notWant)
			}
			if err != nil && !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not say %q", err, tc.msg)
			}
			if l.EndOffset() != 0 {
				t.Errorf("the log ends at %d after a refused append", l.EndOffset())
			}
		})
	}
}

// SetOptions switches the codec for the next append; what is stored stays.
func TestRecompressSetOptions(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{})
	defer l.Close()
	recs := testRecords(20)
	steps := []struct {
		r    Recompression
		want Compression
	}{
		{Recompression{}, CompressionLZ4},
		{Recompression{Enabled: true, Codec: CompressionZstd}, CompressionZstd},
		{Recompression{Enabled: true, Codec: CompressionNone}, CompressionNone},
		{Recompression{}, CompressionLZ4},
	}
	for i, s := range steps {
		if err := l.SetOptions(Options{Recompression: s.r}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(batchIn(t, CompressionLZ4, recs)); err != nil {
			t.Fatal(err)
		}
		stored := storedBatches(t, l)
		if len(stored) != i+1 {
			t.Fatalf("%d batches after %d appends", len(stored), i+1)
		}
		for j, b := range stored {
			if h := parseHeader(b); h.Compression() != steps[j].want {
				c := h.Compression()
				t.Errorf("after step %d: batch %d stored with %v, want %v", i, j, c, steps[j].want)
			}
		}
	}
}

// An idempotent producer's retry of a recompressed batch is recognised as a
// duplicate, with the offsets it was first written at.
func TestRecompressIdempotentRetry(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{Recompression: Recompression{Enabled: true, Codec: CompressionGzip}})
	defer l.Close()
	batch := func(seq int32, n int) []byte {
		b := batchIn(t, CompressionSnappy, testRecords(n))
		be := binary.BigEndian
		be.PutUint64(b[offProducerID:], 42)
		be.PutUint16(b[offProducerEpoch:], 0)
		be.PutUint32(b[offBaseSequence:], uint32(seq))
		return fixCRC(b)
	}
	first, err := l.Append(batch(0, 5))
	if err != nil {
		t.Fatal(err)
	}
	retry, err := l.Append(batch(0, 5))
	if err != nil {
		t.Fatal(err)
	}
	if !retry.Duplicate || retry.FirstOffset != first.FirstOffset || retry.LastOffset != first.LastOffset {
		t.Fatalf("retry answered %+v, first append %+v", retry, first)
	}
	if _, err := l.Append(batch(7, 5)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("a gap in sequences: %v, want ErrOutOfOrderSequence", err)
	}
	if _, err := l.Append(batch(5, 3)); err != nil {
		t.Fatal(err)
	}
	stored := storedBatches(t, l)
	if len(stored) != 2 || l.EndOffset() != 8 {
		t.Fatalf("%d batches ending at %d, want 2 ending at 8", len(stored), l.EndOffset())
	}
	for _, b := range stored {
		if h := parseHeader(b); h.Compression() != CompressionGzip || h.ProducerID != 42 {
			t.Errorf("batch at %d: %v, producer %d", h.BaseOffset, h.Compression(), h.ProducerID)
		}
	}
}

// Once the pool's buffers and the encoders exist, recompressing a batch
// allocates nothing, for every target codec and from compressed and
// uncompressed producers alike.
func TestRecompressAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	recs := bigRecords(200)
	for _, src := range []Compression{CompressionNone, CompressionLZ4} {
		for _, dst := range allCodecs {
			if dst == src {
				continue
			}
			l := mustOpen(t, t.TempDir(), Options{Recompression: Recompression{Enabled: true, Codec: dst}})
			batch := batchIn(t, src, recs)
			appendOne := func() {
				if _, err := l.Append(batch); err != nil {
					t.Fatal(err)
				}
			}
			appendOne()
			if allocs := testing.AllocsPerRun(50, appendOne); allocs != 0 {
				t.Errorf("%v to %v: %.2f allocations per append of %d records", src, dst, allocs, len(recs))
			}
			l.Close()
		}
	}
}

// Appenders recompressing at once into two logs share the encoders and the
// buffer pool: every batch is stored whole, in the log's codec.
func TestRecompressConcurrentAppends(t *testing.T) {
	logs := []*Log{
		mustOpen(t, t.TempDir(), Options{Recompression: Recompression{Enabled: true, Codec: CompressionZstd}}),
		mustOpen(t, t.TempDir(), Options{Recompression: Recompression{Enabled: true, Codec: CompressionLZ4, Level: 4}}),
	}
	recs := eventRecords(100)
	const appenders, batches = 4, 25
	errs := make(chan error, appenders)
	for g := range appenders {
		batch := batchIn(t, allCodecs[g%len(allCodecs)], recs[:10+g])
		go func() {
			var err error
			for i := 0; i < batches && err == nil; i++ {
				// Each log gets its own copy: Append writes the offset in place.
				_, err = logs[(g+i)%len(logs)].Append(bytes.Clone(batch))
			}
			errs <- err
		}()
	}
	for range appenders {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	total := 0
	for i, l := range logs {
		want := []Compression{CompressionZstd, CompressionLZ4}[i]
		for _, b := range storedBatches(t, l) {
			h := parseHeader(b)
			read, err := collect(b)
			if err != nil || h.Compression() != want || len(read) != int(h.NumRecords) {
				t.Fatalf("log %d: batch at %d in %v with %d records read (%v)", i, h.BaseOffset, h.Compression(), len(read), err)
			}
			total += len(read)
		}
		l.Close()
	}
	if want := batches * (10 + 11 + 12 + 13); total != want {
		t.Errorf("%d records stored, want %d", total, want)
	}
}
