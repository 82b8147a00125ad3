package engine

import (
	"bytes"
	"testing"
	"time"
)

// FuzzRecordsWellFormed checks the fast record walk against the detailed
// one on arbitrary records sections: for a batch of n records, fixed up
// (length, count, last offset delta, CRC) so that its header passes,
// recordsWellFormed accepts exactly what walkRecords accepts, and
// ValidateBatch returns walkRecords' error, message for message. It also
// checks quickRecord alone at every position of the section: whatever it
// accepts, scanRecord accepts with the same end and offset delta, so the
// fallback to scanRecord cannot hide a fast-tier mistake.
//
// Run it with a count budget and bounded minimization: Go 1.26's fuzzer can
// stall for minutes minimizing a new-coverage input (go.dev/issue/48820):
//
//	go test -run '^$' -fuzz '^FuzzRecordsWellFormed$' -fuzztime 2000000x -fuzzminimizetime 100x ./engine/
func FuzzRecordsWellFormed(f *testing.F) {
	section := func(b []byte) []byte { return bytes.Clone(b[BatchHeaderSize:]) }
	f.Add(section(buildBatch(testRecords(12)...)), uint16(12))
	f.Add(section(benchBatch(3, 100)), uint16(3))
	f.Add(section(benchBatch(2, 1024)), uint16(2))
	for _, recs := range slowPathRecords() {
		f.Add(section(buildBatch(recs...)), uint16(len(recs)))
	}
	f.Add(frame(rawBody(0, "k", "v", 1, cat(vi(1), []byte("h"), vi(-1))), 0), uint16(1))
	f.Add(cat(frame(rawBody(0, "<null>", "<null>", 0), 0), frame(rawBody(1, "", "", 0), 0)), uint16(2))
	f.Add(frame(cat([]byte{0}, vi(0, 0), []byte{0x80, 0x00}, vi(-1, 0)), 0), uint16(1)) // 2-byte key length 0
	f.Add(frame(cat([]byte{0}, vi(0, 0, -2), vi(1), []byte("v"), vi(0)), 0), uint16(1)) // key length -2
	f.Add(frame(rawBody(0, "k", "v", 0), 2), uint16(1))                                 // leftover
	f.Add(frame(rawBody(0, "k", "v", 0), -1), uint16(1))                                // truncated
	f.Add([]byte{0x80}, uint16(1))

	f.Fuzz(func(t *testing.T, recs []byte, count uint16) {
		if count == 0 {
			return // ValidateBatch rejects a count of 0 before any walk
		}
		n := int32(count)
		b := rawBatch(n, n-1, recs)
		fast := recordsWellFormed(b, n)
		detailed := walkRecords(b, n)
		if fast != (detailed == nil) {
			t.Fatalf("recordsWellFormed %v, walkRecords %v", fast, detailed)
		}
		_, err := ValidateBatch(b)
		if errString(err) != errString(detailed) {
			t.Fatalf("ValidateBatch: %v\nwalkRecords:  %v", err, detailed)
		}

		checkQuickRecordPositions(t, b)
	})
}

// checkQuickRecordPositions checks, at every position of the records section
// of b, that whatever quickRecord accepts,
// scanRecord accepts with the same end and offset delta.
func checkQuickRecordPositions(t *testing.T, b []byte) {
	t.Helper()
	for p := BatchHeaderSize; p <= len(b); p++ {
		var fr recordFrame
		var d defect
		scanned := p < len(b) && scanRecord(b, p, &fr, &d)
		for _, i := range []int32{0, 1, max(fr.offsetDelta, 0)} {
			next, ok := quickRecord(b, p, i)
			if ok && (!scanned || fr.offsetDelta != i || fr.end != next) {
				t.Fatalf("position %d, offset delta %d: quickRecord accepts up to %d; scanRecord %v (%v), end %d, offset delta %d",
					p, i, next, scanned, d, fr.end, fr.offsetDelta)
			}
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// slowPathRecords returns valid record sets with a record quickRecord leaves
// to scanRecord: one with a varint longer than 2 bytes.
func slowPathRecords() [][]Record {
	big := bytes.Repeat([]byte("x"), 10_000) // 3-byte value and record lengths
	return [][]Record{
		{{Timestamp: 1000, Value: big}, {Timestamp: 1000, Value: []byte("v")}},
		{{Timestamp: 1000}, {Timestamp: 1000 + int64(time.Hour/time.Millisecond)}}, // 3-byte timestamp delta
		{{Timestamp: 1000, Key: big}},
		{{Timestamp: 1000, Headers: []Header{{Key: string(big), Value: []byte("h")}}}},
		{{Timestamp: 1000, Headers: []Header{{Key: "h", Value: big}}}},
	}
}

// TestQuickRecordDecidesBuiltRecords checks that the fast tier decides, with
// no fallback to scanRecord, every record of batches shaped like the
// benchmarks' and of testRecords: the fallback is for rare records only.
func TestQuickRecordDecidesBuiltRecords(t *testing.T) {
	batches := map[string][]byte{
		"testRecords(200)": buildBatch(testRecords(200)...),
		"1000 x 100 B":     benchBatch(1000, 100),
		"100 x 1 KiB":      benchBatch(100, 1024),
		"10 x 8000 B":      benchBatch(10, 8000),
	}
	for name, b := range batches {
		h := parseHeader(b)
		p := BatchHeaderSize
		for i := range h.NumRecords {
			next, ok := quickRecord(b, p, i)
			if !ok {
				t.Fatalf("%s: record %d at position %d left to scanRecord", name, i, p)
			}
			p = next
		}
		if p != len(b) {
			t.Fatalf("%s: records end at %d, batch at %d", name, p, len(b))
		}
	}
}

// TestRecordsWellFormedFallback checks valid batches whose records the fast
// tier cannot decide: scanRecord decides them, and ValidateBatch accepts.
func TestRecordsWellFormedFallback(t *testing.T) {
	nonCanonical := rawBatch(2, 1,
		frame(cat([]byte{0}, vi(0, 0), []byte{0x80, 0x80, 0x00}, vi(-1, 0)), 0), // 3-byte key length 0
		frame(rawBody(1, "k", "v", 0), 0))
	cases := [][]byte{nonCanonical}
	for _, recs := range slowPathRecords() {
		cases = append(cases, buildBatch(recs...))
	}
	for k, b := range cases {
		h := parseHeader(b)
		undecided := false
		for i, p := int32(0), BatchHeaderSize; i < h.NumRecords && !undecided; i++ {
			var f recordFrame
			var d defect
			if !scanRecord(b, p, &f, &d) {
				t.Fatalf("case %d: record %d: %v", k, i, d)
			}
			_, ok := quickRecord(b, p, i)
			undecided = !ok
			p = f.end
		}
		if !undecided {
			t.Fatalf("case %d: quickRecord decides every record", k)
		}
		if !recordsWellFormed(b, h.NumRecords) {
			t.Fatalf("case %d: recordsWellFormed rejects: %v", k, walkRecords(b, h.NumRecords))
		}
		if _, err := ValidateBatch(b); err != nil {
			t.Fatalf("case %d: %v", k, err)
		}
	}
}
