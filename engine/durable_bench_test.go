package engine

// BenchmarkAppendDurable measures appends that return only once durable
// (flush.messages=1) and what group commit makes of the fsyncs behind them:
//
//	raw/files=1                     4 KiB append + fdatasync, one file: the
//	                                machine's durable-append rate, the baseline
//	raw/files=16                    the same on 16 files by 16 goroutines: how
//	                                far the device itself takes parallel syncs
//	partitions=P/appenders=A        A goroutines appending one-record batches
//	                                (100-byte value) to P logs of one Store,
//	                                round-robin over the logs; every log shares
//	                                the Store's syncer
//
// Each reports records/s (appends/s for raw), fsyncs/append (fdatasync and
// directory fsyncs counted by an errorFS that injects nothing, over the
// timed appends) and max-parallel-fsyncs (the most fsyncs seen in flight at
// once: above 1, the files of a round were synced in parallel).
// BENCHMARKS.md ("Durability") has the figures and the command.

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

func BenchmarkAppendDurable(b *testing.B) {
	for _, files := range []int{1, 16} {
		b.Run(fmt.Sprintf("raw/files=%d", files), func(b *testing.B) { benchRawDurable(b, files) })
	}
	for _, parts := range []int{1, 16} {
		for _, appenders := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("partitions=%d/appenders=%d", parts, appenders), func(b *testing.B) {
				benchAppendDurable(b, parts, appenders)
			})
		}
	}
}

// benchRawDurable appends 4 KiB and fdatasyncs, b.N times in all, spread
// over files files each written by its own goroutine.
func benchRawDurable(b *testing.B, files int) {
	dir := b.TempDir()
	block := make([]byte, 4<<10)
	for i := range block {
		block[i] = byte('a' + i%26)
	}
	fs := make([]*os.File, files)
	for i := range fs {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("raw-%d", i)), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		fs[i] = f
	}
	b.SetBytes(int64(len(block)))
	b.ReportAllocs()
	var next, inFlight, most atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, files)
	b.ResetTimer()
	for _, f := range fs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if _, err := f.Write(block); err != nil {
					errs <- err
					return
				}
				n := inFlight.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				err := unix.Fdatasync(int(f.Fd()))
				inFlight.Add(-1)
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	reportDurable(b, int64(b.N), most.Load())
}

// benchAppendDurable runs b.N appends of one-record batches by appenders
// goroutines over parts logs of a Store with flush.messages=1.
func benchAppendDurable(b *testing.B, parts, appenders int) {
	efs := newErrorFS(OSFS, nil)
	st, err := OpenStore(b.TempDir(), StoreOptions{Log: Options{FlushMessages: 1, FS: efs, Logger: discardLogger}})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	batch := testBatch(b, 1, 100, 1)
	logs := make([]*Log, parts)
	id := NewTopicID()
	for p := range logs {
		if logs[p], err = st.CreateLog(Partition{Topic: "durable", Partition: int32(p)}, id); err != nil {
			b.Fatal(err)
		}
		// The first append creates the segment's reservation and index
		// chunks: keep it out of the timing.
		if _, err := logs[p].Append(append([]byte(nil), batch...)); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, appenders)
	syncs := efs.syncs.Load()
	efs.maxSync.Store(0)
	b.ResetTimer()
	for range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := append([]byte(nil), batch...)
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				if _, err := logs[i%int64(parts)].Append(buf); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	reportDurable(b, efs.syncs.Load()-syncs, efs.maxSync.Load())
}

// reportDurable reports records/s, fsyncs per append (fsyncs in all over
// b.N appends) and the most fsyncs seen in flight at once.
func reportDurable(b *testing.B, fsyncs, inFlight int64) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "records/s")
	}
	b.ReportMetric(float64(fsyncs)/float64(b.N), "fsyncs/append")
	b.ReportMetric(float64(inFlight), "max-parallel-fsyncs")
}
