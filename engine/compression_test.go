package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var codecs = []Compression{CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd}

// kgoCodec is franz-go's name for c.
func kgoCodec(c Compression) kgo.CompressionCodec {
	switch c {
	case CompressionGzip:
		return kgo.GzipCompression()
	case CompressionSnappy:
		return kgo.SnappyCompression()
	case CompressionLZ4:
		return kgo.Lz4Compression()
	case CompressionZstd:
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

// recordsSection returns the encoded records of recs as an uncompressed
// batch holds them: what a producer compresses.
func recordsSection(recs []Record) []byte {
	return buildBatch(recs...)[BatchHeaderSize:]
}

// kmsgCompressedBatch assembles, with kmsg, a batch whose records section
// is payload, already compressed with c, for the records recs. Every header
// field is computed from recs independently of BatchBuilder.
func kmsgCompressedBatch(baseOffset int64, recs []Record, c Compression, payload []byte) []byte {
	maxTS := recs[0].Timestamp
	for _, r := range recs {
		maxTS = max(maxTS, r.Timestamp)
	}
	kb := kmsg.RecordBatch{
		FirstOffset:          baseOffset,
		Length:               int32(49 + len(payload)),
		PartitionLeaderEpoch: 4,
		Magic:                2,
		Attributes:           int16(c),
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       recs[0].Timestamp,
		MaxTimestamp:         maxTS,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(recs)),
		Records:              payload,
	}
	b := kb.AppendTo(nil)
	kb.CRC = int32(crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return kb.AppendTo(nil)
}

// xerialFrame frames raw with the xerial header and blocks of at most
// blockSize decoded bytes, each a raw snappy block behind its big-endian
// length, built by hand from the format description.
func xerialFrame(raw []byte, blockSize int) []byte {
	out := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}
	for len(raw) > 0 {
		n := min(blockSize, len(raw))
		blk := s2.EncodeSnappy(nil, raw[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(blk)))
		out = append(out, blk...)
		raw = raw[n:]
	}
	return out
}

// bigRecords returns n records with values large and varied enough that
// compressed batches span several codec blocks.
func bigRecords(n int) []Record {
	recs := testRecords(n)
	for i := range recs {
		if recs[i].Value != nil {
			recs[i].Value = fmt.Appendf(nil, "%0*d", 500+i%300, i*7919)
		}
	}
	return recs
}

func TestBuildCompressedRoundTrip(t *testing.T) {
	for _, recs := range [][]Record{testRecords(1), testRecords(50), bigRecords(400)} {
		for _, c := range codecs {
			t.Run(fmt.Sprintf("%v/%d", c, len(recs)), func(t *testing.T) {
				var bb BatchBuilder
				for _, r := range recs {
					bb.Add(r)
				}
				plain := bytes.Clone(bb.Build())
				b, err := bb.BuildCompressed(c)
				if err != nil {
					t.Fatal(err)
				}
				h, err := ValidateBatch(b)
				if err != nil {
					t.Fatal(err)
				}
				ph := parseHeader(plain)
				if h.Compression() != c || h.NumRecords != ph.NumRecords || h.LastOffsetDelta != ph.LastOffsetDelta ||
					h.BaseTimestamp != ph.BaseTimestamp || h.MaxTimestamp != ph.MaxTimestamp || h.ProducerID != -1 {
					t.Fatalf("header %+v, uncompressed %+v", h, ph)
				}
				if len(recs) > 1 && bytes.Contains(b, plain[BatchHeaderSize:]) {
					t.Fatal("records are stored in the clear")
				}
				setBaseOffset(b, 1000)
				got, err := collect(b)
				if err != nil {
					t.Fatal(err)
				}
				checkRecords(t, got, recs, 1000)

				// franz-go, an independent decoder, reads our payload back to
				// the uncompressed records, and kmsg parses the batch.
				dec := kgo.DefaultDecompressor()
				raw, err := dec.Decompress(b[BatchHeaderSize:], kgo.CompressionCodecType(c))
				if err != nil {
					t.Fatalf("franz-go cannot decompress: %v", err)
				}
				if !bytes.Equal(raw, plain[BatchHeaderSize:]) {
					t.Fatal("franz-go decompresses to other records")
				}
				var kb kmsg.RecordBatch
				if err := kb.ReadFrom(b); err != nil || kb.Attributes != int16(c) || kb.NumRecords != int32(len(recs)) {
					t.Fatalf("kmsg: %v, %+v", err, kb)
				}
			})
		}
	}
}

// TestDecompressFranzGoBatches iterates batches whose records franz-go's own
// compressor (kgo.DefaultCompressor, what a kgo producer runs) compressed,
// assembled with kmsg.
func TestDecompressFranzGoBatches(t *testing.T) {
	recs := bigRecords(300)
	raw := recordsSection(recs)
	for _, c := range codecs {
		t.Run(c.String(), func(t *testing.T) {
			comp, err := kgo.DefaultCompressor(kgoCodec(c))
			if err != nil {
				t.Fatal(err)
			}
			payload, used := comp.Compress(new(bytes.Buffer), raw)
			if used != kgo.CompressionCodecType(c) {
				t.Fatalf("franz-go compressed with %d", used)
			}
			b := kmsgCompressedBatch(500, recs, c, bytes.Clone(payload))
			if _, err := ValidateBatch(b); err != nil {
				t.Fatal(err)
			}
			got, err := collect(b)
			if err != nil {
				t.Fatal(err)
			}
			checkRecords(t, got, recs, 500)
		})
	}
}

func TestDecompressSnappyFramings(t *testing.T) {
	recs := bigRecords(300) // > 100 KiB of records: several 32 KiB blocks
	raw := recordsSection(recs)
	if len(raw) < 3*32<<10 {
		t.Fatalf("records too small to span blocks: %d bytes", len(raw))
	}
	cases := []struct {
		name    string
		payload []byte
	}{
		{"raw", s2.EncodeSnappy(nil, raw)},
		{"xerial 32 KiB blocks", xerialFrame(raw, 32<<10)},
		{"xerial one block", xerialFrame(raw, len(raw))},
		{"xerial 7-byte blocks", xerialFrame(raw, 7)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := recs
			got, err := collect(kmsgCompressedBatch(0, want, CompressionSnappy, tc.payload))
			if err != nil {
				t.Fatal(err)
			}
			checkRecords(t, got, want, 0)
		})
	}
}

func TestDecompressGzipMembers(t *testing.T) {
	recs := testRecords(40)
	raw := recordsSection(recs)
	var buf bytes.Buffer
	for _, part := range [][]byte{raw[:len(raw)/3], raw[len(raw)/3:]} {
		w := gzip.NewWriter(&buf)
		w.Write(part)
		w.Close()
	}
	got, err := collect(kmsgCompressedBatch(0, recs, CompressionGzip, buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, got, recs, 0)
}

func TestIterateMixedBatches(t *testing.T) {
	recs := testRecords(100)
	var all []byte
	var bb BatchBuilder
	base := int64(0)
	for i, c := range []Compression{CompressionZstd, CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionNone, CompressionZstd} {
		bb.Reset()
		part := recs[i*14 : i*14+14]
		for _, r := range part {
			bb.Add(r)
		}
		b, err := bb.BuildCompressed(c)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.Clone(b)
		setBaseOffset(b, base)
		base += int64(len(part))
		all = append(all, b...)
	}
	got, err := collect(all)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, got, recs[:98], 0)

	// A trailing partial compressed batch ends the iteration quietly.
	bb.Reset()
	bb.Add(recs[98])
	last, _ := bb.BuildCompressed(CompressionZstd)
	setBaseOffset(last, 98)
	got, err = collect(cat(all, last[:len(last)-1]))
	if err != nil || len(got) != 98 {
		t.Fatalf("%d records, %v", len(got), err)
	}
}

func TestCompressedLogAppendTime(t *testing.T) {
	recs := testRecords(20)
	for _, c := range codecs {
		var bb BatchBuilder
		for _, r := range recs {
			bb.Add(r)
		}
		b, _ := bb.BuildCompressed(c)
		b[offAttributes+1] |= attrLogAppendTime
		binary.BigEndian.PutUint64(b[offMaxTimestamp:], 77)
		fixCRC(b)
		got, err := collect(b)
		if err != nil || len(got) != 20 {
			t.Fatalf("%v: %d records, %v", c, len(got), err)
		}
		for _, r := range got {
			if r.Timestamp != 77 {
				t.Fatalf("%v: timestamp %d, want 77", c, r.Timestamp)
			}
		}
	}
}

func TestCompressedBatchDefects(t *testing.T) {
	recs := testRecords(10)
	raw := recordsSection(recs)
	prefix := batchOf95Bytes(t) // the batch under test starts at position 95
	zstdOf := func(p []byte) []byte {
		out, err := compress(nil, CompressionZstd, p)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	cases := []struct {
		name    string
		c       Compression
		payload []byte
		count   int   // record count in the header; len(recs) when 0
		yields  int   // records of the compressed batch yielded before the error
		want    error // wrapped error
		msg     string
	}{
		{"garbage gzip", CompressionGzip, []byte("not gzip at all"), 0, 0, ErrCorrupt, "gzip batch at position 95 does not decompress"},
		{"garbage lz4", CompressionLZ4, []byte("not lz4 at all"), 0, 0, ErrCorrupt, "lz4 batch at position 95 does not decompress"},
		{"garbage zstd", CompressionZstd, []byte("not zstd at all"), 0, 0, ErrCorrupt, "zstd batch at position 95 does not decompress"},
		{"garbage raw snappy", CompressionSnappy, []byte("\x20\xff junk"), 0, 0, ErrCorrupt, "snappy batch at position 95 does not decompress"},
		{"truncated gzip", CompressionGzip, func() []byte { b, _ := compress(nil, CompressionGzip, raw); return b[:len(b)-5] }(), 0, 0, ErrCorrupt, "does not decompress"},
		{"truncated lz4", CompressionLZ4, func() []byte { b, _ := compress(nil, CompressionLZ4, raw); return b[:len(b)-6] }(), 0, 0, ErrCorrupt, "does not decompress"},
		{"truncated zstd", CompressionZstd, func() []byte { b, _ := compress(nil, CompressionZstd, raw); return b[:len(b)-3] }(), 0, 0, ErrCorrupt, "does not decompress"},
		{"snappy claims more than it can encode", CompressionSnappy, binary.AppendUvarint(nil, 1<<20), 0, 0, ErrCorrupt, "declares 1048576 decoded bytes"},
		{"zstd frame claims more than it can encode", CompressionZstd, zstdLyingFrame(t, raw, 1<<29), 0, 0, ErrCorrupt, "declares 536870912 bytes"},
		{"xerial header only, records expected", CompressionSnappy, xerialFrame(nil, 1), 0, 0, ErrCorrupt, "at byte 0 of its snappy-decompressed records: record length runs past the end"},
		{"xerial short header", CompressionSnappy, xerialFrame(raw, 1<<20)[:12], 0, 0, ErrCorrupt, "xerial snappy header of 12 bytes"},
		{"xerial version 0", CompressionSnappy, func() []byte { b := xerialFrame(raw, 1<<20); b[11] = 0; return b }(), 0, 0, ErrCorrupt, "xerial snappy version 0"},
		{"xerial block past the end", CompressionSnappy, func() []byte { b := xerialFrame(raw, 1<<20); return b[:len(b)-1] }(), 0, 0, ErrCorrupt, "xerial snappy block at byte 16"},
		{"xerial bytes after the last block", CompressionSnappy, append(xerialFrame(raw, 1<<20), 0, 0), 0, 0, ErrCorrupt, "block length at byte"},
		{"xerial negative block length", CompressionSnappy, append(xerialFrame(nil, 1), 0xff, 0xff, 0xff, 0xff), 0, 0, ErrCorrupt, "length -1"},
		{"xerial block claims more than it can encode", CompressionSnappy, append(xerialFrame(nil, 1), 0, 0, 0, 3, 0x80, 0x80, 0x04), 0, 0, ErrCorrupt, "declares 65536 decoded bytes"},
		{"record framing", CompressionZstd, zstdOf(append(bytes.Clone(raw[:len(raw)-1]), 2)), 0, 9, ErrCorrupt, "record 9 of the batch at position 95, at byte 178 of its zstd-decompressed records: header value"},
		{"bytes after the last record", CompressionZstd, zstdOf(append(bytes.Clone(raw), 0, 0)), 0, 10, ErrCorrupt, "2 bytes at byte " + strconv.Itoa(len(raw)) + " of its zstd-decompressed records after the last of 10 records of the batch at position 95"},
		{"fewer records than the count", CompressionZstd, zstdOf(raw), 11, 10, ErrCorrupt, "record 10 of the batch at position 95, at byte " + strconv.Itoa(len(raw)) + " of its zstd-decompressed records: record length runs past the end"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := len(recs)
			if tc.count != 0 {
				n = tc.count
			}
			b := rawBatch(int32(n), int32(n-1), tc.payload)
			b[offAttributes+1] |= byte(tc.c)
			fixCRC(b)
			if _, err := ValidateBatch(b); err != nil {
				t.Fatalf("the produce path rejects it: %v", err)
			}
			got, err := collect(cat(prefix, b))
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if len(got) != 1+tc.yields || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("%d records, want %d; error %q does not contain %q", len(got), 1+tc.yields, err, tc.msg)
			}
		})
	}
}

// zstdLyingFrame returns a zstd frame of p whose header declares fcs bytes
// of content instead of len(p).
func zstdLyingFrame(t *testing.T, p []byte, fcs uint64) []byte {
	t.Helper()
	b, err := compress(nil, CompressionZstd, p)
	if err != nil {
		t.Fatal(err)
	}
	var h zstd.Header
	if err := h.Decode(b); err != nil {
		t.Fatalf("frame header %+v, %v", h, err)
	}
	// Frame_Header_Descriptor: bits 6-7 the FCS field size flag, bit 5
	// single segment. Rewrite the header with an 8-byte FCS field.
	fhd := b[4]
	fcsFlag := fhd >> 6
	single := fhd&0x20 != 0
	fieldSize := []int{0, 2, 4, 8}[fcsFlag]
	if fcsFlag == 0 && single {
		fieldSize = 1
	}
	hdrEnd := h.HeaderSize
	newHdr := append([]byte{}, b[:4]...)
	newHdr = append(newHdr, fhd|0xc0)
	newHdr = append(newHdr, b[5:hdrEnd-fieldSize]...)
	newHdr = binary.LittleEndian.AppendUint64(newHdr, fcs)
	return append(newHdr, b[hdrEnd:]...)
}

// batchOf95Bytes returns a one-record uncompressed batch of exactly 95
// bytes, so the batch after it starts at position 95 in error messages.
func batchOf95Bytes(t *testing.T) []byte {
	t.Helper()
	for n := range 40 {
		b := buildBatch(Record{Timestamp: 1000, Value: bytes.Repeat([]byte{'x'}, n)})
		if len(b) == 95 {
			return b
		}
	}
	t.Fatal("no 95-byte batch")
	return nil
}

func TestDecompressLimit(t *testing.T) {
	recs := bigRecords(200)
	raw := recordsSection(recs)
	old := maxDecompressedBatchBytes
	maxDecompressedBatchBytes = len(raw) - 1
	defer func() { maxDecompressedBatchBytes = old }()
	payloads := map[string][]byte{"xerial": xerialFrame(raw, 32<<10), "raw snappy": s2.EncodeSnappy(nil, raw)}
	for _, c := range codecs {
		p, err := compress(nil, c, raw)
		if err != nil {
			t.Fatal(err)
		}
		payloads[c.String()] = p
	}
	for name, p := range payloads {
		c := CompressionSnappy
		for _, cc := range codecs {
			if cc.String() == name {
				c = cc
			}
		}
		_, err := collect(kmsgCompressedBatch(0, recs, c, p))
		if !errors.Is(err, ErrBatchTooLarge) || !strings.Contains(err.Error(), "decompress to more than") {
			t.Errorf("%s: %v", name, err)
		}
	}
	maxDecompressedBatchBytes = len(raw)
	for name, p := range payloads {
		c := CompressionSnappy
		for _, cc := range codecs {
			if cc.String() == name {
				c = cc
			}
		}
		if _, err := collect(kmsgCompressedBatch(0, recs, c, p)); err != nil {
			t.Errorf("%s at the limit: %v", name, err)
		}
	}
}

func TestBuildCompressedEdges(t *testing.T) {
	var bb BatchBuilder
	if b, err := bb.BuildCompressed(CompressionZstd); b != nil || err != nil {
		t.Fatalf("empty builder: %v %v", b, err)
	}
	bb.Add(Record{Timestamp: 5, Value: []byte("v")})
	if _, err := bb.BuildCompressed(Compression(5)); err == nil {
		t.Fatal("codec 5 accepted")
	}
	b, err := bb.BuildCompressed(CompressionNone)
	if err != nil || !bytes.Equal(b, bb.Build()) {
		t.Fatalf("CompressionNone differs from Build: %v", err)
	}
	// Building again reuses the buffer and gives the same bytes.
	z1, _ := bb.BuildCompressed(CompressionGzip)
	z1 = bytes.Clone(z1)
	z2, _ := bb.BuildCompressed(CompressionGzip)
	if !bytes.Equal(z1, z2) {
		t.Fatal("BuildCompressed is not repeatable")
	}
}

func TestCompressedLogReadBack(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{SegmentBytes: 8 << 10})
	defer l.Close()
	recs := bigRecords(120)
	var bb BatchBuilder
	for i := 0; i < len(recs); i += 10 {
		bb.Reset()
		for _, r := range recs[i : i+10] {
			bb.Add(r)
		}
		b, err := bb.BuildCompressed(codecs[i/10%len(codecs)])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	got := readAll(t, l, 0, 1<<20)
	checkSequence(t, got, 0, len(recs))
	for i, r := range got {
		if !bytes.Equal(r.Value, recs[i].Value) || !bytes.Equal(r.Key, recs[i].Key) {
			t.Fatalf("record %d differs", i)
		}
	}
}

func TestCompressedIteratorAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	recs := testRecords(100)
	for _, c := range codecs {
		var bb BatchBuilder
		var all []byte
		for i := range 4 {
			bb.Reset()
			for _, r := range recs[i*25 : i*25+25] {
				bb.Add(r)
			}
			b, _ := bb.BuildCompressed(c)
			b = bytes.Clone(b)
			setBaseOffset(b, int64(i*25))
			all = append(all, b...)
		}
		it := NewRecordIterator(all)
		n := 0
		run := func() {
			it.reset(all)
			n = 0
			for it.Next() {
				n++
			}
		}
		run() // grow the buffer
		allocs := testing.AllocsPerRun(20, run)
		if it.Err() != nil || n != 100 {
			t.Fatalf("%v: %d records, %v", c, n, it.Err())
		}
		// Decoders are pooled and output goes into the iterator's buffer:
		// once it has grown, neither records nor batches allocate.
		if allocs != 0 {
			t.Errorf("%v: %.1f allocations for 4 batches of 25 records", c, allocs)
		}
	}
}

func BenchmarkDecompressIterate(b *testing.B) {
	recs := testRecords(100)
	for _, c := range append([]Compression{CompressionNone}, codecs...) {
		b.Run(c.String(), func(b *testing.B) {
			var bb BatchBuilder
			for _, r := range recs {
				bb.Add(r)
			}
			batch, _ := bb.BuildCompressed(c)
			b.SetBytes(int64(len(bb.Build())))
			b.ReportAllocs()
			it := NewRecordIterator(batch)
			for b.Loop() {
				it.reset(batch)
				for it.Next() {
				}
			}
		})
	}
}
