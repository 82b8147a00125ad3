package engine

// Benchmarks of the engine, each beside a raw baseline measured in the same
// run where there is one, so that figures read as ratios on a noisy machine.
// BENCHMARKS.md at the repository root holds the published figures and the
// commands that reproduce them.
//
//	BenchmarkAppend       Log.Append of one batch, by batch shape
//	BenchmarkRawWrite     the same bytes with plain write(2): the baseline
//	BenchmarkAppendVsRaw  both in alternating chunks: the engine/raw ratio
//	BenchmarkLookup       Log.Read of one batch at a random offset, by segment count
//	BenchmarkRead         1 MiB views to a loopback TCP socket: sendfile vs a 64 KiB copy
//	BenchmarkRecover      OpenLog after an unclean stop: the full recovery scan
//
// Every benchmark reports records/s besides ns/op, MB/s and allocations.

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// benchLogger drops the engine's log output (index rebuilds of fabricated
// segments would otherwise print one line per segment).
var benchLogger = slog.New(slog.DiscardHandler)

// benchBatch builds one uncompressed batch of n records, each with a null
// key and a value of valueSize bytes, as a producer would send it.
func benchBatch(n, valueSize int) []byte {
	var bb BatchBuilder
	value := make([]byte, valueSize)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	ts := time.Now().UnixMilli()
	for range n {
		bb.Add(Record{Timestamp: ts, Value: value})
	}
	return append([]byte(nil), bb.Build()...)
}

func benchSizeName(n int) string {
	if n%1024 == 0 {
		return fmt.Sprintf("%dKiB", n/1024)
	}
	return fmt.Sprintf("%dB", n)
}

// reportRecords reports records/s for a benchmark that handled records
// records per op.
func reportRecords(b *testing.B, records int) {
	if s := b.Elapsed().Seconds(); s > 0 && b.N > 0 {
		b.ReportMetric(float64(b.N)*float64(records)/s, "records/s")
	}
}

// appendSizes are the batch shapes of BenchmarkAppend and BenchmarkRawWrite.
var appendSizes = []struct{ records, value int }{
	{1, 100}, {10, 100}, {100, 100}, {1000, 100},
	{1, 1024}, {10, 1024}, {100, 1024}, {1000, 1024},
}

// BenchmarkAppend appends the same batch over and over to a log with the
// default options (1 GiB segments: rolls, with their background flush, are
// part of the cost).
func BenchmarkAppend(b *testing.B) {
	for _, sz := range appendSizes {
		b.Run(benchAppendName(sz.records, sz.value), func(b *testing.B) { benchAppendEngine(b, sz.records, sz.value) })
	}
}

// BenchmarkRawWrite is the baseline of BenchmarkAppend: the same batches
// written with os.File.Write (write(2)) to a plain file. Compare the two
// with benchstat -col .name.
func BenchmarkRawWrite(b *testing.B) {
	for _, sz := range appendSizes {
		b.Run(benchAppendName(sz.records, sz.value), func(b *testing.B) { benchAppendRaw(b, sz.records, sz.value) })
	}
}

// BenchmarkAppendVsRaw measures the ratio of BenchmarkAppend to
// BenchmarkRawWrite so that noise hits both alike: an op is one Log.Append
// and one write(2) of the same bytes, run in alternating chunks of about
// 256 KiB each (the order swapped every chunk) and timed separately. It
// reports engine-ns/op and raw-ns/op, and engine/raw, the engine's
// throughput as a fraction of the raw write's (raw time / engine time).
// records/s counts the engine's records over the engine's time.
func BenchmarkAppendVsRaw(b *testing.B) {
	for _, sz := range appendSizes {
		b.Run(benchAppendName(sz.records, sz.value), func(b *testing.B) { benchAppendVsRaw(b, sz.records, sz.value) })
	}
}

func benchAppendName(records, value int) string {
	return fmt.Sprintf("records=%d/value=%s", records, benchSizeName(value))
}

func benchAppendEngine(b *testing.B, records, value int) {
	batch := benchBatch(records, value)
	l, err := OpenLog(b.TempDir(), Options{Logger: benchLogger})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			b.Error(err)
		}
	}()
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		// Append rewrites the base offset and leader epoch in place, both
		// outside the CRC: the same slice is a valid batch every time.
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
	reportRecords(b, records)
}

func benchAppendRaw(b *testing.B, records, value int) {
	batch := benchBatch(records, value)
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "raw"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Write(batch); err != nil {
			b.Fatal(err)
		}
	}
	reportRecords(b, records)
}

func benchAppendVsRaw(b *testing.B, records, value int) {
	batch := benchBatch(records, value)
	raw := append([]byte(nil), batch...)
	dir := b.TempDir()
	l, err := OpenLog(filepath.Join(dir, "log"), Options{Logger: benchLogger})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			b.Error(err)
		}
	}()
	f, err := os.OpenFile(filepath.Join(dir, "raw"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	engine := func(k int) time.Duration {
		t := time.Now()
		for range k {
			if _, err := l.Append(batch); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(t)
	}
	plain := func(k int) time.Duration {
		t := time.Now()
		for range k {
			if _, err := f.Write(raw); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(t)
	}
	chunk := max(1, (256<<10)/len(batch))
	var te, tr time.Duration
	b.SetBytes(2 * int64(len(batch))) // an op writes the batch twice, once each way
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += chunk {
		k := min(chunk, b.N-i)
		if (i/chunk)%2 == 0 {
			te += engine(k)
			tr += plain(k)
		} else {
			tr += plain(k)
			te += engine(k)
		}
	}
	b.StopTimer()
	if b.N > 0 && te > 0 {
		b.ReportMetric(float64(te.Nanoseconds())/float64(b.N), "engine-ns/op")
		b.ReportMetric(float64(tr.Nanoseconds())/float64(b.N), "raw-ns/op")
		b.ReportMetric(float64(tr)/float64(te), "engine/raw")
		b.ReportMetric(float64(b.N)*float64(records)/te.Seconds(), "records/s")
	}
}

// Lookup fixtures: every log holds the same lookupTotalBatches batches of
// lookupRecs records of 20-byte values (about 360 bytes each, 230 MB in
// all), cut into 1, 100 or 10,000 segments, so that only the number of
// segments changes between them (10,000 segments hold 64 batches, about
// 23 KiB and five index entries, each).
const (
	lookupTotalBatches = 640_000
	lookupRecs         = 10
	lookupOffsets      = 1 << 14 // random offsets drawn before timing
)

// BenchmarkLookup times Log.Read of one batch (maxBytes 1) at a random
// offset, then Release: finding the segment, the index entry and the batch.
// With open=20000 every segment stays open (the file cache bound is above
// the segment count) and the figure is the lookup alone; open=1000 on
// 10,000 segments adds the file cache's opening and closing of segments, for
// information; segments=10000/open=20000/parallel runs lookups on every
// CPU at once, all through the Store's one file cache. MB/s counts the bytes
// of the batches found.
//
// segments=10000vs1 measures the goal's ratio so that noise hits both
// alike: an op is one lookup in the 10,000-segment log and one in the
// 1-segment log, run in alternating chunks of 256 and timed separately; it
// reports 1seg-ns/op, 10kseg-ns/op and their ratio 10k/1.
func BenchmarkLookup(b *testing.B) {
	root, err := os.MkdirTemp("", "sluice-bench-lookup-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(root) })
	fixtures := map[[2]int]benchLookupLog{}
	b.Cleanup(func() { // runs before the removal above
		for _, f := range fixtures {
			f.l.Close()
		}
	})
	fixture := func(b *testing.B, segs, open int) benchLookupLog {
		f, ok := fixtures[[2]int{segs, open}]
		if !ok {
			f = benchLookupFixture(b, filepath.Join(root, fmt.Sprintf("lookup-%d-%d", segs, open)), segs, open)
			fixtures[[2]int{segs, open}] = f
		}
		return f
	}
	// The same offsets for every log: they all hold the same records.
	rng := rand.New(rand.NewPCG(1, 2))
	offsets := make([]int64, lookupOffsets)
	for i := range offsets {
		offsets[i] = rng.Int64N(lookupTotalBatches * lookupRecs)
	}
	for _, c := range []struct{ segs, open int }{{1, 20000}, {100, 20000}, {10000, 20000}, {10000, 1000}} {
		b.Run(fmt.Sprintf("segments=%d/open=%d", c.segs, c.open), func(b *testing.B) {
			f := fixture(b, c.segs, c.open)
			b.SetBytes(f.batchBytes)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				benchReadOne(b, f.l, offsets[i&(lookupOffsets-1)], f.end)
				i++
			}
			reportRecords(b, 1) // one lookup an op: records/s counts lookups
		})
	}
	// Readers on every CPU share the Store's file cache, as a broker's fetch
	// handlers do: what the cache's lock costs under contention.
	b.Run("segments=10000/open=20000/parallel", func(b *testing.B) {
		f := fixture(b, 10000, 20000)
		b.SetBytes(f.batchBytes)
		b.ReportAllocs()
		var seed atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			i := int(seed.Add(lookupOffsets / 64))
			for pb.Next() {
				off := offsets[i&(lookupOffsets-1)]
				v, err := f.l.Read(off, 1, f.end)
				if err != nil || v.Len() == 0 {
					b.Errorf("Read(%d): %d bytes, %v", off, v.Len(), err)
					return
				}
				v.Release()
				i++
			}
		})
		reportRecords(b, 1)
	})
	b.Run("segments=10000vs1/open=20000", func(b *testing.B) {
		one, many := fixture(b, 1, 20000), fixture(b, 10000, 20000)
		lookups := func(f benchLookupLog, from, k int) time.Duration {
			t := time.Now()
			for j := range k {
				benchReadOne(b, f.l, offsets[(from+j)&(lookupOffsets-1)], f.end)
			}
			return time.Since(t)
		}
		const chunk = 256
		var t1, tk time.Duration
		b.SetBytes(2 * one.batchBytes) // two lookups an op
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i += chunk {
			k := min(chunk, b.N-i)
			if (i/chunk)%2 == 0 {
				t1 += lookups(one, i, k)
				tk += lookups(many, i, k)
			} else {
				tk += lookups(many, i, k)
				t1 += lookups(one, i, k)
			}
		}
		b.StopTimer()
		if b.N > 0 && t1 > 0 {
			b.ReportMetric(float64(t1.Nanoseconds())/float64(b.N), "1seg-ns/op")
			b.ReportMetric(float64(tk.Nanoseconds())/float64(b.N), "10kseg-ns/op")
			b.ReportMetric(float64(tk)/float64(t1), "10k/1")
			reportRecords(b, 2)
		}
	})
}

// benchLookupLog is a lookup fixture: an open log, its end offset and the
// size of its batches.
type benchLookupLog struct {
	l          *Log
	end        int64
	batchBytes int64
}

// benchLookupFixture fabricates the lookup log in dir, cut into segs
// segments, opens it and reads every segment once.
func benchLookupFixture(b *testing.B, dir string, segs, open int) (f benchLookupLog) {
	perSeg := lookupTotalBatches / segs
	f.end = writeSegments(b, dir, segs, perSeg, lookupRecs, true)
	l, err := OpenLog(dir, Options{OpenSegments: open, Logger: benchLogger})
	if err != nil {
		b.Fatal(err)
	}
	f.l = l
	// Open every segment once: the first open of a fabricated segment
	// builds its index files.
	for off := int64(0); off < f.end; off += int64(perSeg * lookupRecs) {
		f.batchBytes = benchReadOne(b, l, off, f.end)
	}
	return f
}

// benchReadOne reads the batch holding off, releases it and returns its
// size.
func benchReadOne(b *testing.B, l *Log, off, end int64) int64 {
	v, err := l.Read(off, 1, end)
	if err != nil {
		b.Fatal(err)
	}
	n := v.Len()
	if n == 0 {
		b.Fatalf("Read(%d) returned nothing", off)
	}
	v.Release()
	return n
}

// Read fixture: readLogBytes of batches of readRecs records of readValue
// bytes (about 16 KiB each), read back 1 MiB at a time.
const (
	readLogBytes = 64 << 20
	readRecs     = 16
	readValue    = 1000
	readMaxBytes = 1 << 20
)

// BenchmarkRead sends 1 MiB views of a log (hot in the page cache) to a
// loopback TCP connection whose other end a goroutine drains and discards.
// path=sendfile passes the *net.TCPConn to View.WriteTo (sendfile(2));
// path=copy hides its syscall.Conn, so WriteTo copies through its 64 KiB
// buffer (pread + write). Besides MB/s it reports the CPU time of the whole
// process (user + system, from getrusage; the receiving goroutine is included
// and costs the same on both paths) per 10^9 bytes sent, as cpu-ms/GB.
//
// path=sendfile-vs-copy runs both on one connection in alternating chunks of
// 16 reads, timed and charged CPU separately, so that noise hits both alike:
// an op is one read each way, and it reports each path's MB/s and cpu-ms/GB
// and sendfile/copy, the ratio of their throughputs.
func BenchmarkRead(b *testing.B) {
	dir, err := os.MkdirTemp("", "sluice-bench-read-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	var fx *benchReadLog
	b.Cleanup(func() { // runs before the removal above
		if fx != nil {
			fx.l.Close()
		}
	})
	fixture := func(b *testing.B) *benchReadLog {
		if fx == nil {
			fx = benchReadFixture(b, dir)
		}
		return fx
	}
	for _, path := range []string{"sendfile", "copy"} {
		b.Run("path="+path, func(b *testing.B) {
			f := fixture(b)
			conn, drained := benchLoopback(b)
			var w io.Writer = conn
			if path == "copy" {
				w = struct{ io.Writer }{conn} // no syscall.Conn: WriteTo copies
			}
			b.SetBytes(f.nbytes)
			b.ReportAllocs()
			before := benchCPU(b)
			off := int64(0)
			for b.Loop() {
				off = f.send(b, w, off)
			}
			cpu := benchCPU(b) - before
			conn.Close()
			if err := <-drained; err != nil {
				b.Fatal(err)
			}
			reportRecords(b, int(f.step))
			b.ReportMetric(cpu.Seconds()*1e3/(float64(b.N)*float64(f.nbytes)/1e9), "cpu-ms/GB")
		})
	}
	b.Run("path=sendfile-vs-copy", func(b *testing.B) {
		f := fixture(b)
		conn, drained := benchLoopback(b)
		plain := struct{ io.Writer }{conn}
		const chunk = 16
		var tSend, tCopy, cpuSend, cpuCopy time.Duration
		off := int64(0)
		run := func(w io.Writer, k int, t, cpu *time.Duration) {
			c0, t0 := benchCPU(b), time.Now()
			for range k {
				off = f.send(b, w, off)
			}
			*t += time.Since(t0)
			*cpu += benchCPU(b) - c0
		}
		b.SetBytes(2 * f.nbytes) // one read each way
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i += chunk {
			k := min(chunk, b.N-i)
			if (i/chunk)%2 == 0 {
				run(conn, k, &tSend, &cpuSend)
				run(plain, k, &tCopy, &cpuCopy)
			} else {
				run(plain, k, &tCopy, &cpuCopy)
				run(conn, k, &tSend, &cpuSend)
			}
		}
		b.StopTimer()
		conn.Close()
		if err := <-drained; err != nil {
			b.Fatal(err)
		}
		if b.N > 0 && tSend > 0 && tCopy > 0 {
			bytes := float64(b.N) * float64(f.nbytes)
			b.ReportMetric(bytes/1e6/tSend.Seconds(), "sendfile-MB/s")
			b.ReportMetric(bytes/1e6/tCopy.Seconds(), "copy-MB/s")
			b.ReportMetric(cpuSend.Seconds()*1e3/(bytes/1e9), "sendfile-cpu-ms/GB")
			b.ReportMetric(cpuCopy.Seconds()*1e3/(bytes/1e9), "copy-cpu-ms/GB")
			b.ReportMetric(float64(tCopy)/float64(tSend), "sendfile/copy")
			reportRecords(b, 2*int(f.step))
		}
	})
}

// benchReadLog is the read fixture: a log, its end offset, the offsets a
// 1 MiB read covers (step) and its bytes.
type benchReadLog struct {
	l                 *Log
	end, step, nbytes int64
}

// send writes the 1 MiB view at off to w and returns the offset of the next
// one, wrapping to 0 at the end of the log.
func (f *benchReadLog) send(b *testing.B, w io.Writer, off int64) int64 {
	v, err := f.l.Read(off, readMaxBytes, f.end)
	if err != nil {
		b.Fatal(err)
	}
	n, err := v.WriteTo(w)
	v.Release()
	if err != nil || n != f.nbytes {
		b.Fatalf("WriteTo at offset %d: %d bytes, want %d: %v", off, n, f.nbytes, err)
	}
	if off += f.step; off+f.step > f.end {
		off = 0
	}
	return off
}

// benchReadFixture appends readLogBytes to a fresh log in dir.
func benchReadFixture(b *testing.B, dir string) *benchReadLog {
	l, err := OpenLog(dir, Options{Logger: benchLogger})
	if err != nil {
		b.Fatal(err)
	}
	batch := benchBatch(readRecs, readValue)
	for written := 0; written < readLogBytes; written += len(batch) {
		if _, err := l.Append(batch); err != nil {
			l.Close()
			b.Fatal(err)
		}
	}
	f := &benchReadLog{l: l, end: l.EndOffset()}
	v, err := l.Read(0, readMaxBytes, f.end)
	if err != nil {
		l.Close()
		b.Fatal(err)
	}
	f.nbytes = v.Len()
	v.Release()
	if f.nbytes%int64(len(batch)) != 0 || f.nbytes > readMaxBytes {
		l.Close()
		b.Fatalf("a 1 MiB read returned %d bytes, not whole %d-byte batches", f.nbytes, len(batch))
	}
	f.step = f.nbytes / int64(len(batch)) * readRecs
	return f
}

// benchLoopback connects to a loopback TCP listener whose accepted end a
// goroutine reads and discards until EOF; drained then yields its error.
func benchLoopback(b *testing.B) (*net.TCPConn, <-chan error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	drained := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			drained <- err
			return
		}
		defer c.Close()
		buf := make([]byte, 1<<20)
		for {
			if _, err := c.Read(buf); err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				drained <- err
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	return c.(*net.TCPConn), drained
}

// benchCPU is the process's user + system CPU time so far.
func benchCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Recover fixture: recoverSegments segments of equal numbers of batches
// of 100 records of 20-byte values (about 3 KiB each), 256 MiB in all.
const (
	recoverSegments = 4
	recoverRecs     = 100
)

// BenchmarkRecover times OpenLog of a 256 MiB log after an unclean stop: no
// clean-shutdown marker and no recovery point, so every batch of every
// segment is read and checked (length, magic, CRC, offsets) and the indexes
// are rebuilt. The log's files are in the page cache after the first round,
// so the figure is the scan's CPU cost, not the disk's. MB/s counts the
// log's bytes.
func BenchmarkRecover(b *testing.B) {
	root, err := os.MkdirTemp("", "sluice-bench-recover-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(root) })
	const totalBytes = 256 << 20
	b.Run("size=256MiB", func(b *testing.B) {
		dir := filepath.Join(root, "p-0")
		batchSize := int64(len(benchRecoverBatch(b)))
		perSeg := int(totalBytes / recoverSegments / batchSize)
		var end int64
		if _, err := os.Stat(dir); err != nil {
			end = writeSegments(b, dir, recoverSegments, perSeg, recoverRecs, false)
		} else {
			end = int64(recoverSegments * perSeg * recoverRecs)
		}
		size := int64(recoverSegments*perSeg) * batchSize
		b.SetBytes(size)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			l, err := OpenLog(dir, Options{Logger: benchLogger})
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			if l.EndOffset() != end || l.Size() != size {
				l.Close()
				b.Fatalf("recovered %d offsets and %d bytes, want %d and %d", l.EndOffset(), l.Size(), end, size)
			}
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
			// Undo the clean stop: the next open scans everything again.
			for _, name := range []string{cleanShutdownFile, recoveryPointFile} {
				if err := os.Remove(filepath.Join(dir, name)); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
		}
		b.StopTimer()
		reportRecords(b, int(end))
	})
}

// benchRecoverBatch is the batch writeSegments writes for BenchmarkRecover.
func benchRecoverBatch(b *testing.B) []byte {
	return testBatch(b, recoverRecs, 20, 1000)
}
