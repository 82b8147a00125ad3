package engine

import (
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
)

// openLogs counts the log's segments whose log descriptor is open (the
// active segment's included), and how many of those the file cache tracks.
// Every open one must be tracked (an untracked one would never be closed)
// once no reader holds any.
func openLogs(l *Log) (open, tracked int) {
	l.view.Load().tree.Ascend(func(e segEntry) bool {
		s := e.seg
		l.cache.mu.Lock()
		s.mu.Lock()
		if s.mu.files != nil && s.mu.files.log != nil {
			open++
			if s.cacheElem != nil {
				tracked++
			}
		}
		s.mu.Unlock()
		l.cache.mu.Unlock()
		return true
	})
	return open, tracked
}

// The bound holds after every read whatever the pattern: a hot set read
// over and over mixed with scans of every segment, and every open inactive
// segment is tracked by the cache.
func TestFileCacheBound(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p-0")
	const segs, perSeg, recs, limit = 200, 2, 3, 16
	end := writeSegments(t, dir, segs, perSeg, recs, true)
	l := mustOpen(t, dir, Options{OpenSegments: limit})
	defer l.Close()
	perSegOffsets := int64(perSeg * recs)
	rng := rand.New(rand.NewPCG(3, 4))
	read := func(off int64) {
		t.Helper()
		v, err := l.Read(off, 1, end)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		h, err := checkStoredBatch(viewBytes(t, &v))
		v.Release()
		if err != nil || off < h.BaseOffset || off > h.LastOffset() {
			t.Fatalf("Read(%d) returned batch [%d, %d]: %v", off, h.BaseOffset, h.LastOffset(), err)
		}
		if open, tracked := openLogs(l); open > limit || tracked != open {
			t.Fatalf("after Read(%d): %d segments open, %d tracked, limit %d", off, open, tracked, limit)
		}
	}
	for round := range 5 {
		for s := range int64(segs) {
			read(s*perSegOffsets + int64(round)) // the scan
			for range 3 {
				read(rng.Int64N(limit/2) * perSegOffsets) // the hot set, half the bound
			}
		}
	}
	if n := l.cache.openCount(); n > limit {
		t.Fatalf("cache tracks %d segments, limit %d", n, limit)
	}
}

// No segment a reader holds is closed: readers hold views on several
// segments at once while others' reads push the cache far past its bound,
// and every held view still reads its batch (a closed file fails the read;
// a reused descriptor returns another segment's batch).
func TestFileCacheKeepsHeldSegments(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p-0")
	const segs, perSeg, recs, limit = 100, 2, 3, 4
	end := writeSegments(t, dir, segs, perSeg, recs, true)
	l := mustOpen(t, dir, Options{OpenSegments: limit})
	defer l.Close()
	const readers, held = 4, 3
	rounds := 300
	if testing.Short() {
		rounds = 100
	}
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 5))
			var views [held]View
			var offs [held]int64
			for range rounds {
				for i := range views {
					offs[i] = rng.Int64N(end)
					v, err := l.Read(offs[i], 1, end)
					if err != nil {
						errs <- err
						return
					}
					views[i] = v
				}
				for i := range views {
					b, err := views[i].AppendTo(nil)
					views[i].Release()
					if err != nil {
						errs <- err
						return
					}
					h, err := checkStoredBatch(b)
					if err != nil || offs[i] < h.BaseOffset || offs[i] > h.LastOffset() {
						t.Errorf("held view of offset %d read batch [%d, %d]: %v", offs[i], h.BaseOffset, h.LastOffset(), err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if open, tracked := openLogs(l); open > limit || tracked != open {
		t.Fatalf("%d segments open, %d tracked, limit %d", open, tracked, limit)
	}
}
