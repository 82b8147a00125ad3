package engine

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

func TestParseControlBatch(t *testing.T) {
	for _, typ := range []ControlType{ControlAbort, ControlCommit} {
		b := AppendControlBatch(nil, 7, 3, typ, 12, 1000)
		h, err := ValidateBatch(b)
		if err != nil {
			t.Fatalf("%v marker: %v", typ, err)
		}
		if !h.Control() || !h.Transactional() || h.ProducerID != 7 || h.ProducerEpoch != 3 {
			t.Fatalf("%v marker header %+v", typ, h)
		}
		r, err := ParseControlBatch(b)
		if err != nil {
			t.Fatalf("%v marker: %v", typ, err)
		}
		if want := (ControlRecord{Type: typ, CoordinatorEpoch: 12}); r != want {
			t.Fatalf("%v marker parsed as %+v, want %+v", typ, r, want)
		}
	}
	if got := ControlType(4).String(); got != "UNKNOWN(4)" {
		t.Fatalf("type 4 is %q", got)
	}
}

// controlBatch builds a control batch with the given key and value.
func controlBatch(key, value []byte) []byte {
	var bb BatchBuilder
	bb.Add(Record{Key: key, Value: value})
	b := bb.Build()
	binary.BigEndian.PutUint16(b[offAttributes:], attrTransactional|attrControl)
	binary.BigEndian.PutUint64(b[offBaseOffset:], 42)
	binary.BigEndian.PutUint32(b[offCRC:], batchCRC(b))
	return b
}

func TestParseControlBatchNewerVersionsAndOtherTypes(t *testing.T) {
	r, err := ParseControlBatch(controlBatch([]byte{0, 1, 0, 1, 9}, []byte{0, 2, 0, 0, 0, 5, 9, 9}))
	if err != nil {
		t.Fatal(err)
	}
	if want := (ControlRecord{KeyVersion: 1, Type: ControlCommit, ValueVersion: 2, CoordinatorEpoch: 5}); r != want {
		t.Fatalf("parsed %+v, want %+v", r, want)
	}
	// A leader-change record (type 2) has a value of another shape.
	r, err = ParseControlBatch(controlBatch([]byte{0, 0, 0, 2}, []byte{1}))
	if err != nil || r.Type != 2 {
		t.Fatalf("type 2: %+v, %v", r, err)
	}
}

func TestParseControlBatchErrors(t *testing.T) {
	data := func() []byte { return AppendControlBatch(nil, 1, 0, ControlAbort, 0, 0) }
	notControl := data()
	binary.BigEndian.PutUint16(notControl[offAttributes:], attrTransactional)
	compressed := data()
	binary.BigEndian.PutUint16(compressed[offAttributes:], attrTransactional|attrControl|uint16(CompressionGzip))
	for name, c := range map[string]struct {
		b    []byte
		want string
	}{
		"short":          {data()[:30], "shorter than the 61-byte header"},
		"not control":    {notControl, "position 21: attributes 0x10 have no control bit"},
		"compressed":     {compressed, "position 21: compressed with gzip"},
		"short key":      {controlBatch([]byte{0, 0, 0}, []byte{0, 0, 0, 0, 0, 0}), "offset 42, position 66: control record key of 3 bytes, want 4"},
		"null key":       {controlBatch(nil, []byte{0, 0, 0, 0, 0, 0}), "position 61: control record key of 0 bytes"},
		"key version":    {controlBatch([]byte{0xff, 0xff, 0, 0}, []byte{0, 0, 0, 0, 0, 0}), "offset 42, position 66: control record key version -1"},
		"short value":    {controlBatch([]byte{0, 0, 0, 1}, []byte{0, 0, 0, 0, 0}), "COMMIT marker value of 5 bytes, want 6"},
		"value version":  {controlBatch([]byte{0, 0, 0, 0}, []byte{0x80, 0, 0, 0, 0, 0}), "position 71: ABORT marker value version -32768"},
		"truncated body": {data()[:BatchHeaderSize+3], "control record"},
	} {
		_, err := ParseControlBatch(c.b)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrCorrupt with %q", name, err, c.want)
		}
	}
}

func TestParseControlBatchAllocs(t *testing.T) {
	b := AppendControlBatch(nil, 7, 3, ControlCommit, 12, 1000)
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseControlBatch(b) }); n != 0 {
		t.Fatalf("%v allocations per parse", n)
	}
}
