package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// testRecords returns n records with varied keys, values and headers,
// including null keys, null values, empty keys and null header values.
func testRecords(n int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		r := Record{
			Timestamp: 1_700_000_000_000 + int64(i*7%5) - 2, // not monotonic
			Key:       fmt.Appendf(nil, "key-%d", i),
			Value:     bytes.Repeat([]byte{byte('a' + i%26)}, i%40),
		}
		switch i % 5 {
		case 1:
			r.Key = nil
		case 2:
			r.Value = nil
		case 3:
			r.Key = []byte{}
		case 4:
			r.Headers = []Header{
				{Key: "trace-id", Value: []byte("abc")},
				{Key: "null", Value: nil},
				{Key: "", Value: []byte{}},
			}
		}
		recs[i] = r
	}
	return recs
}

// buildBatch returns a copy of the batch a BatchBuilder builds from recs.
func buildBatch(recs ...Record) []byte {
	var bb BatchBuilder
	for _, r := range recs {
		bb.Add(r)
	}
	return bytes.Clone(bb.Build())
}

// fixCRC recomputes the CRC of the batch b in place and returns b.
func fixCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[offCRC:], batchCRC(b))
	return b
}

// vi encodes values as zig-zag varints, back to back.
func vi(vals ...int64) []byte {
	var b []byte
	for _, v := range vals {
		b = binary.AppendVarint(b, v)
	}
	return b
}

// cat concatenates byte slices.
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// rawBody returns a record body (everything after the length prefix) with
// the given offset delta, key and value lengths (-1 null), and headers given
// as already encoded bytes behind their count.
func rawBody(offsetDelta int64, key, value string, headerCount int64, headers ...[]byte) []byte {
	kl, vl := int64(len(key)), int64(len(value))
	if key == "<null>" {
		kl, key = -1, ""
	}
	if value == "<null>" {
		vl, value = -1, ""
	}
	return cat([]byte{0}, vi(0, offsetDelta, kl), []byte(key), vi(vl), []byte(value),
		vi(headerCount), cat(headers...))
}

// frame prefixes body with its length plus adjust.
func frame(body []byte, adjust int) []byte {
	return cat(vi(int64(len(body)+adjust)), body)
}

// rawBatch assembles a batch from encoded records with the given count and
// last offset delta, a correct length and CRC.
func rawBatch(count, lastOffsetDelta int32, records ...[]byte) []byte {
	recs := cat(records...)
	b := make([]byte, BatchHeaderSize, BatchHeaderSize+len(recs))
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], 0)
	be.PutUint32(b[offBatchLength:], uint32(BatchHeaderSize-batchLogOverhead+len(recs)))
	be.PutUint32(b[offLeaderEpoch:], 0xffffffff)
	b[offMagic] = batchMagic
	be.PutUint32(b[offLastOffsetDelta:], uint32(lastOffsetDelta))
	be.PutUint64(b[offBaseTimestamp:], 1000)
	be.PutUint64(b[offMaxTimestamp:], 1000)
	be.PutUint64(b[offProducerID:], 0xffffffffffffffff)
	be.PutUint16(b[offProducerEpoch:], 0xffff)
	be.PutUint32(b[offBaseSequence:], 0xffffffff)
	be.PutUint32(b[offRecordCount:], uint32(count))
	b = append(b, recs...)
	return fixCRC(b)
}

func TestBatchHeaderLayout(t *testing.T) {
	offs := []struct {
		off, size int
	}{
		{offBaseOffset, 8}, {offBatchLength, 4}, {offLeaderEpoch, 4}, {offMagic, 1},
		{offCRC, 4}, {offAttributes, 2}, {offLastOffsetDelta, 4}, {offBaseTimestamp, 8},
		{offMaxTimestamp, 8}, {offProducerID, 8}, {offProducerEpoch, 2}, {offBaseSequence, 4},
		{offRecordCount, 4},
	}
	next := 0
	for i, f := range offs {
		if f.off != next {
			t.Fatalf("field %d at offset %d, want %d", i, f.off, next)
		}
		next += f.size
	}
	if next != BatchHeaderSize {
		t.Fatalf("header ends at %d, want %d", next, BatchHeaderSize)
	}
	if minBatchLength != 49 {
		t.Fatalf("minBatchLength = %d", minBatchLength)
	}
}

func TestParseBatchHeader(t *testing.T) {
	b := make([]byte, BatchHeaderSize)
	for i := range b {
		b[i] = byte(i + 1)
	}
	h, err := ParseBatchHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	want := BatchHeader{
		BaseOffset:      0x0102030405060708,
		Length:          0x090a0b0c,
		LeaderEpoch:     0x0d0e0f10,
		Magic:           0x11,
		CRC:             0x12131415,
		Attributes:      0x1617,
		LastOffsetDelta: 0x18191a1b,
		BaseTimestamp:   0x1c1d1e1f20212223,
		MaxTimestamp:    0x2425262728292a2b,
		ProducerID:      0x2c2d2e2f30313233,
		ProducerEpoch:   0x3435,
		BaseSequence:    0x36373839,
		NumRecords:      0x3a3b3c3d,
	}
	if h != want {
		t.Fatalf("got  %+v\nwant %+v", h, want)
	}
	if _, err := ParseBatchHeader(b[:BatchHeaderSize-1]); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("short header: %v", err)
	}
}

func TestBatchHeaderAccessors(t *testing.T) {
	h := BatchHeader{BaseOffset: 100, LastOffsetDelta: 9, Length: 49}
	if h.LastOffset() != 109 || h.Size() != 61 {
		t.Fatalf("LastOffset %d Size %d", h.LastOffset(), h.Size())
	}
	if h.Compression() != CompressionNone || h.LogAppendTime() || h.Transactional() || h.Control() {
		t.Fatalf("zero attributes: %+v", h)
	}
	h.Attributes = 0x3c | int16(CompressionZstd) // all flags, zstd
	if h.Compression() != CompressionZstd || !h.LogAppendTime() || !h.Transactional() || !h.Control() {
		t.Fatalf("attributes 0x%x", h.Attributes)
	}
	names := map[Compression]string{
		CompressionNone: "none", CompressionGzip: "gzip", CompressionSnappy: "snappy",
		CompressionLZ4: "lz4", CompressionZstd: "zstd", 5: "Compression(5)",
	}
	for c, name := range names {
		if c.String() != name {
			t.Errorf("%d: %q, want %q", c, c.String(), name)
		}
	}
}

func TestValidateBuiltBatch(t *testing.T) {
	recs := testRecords(20)
	b := buildBatch(recs...)
	h, err := ValidateBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	maxTS := recs[0].Timestamp
	for _, r := range recs {
		maxTS = max(maxTS, r.Timestamp)
	}
	want := BatchHeader{
		BaseOffset: 0, Length: int32(len(b) - 12), LeaderEpoch: -1, Magic: 2, CRC: h.CRC,
		LastOffsetDelta: 19, BaseTimestamp: recs[0].Timestamp, MaxTimestamp: maxTS,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: 20,
	}
	if h != want {
		t.Fatalf("got  %+v\nwant %+v", h, want)
	}

	// The fields outside the CRC can change without invalidating it.
	setBaseOffset(b, 1<<40)
	setLeaderEpoch(b, 17)
	h, err = ValidateBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.BaseOffset != 1<<40 || h.LeaderEpoch != 17 || h.LastOffset() != 1<<40+19 {
		t.Fatalf("after set: %+v", h)
	}
	if sh, err := checkStoredBatch(b); err != nil || sh != h {
		t.Fatalf("checkStoredBatch: %+v, %v", sh, err)
	}
}

func TestValidateBatchRejects(t *testing.T) {
	good := func() []byte { return buildBatch(testRecords(5)...) }
	rec := func(od int64) []byte { return frame(rawBody(od, "k", "v", 0), 0) }

	tests := []struct {
		name  string
		batch []byte
		want  string // substring of the error
	}{
		{"empty", nil, "0 bytes, shorter than the 61-byte header"},
		{"short", good()[:60], "60 bytes, shorter than the 61-byte header"},
		{"header only, no records", good()[:61], "announces"},
		{"length mismatch: extra byte", append(good(), 0), "announces"},
		{"length mismatch: cut", func() []byte { b := good(); return b[:len(b)-1] }(), "announces"},
		{"length field too big", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-11))
			return b
		}(), "batch length"},
		{"negative length field", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[offBatchLength:], 0xffffffff)
			return b
		}(), "batch length -1"},
		{"magic 1", func() []byte { b := good(); b[offMagic] = 1; return fixCRC(b) }(), "magic 1 at position 16, want 2"},
		{"bad CRC", func() []byte { b := good(); b[len(b)-1] ^= 0x40; return b }(), "CRC"},
		{"CRC field flipped", func() []byte { b := good(); b[offCRC] ^= 1; return b }(), "at position 17"},
		{"codec 5", func() []byte { b := good(); b[offAttributes+1] |= 5; return fixCRC(b) }(), "compression codec 5"},
		{"codec 7", func() []byte { b := good(); b[offAttributes+1] |= 7; return fixCRC(b) }(), "compression codec 7"},
		{"count 0", rawBatch(0, -1), "record count 0"},
		{"count -1", rawBatch(-1, -2, rec(0)), "record count -1"},
		{"last offset delta too big", rawBatch(2, 2, rec(0), rec(1)), "last offset delta 2"},
		{"last offset delta too small", rawBatch(2, 0, rec(0), rec(1)), "last offset delta 0"},
		{"record length too long, last record", rawBatch(2, 1, rec(0), frame(rawBody(1, "k", "v", 0), 1)),
			"record length 9 runs past the end of the batch (8 bytes left)"},
		{"record length too long, middle record", rawBatch(2, 1, frame(rawBody(0, "k", "v", 0), 2), rec(1)),
			"leaves 2 bytes after the last header"},
		{"record length too short", rawBatch(2, 1, rec(0), frame(rawBody(1, "k", "v", 0), -1)),
			"header count runs past the end of the record (0 bytes left)"},
		{"record length too short, inside the value", rawBatch(1, 0, frame(rawBody(0, "k", "value", 0), -3)),
			"value of 5 bytes runs past the end of the record (3 bytes left)"},
		{"record length negative", rawBatch(1, 0, cat(vi(-1), rawBody(0, "k", "v", 0))), "record length -1"},
		{"record length zero", rawBatch(1, 0, cat(vi(0), rawBody(0, "k", "v", 0))), "attributes runs past"},
		{"offset delta out of order", rawBatch(3, 2, rec(0), rec(2), rec(1)), "record 1 at position 73: offset delta 2, want 1"},
		{"offset delta not starting at 0", rawBatch(1, 0, rec(1)), "offset delta 1, want 0"},
		{"key length -2", rawBatch(1, 0, frame(cat([]byte{0}, vi(0, 0, -2), vi(1), []byte("v"), vi(0)), 0)),
			"record 0 at position 65: key length -2"},
		{"value length -2", rawBatch(1, 0, frame(cat([]byte{0}, vi(0, 0, 1), []byte("k"), vi(-2), vi(0)), 0)),
			"value length -2"},
		{"header count -1", rawBatch(1, 0, frame(rawBody(0, "k", "v", -1), 0)), "header count -1"},
		{"header count too big", rawBatch(1, 0, frame(rawBody(0, "k", "v", 2, cat(vi(1), []byte("h"), vi(-1))), 0)),
			"header key length runs past the end of the record"},
		{"header key length -1", rawBatch(1, 0, frame(rawBody(0, "k", "v", 1, cat(vi(-1), vi(-1))), 0)),
			"header key length -1"},
		{"header value length -2", rawBatch(1, 0, frame(rawBody(0, "k", "v", 1, cat(vi(1), []byte("h"), vi(-2))), 0)),
			"header value length -2"},
		{"header value too long", rawBatch(1, 0, frame(rawBody(0, "k", "v", 1, cat(vi(1), []byte("h"), vi(9), []byte("x"))), 0)),
			"header value of 9 bytes runs past"},
		{"trailing garbage", rawBatch(2, 1, rec(0), rec(1), []byte{0}), "1 bytes at position 79 after the last of 2 records"},
		{"fewer records than count", rawBatch(3, 2, rec(0), rec(1)), "record 2 at position 79: batch ends after 2 of 3 records"},
		{"varint too long", rawBatch(1, 0, frame(cat([]byte{0}, vi(0, 0), []byte{0x82, 0x80, 0x80, 0x80, 0x80, 0x00}, []byte("k"), vi(-1, 0)), 0)),
			"key length varint too long"},
		{"varint over 32 bits", rawBatch(1, 0, frame(cat([]byte{0}, vi(0, 0), []byte{0x82, 0x80, 0x80, 0x80, 0x70}, []byte("k"), vi(-1, 0)), 0)),
			"key length varint too long or out of range"},
		{"varint timestamp too long", rawBatch(1, 0, frame(cat([]byte{0}, bytes.Repeat([]byte{0xff}, 10), []byte{1}, vi(0, -1, -1, 0)), 0)),
			"timestamp delta varint too long"},
		{"truncated record length varint", rawBatch(1, 0, []byte{0x80}), "record length runs past the end of the batch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ValidateBatch(tt.batch)
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, ErrInvalidBatch) {
				t.Fatalf("%v does not wrap ErrInvalidBatch", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "engine: invalid record batch: ") {
				t.Fatalf("error %q", err)
			}
		})
	}
}

// TestValidateBatchErrorPosition checks the error names the record and the
// byte position of the bad field, as in the documented example.
func TestValidateBatchErrorPosition(t *testing.T) {
	var recs [][]byte
	pos := BatchHeaderSize
	for i := range 3 {
		r := frame(rawBody(int64(i), "key", "value", 0), 0)
		recs = append(recs, r)
		pos += len(r)
	}
	// Record 3: length, attributes, timestamp delta, offset delta, then the key length.
	bad := frame(cat([]byte{0}, vi(0, 3, -2), vi(1), []byte("v"), vi(0)), 0)
	recs = append(recs, bad)
	keyPos := pos + 1 + 1 + 1 + 1
	_, err := ValidateBatch(rawBatch(4, 3, recs...))
	want := fmt.Sprintf("engine: invalid record batch: record 3 at position %d: key length -2", keyPos)
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

func TestValidateBatchCompressedPayloadNotInspected(t *testing.T) {
	for c := CompressionGzip; c <= CompressionZstd; c++ {
		b := rawBatch(3, 2, []byte("not really compressed data"))
		b[offAttributes+1] = byte(c)
		fixCRC(b)
		h, err := ValidateBatch(b)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if h.Compression() != c {
			t.Fatalf("compression %s, want %s", h.Compression(), c)
		}
		// The count checks still apply.
		binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 3)
		if _, err := ValidateBatch(fixCRC(b)); !errors.Is(err, ErrInvalidBatch) {
			t.Fatalf("%s with bad last offset delta: %v", c, err)
		}
	}
}

// TestValidateBatchNeverPanics truncates and corrupts a valid batch in many
// ways, keeping length and CRC right so the record walk sees the damage.
func TestValidateBatchNeverPanics(t *testing.T) {
	good := buildBatch(testRecords(12)...)
	for cut := range len(good) {
		if _, err := ValidateBatch(good[:cut]); !errors.Is(err, ErrInvalidBatch) {
			t.Fatalf("cut at %d: %v", cut, err)
		}
	}
	for i := BatchHeaderSize; i < len(good); i++ {
		for _, v := range []byte{0x00, 0x01, 0x7f, 0x80, 0xff, good[i] ^ 0x01} {
			b := bytes.Clone(good)
			b[i] = v
			fixCRC(b)
			if _, err := ValidateBatch(b); err != nil && !errors.Is(err, ErrInvalidBatch) {
				t.Fatalf("byte %d = 0x%02x: %v", i, v, err)
			}
		}
	}
}

func TestCheckStoredBatch(t *testing.T) {
	t.Run("empty batch left by the cleaner", func(t *testing.T) {
		b := rawBatch(0, 4)
		h, err := checkStoredBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		if h.NumRecords != 0 || h.LastOffsetDelta != 4 || h.Size() != BatchHeaderSize {
			t.Fatalf("%+v", h)
		}
	})
	t.Run("records with offset gaps", func(t *testing.T) {
		b := rawBatch(2, 3, frame(rawBody(0, "a", "1", 0), 0), frame(rawBody(3, "b", "2", 0), 0))
		if _, err := checkStoredBatch(b); err != nil {
			t.Fatal(err)
		}
		if _, err := ValidateBatch(b); !errors.Is(err, ErrInvalidBatch) {
			t.Fatalf("ValidateBatch accepted a batch with gaps: %v", err)
		}
	})
	t.Run("longer buffer", func(t *testing.T) {
		b := buildBatch(testRecords(3)...)
		h, err := checkStoredBatch(append(bytes.Clone(b), b...))
		if err != nil || h.Size() != int64(len(b)) {
			t.Fatalf("%+v %v", h, err)
		}
	})
	t.Run("every cut is a torn tail", func(t *testing.T) {
		b := buildBatch(testRecords(7)...)
		for cut := range len(b) {
			_, err := checkStoredBatch(b[:cut])
			if !errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, ErrCorrupt) {
				t.Fatalf("cut at %d: %v", cut, err)
			}
		}
	})
	t.Run("every flipped byte in the CRC range is corruption", func(t *testing.T) {
		b := buildBatch(testRecords(7)...)
		for i := offAttributes; i < len(b); i++ {
			c := bytes.Clone(b)
			c[i] ^= 0x10
			_, err := checkStoredBatch(c)
			if !errors.Is(err, ErrCorrupt) || errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("flip at %d: %v", i, err)
			}
		}
		for i := offCRC; i < offAttributes; i++ {
			c := bytes.Clone(b)
			c[i] ^= 0x10
			if _, err := checkStoredBatch(c); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("flip in CRC field at %d: %v", i, err)
			}
		}
	})
	corrupt := []struct {
		name  string
		batch []byte
		want  string
	}{
		{"length below 49", func() []byte {
			b := rawBatch(0, 0)
			binary.BigEndian.PutUint32(b[offBatchLength:], 48)
			return b
		}(), "batch length 48 below the minimum 49"},
		{"negative length", func() []byte {
			b := rawBatch(0, 0)
			binary.BigEndian.PutUint32(b[offBatchLength:], 0x80000000)
			return b
		}(), "batch length -2147483648"},
		{"magic 1", func() []byte { b := rawBatch(0, 0); b[offMagic] = 1; return fixCRC(b) }(), "batch magic 1"},
		{"negative last offset delta", rawBatch(0, -1), "last offset delta -1"},
		{"negative count", rawBatch(-1, 0), "record count -1"},
		{"count above last offset delta + 1", rawBatch(3, 1), "record count 3 outside [0, last offset delta + 1 = 2]"},
	}
	for _, tt := range corrupt {
		t.Run(tt.name, func(t *testing.T) {
			_, err := checkStoredBatch(tt.batch)
			if !errors.Is(err, ErrCorrupt) || errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("%v", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestValidateBatchAllocs(t *testing.T) {
	b := buildBatch(testRecords(100)...)
	if _, err := ValidateBatch(b); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := ValidateBatch(b); err != nil {
			panic(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("ValidateBatch allocates %.1f times", allocs)
	}
	allocs = testing.AllocsPerRun(100, func() {
		if _, err := checkStoredBatch(b); err != nil {
			panic(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("checkStoredBatch allocates %.1f times", allocs)
	}
}

// BenchmarkValidateBatch times ValidateBatch alone (header checks, CRC-32C
// and the record walk) on the shapes of BenchmarkAppend with 100 B values,
// and on 100 of testRecords' varied records (keys, null values, headers).
func BenchmarkValidateBatch(b *testing.B) {
	for _, n := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("records=%d/value=100B", n), func(b *testing.B) {
			benchValidate(b, benchBatch(n, 100), n)
		})
	}
	b.Run("records=100/mixed", func(b *testing.B) { benchValidate(b, buildBatch(testRecords(100)...), 100) })
}

func benchValidate(b *testing.B, batch []byte, records int) {
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ValidateBatch(batch); err != nil {
			b.Fatal(err)
		}
	}
	reportRecords(b, records)
}
