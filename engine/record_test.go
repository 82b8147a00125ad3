package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// collect iterates batches to the end and returns the records (deep copies)
// and the iterator's error.
func collect(batches []byte) ([]Record, error) {
	var out []Record
	it := NewRecordIterator(batches)
	for it.Next() {
		r := it.Record()
		c := Record{Offset: r.Offset, Timestamp: r.Timestamp, Key: cloneNullable(r.Key), Value: cloneNullable(r.Value)}
		for _, h := range r.Headers {
			c.Headers = append(c.Headers, Header{Key: h.Key, Value: cloneNullable(h.Value)})
		}
		out = append(out, c)
	}
	return out, it.Err()
}

func cloneNullable(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// sameBytes compares nullable byte slices, telling nil from empty.
func sameBytes(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

// checkRecords compares got with want, whose offsets are base+index and
// whose timestamps are as given.
func checkRecords(t *testing.T, got, want []Record, base int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Offset != base+int64(i) {
			t.Errorf("record %d: offset %d, want %d", i, g.Offset, base+int64(i))
		}
		if g.Timestamp != w.Timestamp {
			t.Errorf("record %d: timestamp %d, want %d", i, g.Timestamp, w.Timestamp)
		}
		if !sameBytes(g.Key, w.Key) {
			t.Errorf("record %d: key %q (nil %t), want %q (nil %t)", i, g.Key, g.Key == nil, w.Key, w.Key == nil)
		}
		if !sameBytes(g.Value, w.Value) {
			t.Errorf("record %d: value %q (nil %t), want %q (nil %t)", i, g.Value, g.Value == nil, w.Value, w.Value == nil)
		}
		if len(g.Headers) != len(w.Headers) {
			t.Fatalf("record %d: %d headers, want %d", i, len(g.Headers), len(w.Headers))
		}
		for j, wh := range w.Headers {
			gh := g.Headers[j]
			if gh.Key != wh.Key || !sameBytes(gh.Value, wh.Value) {
				t.Errorf("record %d header %d: %q=%q (nil %t), want %q=%q (nil %t)",
					i, j, gh.Key, gh.Value, gh.Value == nil, wh.Key, wh.Value, wh.Value == nil)
			}
		}
	}
}

func TestBuilderIteratorRoundTrip(t *testing.T) {
	recs := testRecords(25)
	b := buildBatch(recs...)
	if _, err := ValidateBatch(b); err != nil {
		t.Fatal(err)
	}
	got, err := collect(b)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, got, recs, 0)

	setBaseOffset(b, 5000)
	setLeaderEpoch(b, 3)
	got, err = collect(b)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, got, recs, 5000)
}

func TestBatchBuilder(t *testing.T) {
	var bb BatchBuilder
	if bb.Build() != nil || bb.Len() != 0 {
		t.Fatal("empty builder builds a batch")
	}
	recs := testRecords(10)
	for _, r := range recs {
		bb.Add(r)
	}
	if bb.Len() != 10 {
		t.Fatalf("Len %d", bb.Len())
	}
	b1 := bytes.Clone(bb.Build())
	if b2 := bb.Build(); !bytes.Equal(b1, b2) {
		t.Fatal("Build is not repeatable")
	}
	c := cap(bb.buf)
	bb.Reset()
	if bb.Len() != 0 || bb.Build() != nil || cap(bb.buf) != c {
		t.Fatalf("after Reset: Len %d cap %d, want cap %d", bb.Len(), cap(bb.buf), c)
	}
	for _, r := range recs {
		bb.Add(r)
	}
	if !bytes.Equal(bb.Build(), b1) {
		t.Fatal("rebuilt batch differs")
	}

	// Adding after Build extends the batch.
	extra := Record{Timestamp: recs[0].Timestamp + 1_000_000, Key: []byte("late")}
	bb.Add(extra)
	b3 := bb.Build()
	h, err := ValidateBatch(b3)
	if err != nil {
		t.Fatal(err)
	}
	if h.NumRecords != 11 || h.MaxTimestamp != extra.Timestamp || h.BaseTimestamp != recs[0].Timestamp {
		t.Fatalf("%+v", h)
	}

	// A timestamp before the first gives a negative delta.
	bb.Reset()
	early := []Record{{Timestamp: 100}, {Timestamp: -5}, {Timestamp: 50}}
	for _, r := range early {
		bb.Add(r)
	}
	h, err = ValidateBatch(bb.Build())
	if err != nil {
		t.Fatal(err)
	}
	if h.BaseTimestamp != 100 || h.MaxTimestamp != 100 {
		t.Fatalf("%+v", h)
	}
	got, err := collect(bb.Build())
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, got, early, 0)
}

func TestRecordIteratorBatches(t *testing.T) {
	recs := testRecords(30)
	b1 := buildBatch(recs[:10]...)
	b2 := buildBatch(recs[10:25]...)
	b3 := buildBatch(recs[25:]...)
	setBaseOffset(b1, 100)
	setBaseOffset(b2, 110)
	setBaseOffset(b3, 126) // offset 125 taken by the control batch
	control := rawBatch(1, 0, frame(rawBody(0, "\x00\x00\x00\x00", "\x00\x00\x00\x00\x00\x00", 0), 0))
	setBaseOffset(control, 125)
	control[offAttributes+1] |= attrControl | attrTransactional
	fixCRC(control)
	all := cat(b1, b2, control, b3)

	got, err := collect(all)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(recs)
	checkRecords(t, got[:25], want[:25], 100)
	checkRecords(t, got[25:], want[25:], 126)

	t.Run("trailing partial batch", func(t *testing.T) {
		for cut := 1; cut < len(b3); cut++ {
			got, err := collect(cat(b1, b2, b3[:cut]))
			if err != nil {
				t.Fatalf("cut %d: %v", cut, err)
			}
			if len(got) != 25 {
				t.Fatalf("cut %d: %d records", cut, len(got))
			}
		}
	})
	t.Run("compressed batch that does not decompress", func(t *testing.T) {
		z := rawBatch(2, 1, []byte("zstd frame"))
		z[offAttributes+1] |= byte(CompressionZstd)
		fixCRC(z)
		got, err := collect(cat(b1, z, b3))
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("err %v", err)
		}
		want := "zstd batch at position " + strconv.Itoa(len(b1)) + " does not decompress"
		if len(got) != 10 || !strings.Contains(err.Error(), want) {
			t.Fatalf("%d records, %v, want %q", len(got), err, want)
		}
	})
	t.Run("unknown codec", func(t *testing.T) {
		z := rawBatch(2, 1, []byte("?"))
		z[offAttributes+1] |= 6
		fixCRC(z)
		if _, err := collect(z); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("corrupt batch", func(t *testing.T) {
		bad := cat(b1, b2, b3)
		bad[len(b1)+len(b2)+BatchHeaderSize+3] ^= 1
		got, err := collect(bad)
		if !errors.Is(err, ErrCorrupt) || len(got) != 25 {
			t.Fatalf("%d records, %v", len(got), err)
		}
		want := "at position " + strconv.Itoa(len(b1)+len(b2))
		if !strings.HasSuffix(err.Error(), want) {
			t.Fatalf("error %q does not end with %q", err, want)
		}
	})
	t.Run("corrupt record framing", func(t *testing.T) {
		bad := rawBatch(2, 1, frame(rawBody(0, "k", "v", 0), 0), frame(rawBody(1, "k", "v", -1), 0))
		got, err := collect(cat(b1, bad))
		if !errors.Is(err, ErrCorrupt) || len(got) != 11 {
			t.Fatalf("%d records, %v", len(got), err)
		}
		if !strings.Contains(err.Error(), "header count -1") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("bytes after the last record", func(t *testing.T) {
		bad := rawBatch(1, 0, frame(rawBody(0, "k", "v", 0), 0), []byte{0, 0})
		got, err := collect(bad)
		if !errors.Is(err, ErrCorrupt) || len(got) != 1 {
			t.Fatalf("%d records, %v", len(got), err)
		}
	})
	t.Run("offset delta beyond last offset delta", func(t *testing.T) {
		bad := rawBatch(1, 0, frame(rawBody(1, "k", "v", 0), 0))
		if _, err := collect(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("cleaned batches", func(t *testing.T) {
		empty := rawBatch(0, 4)
		setBaseOffset(empty, 10)
		gaps := rawBatch(2, 5, frame(rawBody(1, "a", "1", 0), 0), frame(rawBody(5, "b", "2", 0), 0))
		setBaseOffset(gaps, 20)
		got, err := collect(cat(empty, gaps))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Offset != 21 || got[1].Offset != 25 || string(got[1].Key) != "b" {
			t.Fatalf("%+v", got)
		}
	})
	t.Run("log append time", func(t *testing.T) {
		b := buildBatch(recs[:5]...)
		b[offAttributes+1] |= attrLogAppendTime
		binary.BigEndian.PutUint64(b[offMaxTimestamp:], 42)
		fixCRC(b)
		got, err := collect(b)
		if err != nil || len(got) != 5 {
			t.Fatalf("%d records, %v", len(got), err)
		}
		for _, r := range got {
			if r.Timestamp != 42 {
				t.Fatalf("timestamp %d, want 42", r.Timestamp)
			}
		}
	})
	t.Run("empty input", func(t *testing.T) {
		it := NewRecordIterator(nil)
		if it.Next() || it.Err() != nil {
			t.Fatal("records in empty input")
		}
	})
}

func TestRecordIteratorAliasesInput(t *testing.T) {
	b := buildBatch(Record{Key: []byte("key"), Value: []byte("value"), Headers: []Header{{Key: "h", Value: []byte("v")}}})
	it := NewRecordIterator(b)
	if !it.Next() {
		t.Fatal(it.Err())
	}
	r := it.Record()
	r.Value[0] = 'V'
	if !bytes.Contains(b, []byte("Value")) {
		t.Fatal("Value does not alias the input")
	}
	if cap(r.Key) != len(r.Key) || cap(r.Value) != len(r.Value) {
		t.Fatal("capacity reaches past the field")
	}
}

func TestRecordIteratorAllocs(t *testing.T) {
	recs := testRecords(100)
	b := cat(buildBatch(recs[:50]...), buildBatch(recs[50:]...))
	it := NewRecordIterator(b)
	n := 0
	allocs := testing.AllocsPerRun(50, func() {
		it.reset(b)
		n = 0
		for it.Next() {
			n++
		}
	})
	if it.Err() != nil || n != 100 {
		t.Fatalf("%d records, %v", n, it.Err())
	}
	if allocs != 0 {
		t.Fatalf("iterating allocates %.1f times", allocs)
	}

	// A fresh iterator, measuring each Next after the first, on records that
	// all carry the same header keys.
	var bb BatchBuilder
	for i, r := range testRecords(100) {
		r.Headers = []Header{{Key: "trace-id", Value: []byte{byte(i)}}, {Key: "null"}}
		bb.Add(r)
	}
	it = NewRecordIterator(bb.Build())
	if !it.Next() {
		t.Fatal(it.Err())
	}
	n = 1
	// AllocsPerRun calls the function once more than runs: 1+1+98 = 100.
	allocs = testing.AllocsPerRun(98, func() {
		if it.Next() {
			n++
		}
	})
	if it.Err() != nil || n != 100 || it.Next() {
		t.Fatalf("%d records, %v", n, it.Err())
	}
	if allocs != 0 {
		t.Fatalf("Next after the first allocates %.2f times", allocs)
	}
}

func BenchmarkRecordIterator(b *testing.B) {
	batch := buildBatch(testRecords(100)...)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	it := NewRecordIterator(batch)
	for b.Loop() {
		it.reset(batch)
		for it.Next() {
		}
	}
}

// kmsgBatch encodes recs with franz-go's kmsg, an independent encoder: each
// record with kmsg.Record.AppendTo, the batch with kmsg.RecordBatch.AppendTo,
// and the CRC-32C computed here as Kafka does.
func kmsgBatch(t *testing.T, baseOffset int64, recs []Record) []byte {
	t.Helper()
	var records []byte
	maxTS := recs[0].Timestamp
	for i, r := range recs {
		kr := kmsg.Record{
			TimestampDelta64: r.Timestamp - recs[0].Timestamp,
			OffsetDelta:      int32(i),
			Key:              r.Key,
			Value:            r.Value,
		}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		// Length is everything after the length varint: encode once with
		// length 0 (one byte) to measure.
		kr.Length = int32(len(kr.AppendTo(nil)) - 1)
		records = kr.AppendTo(records)
		maxTS = max(maxTS, r.Timestamp)
	}
	kb := kmsg.RecordBatch{
		FirstOffset:          baseOffset,
		Length:               int32(49 + len(records)),
		PartitionLeaderEpoch: 7,
		Magic:                2,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       recs[0].Timestamp,
		MaxTimestamp:         maxTS,
		ProducerID:           42,
		ProducerEpoch:        3,
		FirstSequence:        1000,
		NumRecords:           int32(len(recs)),
		Records:              records,
	}
	b := kb.AppendTo(nil)
	kb.CRC = int32(crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return kb.AppendTo(nil)
}

func TestKmsgEncodedBatch(t *testing.T) {
	recs := testRecords(30)
	b := kmsgBatch(t, 900, recs)
	h, err := ValidateBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.BaseOffset != 900 || h.LeaderEpoch != 7 || h.ProducerID != 42 || h.ProducerEpoch != 3 ||
		h.BaseSequence != 1000 || h.NumRecords != 30 || h.LastOffsetDelta != 29 {
		t.Fatalf("%+v", h)
	}
	got, err := collect(b)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, got, recs, 900)
}

func TestBuilderDecodesWithKmsg(t *testing.T) {
	recs := testRecords(30)
	b := buildBatch(recs...)
	setBaseOffset(b, 77)

	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	maxTS := recs[0].Timestamp
	for _, r := range recs {
		maxTS = max(maxTS, r.Timestamp)
	}
	if kb.FirstOffset != 77 || int(kb.Length) != len(b)-12 || kb.PartitionLeaderEpoch != -1 ||
		kb.Magic != 2 || kb.Attributes != 0 || kb.LastOffsetDelta != 29 ||
		kb.FirstTimestamp != recs[0].Timestamp || kb.MaxTimestamp != maxTS ||
		kb.ProducerID != -1 || kb.ProducerEpoch != -1 || kb.FirstSequence != -1 || kb.NumRecords != 30 {
		t.Fatalf("%+v", kb)
	}
	if uint32(kb.CRC) != crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)) {
		t.Fatal("CRC differs from an independent CRC-32C")
	}
	if !bytes.Equal(kb.AppendTo(nil), b) {
		t.Fatal("kmsg re-encodes the batch differently")
	}

	rest := kb.Records
	for i, want := range recs {
		l, n := binary.Varint(rest)
		if n <= 0 || int(l)+n > len(rest) {
			t.Fatalf("record %d: bad length prefix", i)
		}
		var kr kmsg.Record
		if err := kr.ReadFrom(rest[:n+int(l)]); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		rest = rest[n+int(l):]
		if int(kr.OffsetDelta) != i || kb.FirstTimestamp+kr.TimestampDelta64 != want.Timestamp ||
			!sameBytes(kr.Key, want.Key) || !sameBytes(kr.Value, want.Value) || len(kr.Headers) != len(want.Headers) {
			t.Fatalf("record %d: %+v, want %+v", i, kr, want)
		}
		for j, h := range want.Headers {
			if kr.Headers[j].Key != h.Key || !sameBytes(kr.Headers[j].Value, h.Value) {
				t.Fatalf("record %d header %d: %+v, want %+v", i, j, kr.Headers[j], h)
			}
		}
		// kmsg re-encodes the record to the same bytes.
		if enc := kr.AppendTo(nil); len(enc) != n+int(l) {
			t.Fatalf("record %d: kmsg encodes %d bytes, builder %d", i, len(enc), n+int(l))
		}
	}
	if len(rest) != 0 {
		t.Fatalf("%d bytes after the records", len(rest))
	}
}
