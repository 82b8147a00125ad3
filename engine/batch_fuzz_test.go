package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzValidateBatch feeds arbitrary bytes to ValidateBatch, checkStoredBatch
// and RecordIterator: none may panic, and whatever ValidateBatch accepts,
// checkStoredBatch accepts with the same header, the iterator walks without
// error yielding exactly recordCount records (none for a control batch; for a
// compressed one, whose payload ValidateBatch does not inspect, either the
// records or an error wrapping ErrCorrupt or ErrBatchTooLarge), and kmsg
// decodes the same records.
//
// Random bytes rarely carry a right batch length and CRC, so each input is
// also checked with those two fields (and the magic) fixed up, which lets
// the fuzzer reach the record framing.
func FuzzValidateBatch(f *testing.F) {
	recs := testRecords(12)
	f.Add([]byte{})
	f.Add(make([]byte, BatchHeaderSize))
	f.Add(buildBatch(recs[0]))
	f.Add(buildBatch(recs[:5]...))
	f.Add(buildBatch(recs...))
	f.Add(buildBatch(Record{Key: nil, Value: nil, Headers: []Header{{Key: "k"}}}))
	f.Add(cat(buildBatch(recs[:3]...), buildBatch(recs[3:4]...)))
	compressed := rawBatch(3, 2, []byte("\x28\xb5\x2f\xfd not really zstd"))
	compressed[offAttributes+1] |= byte(CompressionZstd)
	f.Add(fixCRC(compressed))
	for _, c := range []Compression{CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd} {
		var bb BatchBuilder
		for _, r := range recs[:6] {
			bb.Add(r)
		}
		b, err := bb.BuildCompressed(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(bytes.Clone(b))
	}
	control := rawBatch(1, 0, frame(rawBody(0, "\x00\x00\x00\x00", "\x00\x00\x00\x00\x00\x00", 0), 0))
	control[offAttributes+1] |= attrControl | attrTransactional
	f.Add(fixCRC(control))
	f.Add(rawBatch(0, 4))

	f.Fuzz(func(t *testing.T, data []byte) {
		checkFuzzBatch(t, data)
		if len(data) >= BatchHeaderSize {
			fixed := bytes.Clone(data)
			binary.BigEndian.PutUint32(fixed[offBatchLength:], uint32(len(fixed)-batchLogOverhead))
			fixed[offMagic] = batchMagic
			checkFuzzBatch(t, fixCRC(fixed))
		}
	})
}

func checkFuzzBatch(t *testing.T, data []byte) {
	h, err := ValidateBatch(data)
	sh, serr := checkStoredBatch(data)
	if serr != nil && !errors.Is(serr, ErrCorrupt) && !errors.Is(serr, io.ErrUnexpectedEOF) {
		t.Fatalf("checkStoredBatch error wraps neither ErrCorrupt nor io.ErrUnexpectedEOF: %v", serr)
	}
	it := NewRecordIterator(data)
	var offsets []int64
	for it.Next() {
		offsets = append(offsets, it.Record().Offset)
	}
	itErr := it.Err()
	if itErr != nil && !errors.Is(itErr, ErrCorrupt) && !errors.Is(itErr, ErrBatchTooLarge) {
		t.Fatalf("iterator error wraps neither ErrCorrupt nor ErrBatchTooLarge: %v", itErr)
	}
	if err != nil {
		if !errors.Is(err, ErrInvalidBatch) {
			t.Fatalf("ValidateBatch error does not wrap ErrInvalidBatch: %v", err)
		}
		return
	}

	if serr != nil {
		t.Fatalf("ValidateBatch accepts, checkStoredBatch rejects: %v", serr)
	}
	if sh != h {
		t.Fatalf("headers differ: %+v, %+v", h, sh)
	}
	switch {
	case h.Control():
		if itErr != nil || len(offsets) != 0 {
			t.Fatalf("control batch: %d records, %v", len(offsets), itErr)
		}
		return
	case h.Compression() != CompressionNone:
		if itErr == nil && len(offsets) != int(h.NumRecords) {
			t.Fatalf("compressed batch: %d records, count %d", len(offsets), h.NumRecords)
		}
		return
	}
	if itErr != nil {
		t.Fatalf("ValidateBatch accepts, iterator fails: %v", itErr)
	}
	if len(offsets) != int(h.NumRecords) {
		t.Fatalf("iterator yields %d records, count %d", len(offsets), h.NumRecords)
	}
	for i, off := range offsets {
		if off != h.BaseOffset+int64(i) {
			t.Fatalf("record %d: offset %d, want %d", i, off, h.BaseOffset+int64(i))
		}
	}

	// kmsg, an independent decoder, reads the same records.
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(data); err != nil {
		t.Fatalf("kmsg rejects the batch: %v", err)
	}
	it = NewRecordIterator(data)
	rest := kb.Records
	for i := 0; it.Next(); i++ {
		l, n := binary.Varint(rest)
		if n <= 0 || l < 0 || int64(len(rest)-n) < l {
			t.Fatalf("record %d: bad length prefix for kmsg", i)
		}
		var kr kmsg.Record
		if err := kr.ReadFrom(rest[:n+int(l)]); err != nil {
			t.Fatalf("record %d: kmsg: %v", i, err)
		}
		rest = rest[n+int(l):]
		r := it.Record()
		ts := h.BaseTimestamp + kr.TimestampDelta64
		if h.LogAppendTime() {
			ts = h.MaxTimestamp
		}
		if h.BaseOffset+int64(kr.OffsetDelta) != r.Offset || ts != r.Timestamp ||
			!sameBytes(kr.Key, r.Key) || !sameBytes(kr.Value, r.Value) || len(kr.Headers) != len(r.Headers) {
			t.Fatalf("record %d: kmsg %+v, iterator %+v", i, kr, r)
		}
		for j, kh := range kr.Headers {
			if kh.Key != r.Headers[j].Key || !sameBytes(kh.Value, r.Headers[j].Value) {
				t.Fatalf("record %d header %d: kmsg %+v, iterator %+v", i, j, kh, r.Headers[j])
			}
		}
	}
	if len(rest) != 0 {
		t.Fatalf("kmsg: %d bytes after the records", len(rest))
	}
}
