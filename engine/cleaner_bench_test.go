package engine

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkCleaner measures one cleaning pass over a dirty log of the given
// size (1 KiB records, 50,000 keys cycling, 64 MiB segments, in the test's
// temporary directory, on disk): MB/s is the log's size over the whole
// pass (building the offset map, then reading, filtering and rewriting
// every segment, fsyncs and swaps included). Each op cleans a new copy of
// the dirty log, built outside the timer.
//
//	go test ./engine -run '^$' -bench BenchmarkCleaner -benchtime 5x
func BenchmarkCleaner(b *testing.B) {
	for _, size := range []int64{64 << 20, 256 << 20} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			clock := &fakeClock{t: time.UnixMilli(1_700_000_000_000)}
			opts := compactOpts(clock)
			opts.SegmentBytes, opts.IndexIntervalBytes = 64<<20, 4096
			c := NewCleaner(CleanerOptions{})
			b.SetBytes(size)
			b.ReportAllocs()
			for range b.N {
				b.StopTimer()
				l := mustOpen(b, b.TempDir(), opts)
				fillKeyed(b, l, size, 50_000, 1000, clock.t.UnixMilli())
				settle(b, l)
				b.StartTimer()
				mustClean(b, c, l)
				b.StopTimer()
				l.Close()
				b.StartTimer()
			}
		})
	}
}

// BenchmarkAppendWhileCleaning appends 16 KiB batches (16 records of 1 KiB)
// to one log, with no cleaner running ("idle") and while a cleaner cleans
// another log of 128 MiB of distinct keys pass after pass ("cleaning":
// every pass reads and rewrites it all). Compare the two MB/s figures;
// cleaner-MB/s is what the cleaner read meanwhile.
//
//	go test ./engine -run '^$' -bench BenchmarkAppendWhileCleaning -benchtime 3s
func BenchmarkAppendWhileCleaning(b *testing.B) {
	for _, busy := range []bool{false, true} {
		name := "idle"
		if busy {
			name = "cleaning"
		}
		b.Run(name, func(b *testing.B) {
			clock := &fakeClock{t: time.UnixMilli(1_700_000_000_000)}
			opts := compactOpts(clock)
			opts.SegmentBytes, opts.IndexIntervalBytes = 64<<20, 4096
			var stop atomic.Bool
			var read atomic.Int64
			var wg sync.WaitGroup
			if busy {
				other := mustOpen(b, b.TempDir(), opts)
				defer other.Close()
				fillKeyed(b, other, 128<<20, 1<<30, 1000, clock.t.UnixMilli())
				settle(b, other)
				c := NewCleaner(CleanerOptions{})
				wg.Add(1)
				go func() {
					defer wg.Done()
					for !stop.Load() {
						st, err := c.Clean(other)
						if err != nil {
							b.Error(err)
							return
						}
						read.Add(st.BytesRead + st.MapBytesRead)
						other.clean.cp.set(other.name, 0) // dirty again: the next pass redoes it all
					}
				}()
			}
			l := mustOpen(b, b.TempDir(), opts)
			defer l.Close()
			batch := benchBatch(16, 1024)
			b.SetBytes(int64(len(batch)))
			for b.Loop() {
				if _, err := l.Append(batch); err != nil {
					b.Fatal(err)
				}
			}
			if busy {
				b.ReportMetric(float64(read.Load())/b.Elapsed().Seconds()/1e6, "cleaner-MB/s")
			}
			stop.Store(true)
			wg.Wait()
		})
	}
}
