package engine

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(tb testing.TB, what string, d time.Duration, cond func() bool) {
	tb.Helper()
	deadline := time.After(d)
	for !cond() {
		select {
		case <-deadline:
			tb.Fatalf("timed out after %v waiting for %s", d, what)
		case <-time.After(time.Millisecond):
		}
	}
}

// A lowered segment.bytes rolls the active segment at the next append.
func TestSetOptionsSegmentBytesRollsNextAppend(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{})
	defer l.Close()
	for range 3 {
		if _, err := l.Append(testBatch(t, 5, 100, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if n := l.segmentCount(); n != 1 {
		t.Fatalf("%d segments before the change, want 1", n)
	}
	o := l.Options()
	o.SegmentBytes = 100
	if err := l.SetOptions(o); err != nil {
		t.Fatal(err)
	}
	if got := l.Options().SegmentBytes; got != 100 {
		t.Fatalf("SegmentBytes %d after SetOptions, want 100", got)
	}
	res, err := l.Append(testBatch(t, 5, 100, 1))
	if err != nil {
		t.Fatal(err)
	}
	if bases := l.SegmentBases(); len(bases) != 2 || bases[1] != res.FirstOffset {
		t.Fatalf("segments %v after the append, want a roll at %d", bases, res.FirstOffset)
	}
	checkSequence(t, readAll(t, l, 0, 1<<20), 0, 20)
}

// A lowered retention.ms deletes old segments at the next retention pass.
func TestSetOptionsRetention(t *testing.T) {
	clock := &fakeClock{t: time.UnixMilli(1_700_000_000_000)}
	l := mustOpen(t, t.TempDir(), Options{SegmentBytes: 1 << 10, Now: clock.now})
	defer l.Close()
	for range 10 {
		if _, err := l.Append(testBatch(t, 2, 200, clock.t.UnixMilli())); err != nil {
			t.Fatal(err)
		}
	}
	clock.t = clock.t.Add(2 * time.Hour)
	if n, err := l.ApplyRetention(); err != nil || n != 0 {
		t.Fatalf("default retention (7 days) deleted %d segments: %v", n, err)
	}
	segs := l.segmentCount()
	// Options without Now: the log keeps the clock it was opened with.
	if err := l.SetOptions(Options{SegmentBytes: 1 << 10, Retention: time.Hour}); err != nil {
		t.Fatal(err)
	}
	replicatedAll(l)
	n, err := l.ApplyRetention()
	if err != nil {
		t.Fatal(err)
	}
	if n != segs || l.StartOffset() != l.EndOffset() {
		t.Fatalf("retention.ms=1h deleted %d of %d segments; start %d end %d", n, segs, l.StartOffset(), l.EndOffset())
	}
	// retention.bytes, also live.
	for range 10 {
		if _, err := l.Append(testBatch(t, 2, 200, clock.t.UnixMilli())); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.SetOptions(Options{SegmentBytes: 1 << 10, Retention: -1, RetentionBytes: 1 << 10}); err != nil {
		t.Fatal(err)
	}
	replicatedAll(l)
	if _, err := l.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	if size := l.Size(); size > 2<<10 {
		t.Fatalf("retention.bytes=1KiB left %d bytes", size)
	}
}

// flush.messages=1 set live makes the next appends durable before they
// return; unset, appends no longer wait.
func TestSetOptionsFlushMessages(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{})
	defer l.Close()
	if _, err := l.Append(testBatch(t, 1, 100, 1)); err != nil {
		t.Fatal(err)
	}
	if rp := l.RecoveryPoint(); rp != 0 {
		t.Fatalf("recovery point %d without a flush policy", rp)
	}
	if err := l.SetOptions(Options{FlushMessages: 1}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		res, err := l.Append(testBatch(t, 1, 100, 1))
		if err != nil {
			t.Fatal(err)
		}
		if rp := l.RecoveryPoint(); rp <= res.LastOffset {
			t.Fatalf("append of %d returned with the recovery point at %d", res.LastOffset, rp)
		}
	}
	if err := l.SetOptions(Options{}); err != nil {
		t.Fatal(err)
	}
	res, err := l.Append(testBatch(t, 1, 100, 1))
	if err != nil {
		t.Fatal(err)
	}
	if l.needsSync(res) {
		t.Fatal("an append still waits for a flush after flush.messages was unset")
	}
}

// The flush.ms ticker starts, changes its interval and stops with
// SetOptions.
func TestSetOptionsFlushInterval(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{})
	defer l.Close()
	ticking := func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.mu.ticking
	}
	if ticking() {
		t.Fatal("a ticker runs without flush.ms")
	}
	appendAndWaitFlushed := func() {
		t.Helper()
		res, err := l.Append(testBatch(t, 1, 100, 1))
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the flush.ms ticker to flush", 10*time.Second, func() bool { return l.RecoveryPoint() > res.LastOffset })
	}
	if err := l.SetOptions(Options{FlushInterval: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if !ticking() {
		t.Fatal("flush.ms set: no ticker")
	}
	// From an hour to a few milliseconds: the running ticker follows.
	if err := l.SetOptions(Options{FlushInterval: 2 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	appendAndWaitFlushed()
	if err := l.SetOptions(Options{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the ticker to stop", 10*time.Second, func() bool { return !ticking() })
	// On again.
	if err := l.SetOptions(Options{FlushInterval: 2 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	appendAndWaitFlushed()
}

// max.message.bytes, message.timestamp.type and segment.index.bytes set
// live.
func TestSetOptionsAppendSettings(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{})
	defer l.Close()
	// Stamped now: LogAppendTime must not make the segment look old.
	batch := testBatch(t, 5, 100, time.Now().UnixMilli())
	res, err := l.Append(batch)
	if err != nil || res.LogAppendTime != -1 {
		t.Fatalf("CreateTime append: %+v, %v", res, err)
	}
	if err := l.SetOptions(Options{MaxBatchBytes: len(batch) - 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(batch); !errors.Is(err, ErrBatchTooLarge) {
		t.Fatalf("append over the lowered max.message.bytes: %v", err)
	}
	if err := l.SetOptions(Options{LogAppendTime: true, SegmentIndexBytes: 8 * timeIndexEntrySize}); err != nil {
		t.Fatal(err)
	}
	before := time.Now().UnixMilli()
	res, err = l.Append(batch)
	if err != nil || res.LogAppendTime < before {
		t.Fatalf("LogAppendTime append: %+v, %v", res, err)
	}
	// segment.index.bytes applies from the next segment.
	l.mu.Lock()
	old := l.mu.files.index.capacity
	l.mu.Unlock()
	if old != DefaultSegmentIndexBytes {
		t.Fatalf("active index capacity %d changed under the active segment", old)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	capacity := l.mu.files.index.capacity
	l.mu.Unlock()
	if capacity != 8*timeIndexEntrySize/offsetIndexEntrySize*offsetIndexEntrySize {
		t.Fatalf("new segment's index capacity %d", capacity)
	}
}

// SetOptions on a closed log fails; Options still answers.
func TestSetOptionsClosed(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{FlushInterval: time.Millisecond})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.SetOptions(Options{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetOptions after Close: %v", err)
	}
	if l.Options().FlushInterval != time.Millisecond {
		t.Fatal("Options changed by a refused SetOptions")
	}
}

// Appends, reads and retention race with option changes (run with -race):
// every record lands once, in order, whatever the settings of the moment.
func TestSetOptionsConcurrent(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{Retention: -1})
	defer l.Close()
	const appenders, each = 4, 200
	batch := testBatch(t, 2, 100, 1)
	// Retention -1 throughout: the batches are stamped 1970.
	variants := []Options{
		{Retention: -1},
		{Retention: -1, SegmentBytes: 2 << 10, IndexIntervalBytes: 64, SegmentIndexBytes: 1 << 10},
		{Retention: -1, FlushMessages: 1, LogAppendTime: true},
		{Retention: -1, FlushInterval: time.Millisecond, SegmentAge: time.Millisecond},
		{Retention: -1, FlushMessages: 3, RetentionBytes: 1 << 30, ProducerIDExpiration: time.Minute},
	}
	stop := make(chan struct{})
	var changer sync.WaitGroup
	changer.Add(1)
	go func() {
		defer changer.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := l.SetOptions(variants[i%len(variants)]); err != nil {
				t.Error(err)
				return
			}
			if _, err := l.ApplyRetention(); err != nil {
				t.Error(err)
				return
			}
			if v, err := l.Read(l.StartOffset(), 1<<10, l.EndOffset()); err == nil {
				v.Release()
			}
		}
	}()
	var wg sync.WaitGroup
	for range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := append([]byte(nil), batch...)
			for range each {
				if _, err := l.Append(b); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	changer.Wait()
	if l.StartOffset() != 0 {
		t.Fatalf("retention deleted data: start offset %d", l.StartOffset())
	}
	checkSequence(t, readAll(t, l, 0, 1<<20), 0, appenders*each*2)
}

// TestCompactionDefaultsIdempotent: the broker's delete.retention.ms=0
// (DeleteRetention -1) survives defaults applied at open and again by
// SetOptions.
func TestCompactionDefaultsIdempotent(t *testing.T) {
	o := CompactionOptions{Policy: PolicyCompact, DeleteRetention: -1}
	if got := o.withDefaults().withDefaults(); got.DeleteRetention > 0 {
		t.Errorf("DeleteRetention -1 became %v", got.DeleteRetention)
	}
	if got := (CompactionOptions{}).withDefaults().withDefaults(); got.DeleteRetention != DefaultDeleteRetention {
		t.Errorf("default DeleteRetention %v", got.DeleteRetention)
	}
}
