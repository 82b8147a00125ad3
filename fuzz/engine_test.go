package fuzz

// Fuzz targets of the storage engine:
//
//   - FuzzBatchValidate: arbitrary bytes never panic ValidateBatch; what it
//     accepts re-validates identically and its records iterate.
//   - FuzzRecover: arbitrary bytes as a segment file never panic OpenLog;
//     what recovery keeps validates batch by batch, and the log re-opens
//     to the same end offset and bytes.
//   - FuzzRecordIterator: arbitrary bytes (compressed payloads included)
//     never panic the record iterator, which either yields records or
//     stops with an error.
//
// Run each with
//
//	go test -run '^$' -fuzz FuzzBatchValidate -fuzztime 10m ./fuzz/

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-io/sluice/engine"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// seedBatches are valid batches of every codec.
func seedBatches(tb testing.TB) [][]byte {
	tb.Helper()
	var out [][]byte
	var b engine.BatchBuilder
	for i := range 5 {
		b.Add(engine.Record{Timestamp: int64(1000 + i), Key: []byte{byte('a' + i)}, Value: bytes.Repeat([]byte{byte(i)}, 10*i), Headers: []engine.Header{{Key: "h", Value: []byte("v")}}})
	}
	out = append(out, append([]byte(nil), b.Build()...))
	for _, c := range []engine.Compression{engine.CompressionGzip, engine.CompressionSnappy, engine.CompressionLZ4, engine.CompressionZstd} {
		cb, err := b.BuildCompressed(c)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, append([]byte(nil), cb...))
	}
	return out
}

func FuzzBatchValidate(f *testing.F) {
	for _, b := range seedBatches(f) {
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := engine.ValidateBatch(data)
		if err != nil {
			return
		}
		h2, err := engine.ValidateBatch(data)
		if err != nil || h2 != h {
			t.Fatalf("accepted batch re-validates differently: %+v vs %+v, %v", h, h2, err)
		}
		it := engine.NewRecordIterator(data)
		for it.Next() {
		}
		if h.Compression() == engine.CompressionNone && !h.Control() && it.Err() != nil {
			t.Fatalf("an accepted uncompressed batch does not iterate: %v", it.Err())
		}
	})
}

func FuzzRecover(f *testing.F) {
	batches := seedBatches(f)
	var log []byte
	for i, b := range batches {
		c := append([]byte(nil), b...)
		// Give each batch its offsets so the seed is a valid segment.
		putInt64(c, int64(i*5))
		log = append(log, c...)
	}
	f.Add(log)
	f.Add(log[:len(log)-7])
	f.Add(append(append([]byte(nil), log...), make([]byte, 300)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := filepath.Join(fastTempDir(t), "p-0")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "00000000000000000000.log"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		opts := engine.Options{Logger: quiet}
		l, err := engine.OpenLog(dir, opts)
		if err != nil {
			return // a clear error is allowed; a panic is not
		}
		end := l.EndOffset()
		var kept []byte
		for off := l.StartOffset(); off < end; {
			v, err := l.Read(off, 1<<20, end)
			if err != nil {
				t.Fatalf("read %d of a recovered log: %v", off, err)
			}
			b, err := v.AppendTo(nil)
			v.Release()
			if err != nil || len(b) == 0 {
				t.Fatalf("read %d: %d bytes, %v", off, len(b), err)
			}
			kept = append(kept, b...)
			var last int64
			for p := 0; p < len(b); {
				h, err := engine.ParseBatchHeader(b[p:])
				if err != nil || h.Size() > int64(len(b)-p) {
					t.Fatalf("recovered bytes at %d do not hold whole batches: %v", p, err)
				}
				last = h.LastOffset()
				p += int(h.Size())
			}
			off = last + 1
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l, err = engine.OpenLog(dir, opts)
		if err != nil {
			t.Fatalf("re-open of a recovered log: %v", err)
		}
		defer l.Close()
		if l.EndOffset() != end {
			t.Fatalf("re-open ends at %d, first open at %d", l.EndOffset(), end)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, "00000000000000000000.log")); !bytes.Equal(got, kept) && len(kept) > 0 {
			t.Fatalf("re-opened file holds %d bytes, recovery kept %d", len(got), len(kept))
		}
	})
}

func FuzzRecordIterator(f *testing.F) {
	for _, b := range seedBatches(f) {
		f.Add(b)
		f.Add(append(append([]byte(nil), b...), b...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		it := engine.NewRecordIterator(data)
		n := 0
		for it.Next() {
			r := it.Record()
			_ = r.Offset + r.Timestamp + int64(len(r.Key)+len(r.Value)+len(r.Headers))
			n++
		}
		_ = it.Err()
	})
}

func putInt64(b []byte, v int64) {
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
}

// fastTempDir is a temporary directory on tmpfs (/dev/shm) where there is
// one: every input opens, closes and re-opens a log, and on a disk the
// fsyncs of that, not the code under test, would set the pace.
func fastTempDir(t *testing.T) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "sluice-fuzz-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}
