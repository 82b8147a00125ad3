package engine

// Durability under machine crashes and file-system faults, through the two
// test file systems: crashFS (crashfs_test.go) keeps only what an fsync
// covered, errorFS (errorfs_test.go) fails chosen operations.
//
//	TestMachineCrash               appends with flush.messages=1 (and, in two
//	                               epochs, explicit flushes), 200 crashes at
//	                               random operations: nothing reported
//	                               durable is lost, nothing torn is visible
//	TestMachineCrashRollAfterOpen  the crash point that left a gap of offsets
//	TestFaultInjection             an EIO at operation N for N = 0, 1, 2, ...:
//	                               the log stays consistent or refuses writes,
//	                               and reopens
//	TestInjectedENOSPC             a full disk: a clear error, nothing
//	                               half-visible, and everything acknowledged
//	                               after space returns
//
// TestCrashFSModel (crashfs_test.go) checks the crash file system itself.

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// crashRecValue is the value of record r of n in batch seq of a writer.
// Its padding depends on all three, so a record from another place, torn
// or shifted, does not parse.
func crashRecValue(writer string, seq, r, n int) string {
	return fmt.Sprintf("%s s%d r%d/%d ", writer, seq, r, n) + strings.Repeat("x", (seq*37+r*11)%200)
}

type crashRec struct {
	writer    string
	seq, r, n int
}

func parseCrashRec(v string) (crashRec, bool) {
	var c crashRec
	f := strings.SplitN(v, " ", 4)
	if len(f) != 4 {
		return c, false
	}
	c.writer = f[0]
	if _, err := fmt.Sscanf(f[1]+" "+f[2], "s%d r%d/%d", &c.seq, &c.r, &c.n); err != nil {
		return c, false
	}
	return c, v == crashRecValue(c.writer, c.seq, c.r, c.n)
}

// crashRun collects what the appenders of one run were told.
type crashRun struct {
	cfs        *crashFS
	mu         sync.Mutex
	reported   map[int64]string // offset → value, for every Append that returned
	attempted  int              // records handed to Append
	unexpected []error
}

func (r *crashRun) report(res AppendResult, values []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, v := range values {
		r.reported[res.FirstOffset+int64(i)] = v
	}
}

// fail records an error: before the crash any error is a failure; after it
// the error must carry the crash as its cause.
func (r *crashRun) fail(op string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case !r.cfs.isCrashed():
		r.unexpected = append(r.unexpected, fmt.Errorf("%s failed before the crash: %w", op, err))
	case !errors.Is(err, errCrashed):
		r.unexpected = append(r.unexpected, fmt.Errorf("%s after the crash failed with an error that does not carry the crash: %w", op, err))
	}
}

// abandonCrashed drops a log whose machine crashed: it never closes, but
// its background work (which fails: the crash FS refuses everything) is
// waited for, its mappings are unmapped and its lock released, so the next
// open in this process finds the directory as a rebooted machine would.
func abandonCrashed(l *Log) {
	l.bg.Wait()
	l.closeSegments()
	l.syncer.close()
	l.dirLock.Close()
}

// verifyCrashLog checks a log recovered after a crash against known (offset
// → value of every record reported durable or read back after an earlier
// recovery): all of known is there and intact, offsets are contiguous from
// 0, every record parses as one some writer sent, each writer's batches
// appear in order and whole, and reads through the indexes find every
// offset. With gaps (no flush policy) offsets never flushed may be missing
// from the middle of the log (see TestMachineCrash), so offsets need only
// increase and a writer's batches need only keep their order. It adds what
// it read to known and returns how many records were present without being
// known and how many gaps it met.
func verifyCrashLog(t *testing.T, iter string, l *Log, known map[int64]string, gaps bool, rng *rand.Rand) (unknown, holes int) {
	t.Helper()
	end := l.EndOffset()
	if l.StartOffset() != 0 {
		t.Fatalf("%s: log start offset %d after recovery, want 0", iter, l.StartOffset())
	}
	var missing []int64
	for off := range known {
		if off >= end {
			missing = append(missing, off)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		t.Fatalf("%s: the log ends at %d; %d records reported durable are lost, from offset %d", iter, end, len(missing), missing[0])
	}
	var recs []Record
	if gaps {
		recs = readRange(t, l, 0, end, 1<<20)
		present := make(map[int64]bool, len(recs))
		for i, r := range recs {
			if i > 0 && r.Offset <= recs[i-1].Offset {
				t.Fatalf("%s: offset %d read after %d", iter, r.Offset, recs[i-1].Offset)
			}
			if i > 0 && r.Offset > recs[i-1].Offset+1 {
				holes++
			}
			present[r.Offset] = true
		}
		for off := range known {
			if !present[off] {
				t.Fatalf("%s: offset %d, reported durable, is missing", iter, off)
			}
		}
	} else {
		recs = readAll(t, l, 0, 1<<20)
		checkSequence(t, recs, 0, int(end))
	}
	type state struct{ seq, r, n int }
	writers := map[string]state{}
	for _, rec := range recs {
		v := string(rec.Value)
		if want, ok := known[rec.Offset]; !ok {
			unknown++
		} else if v != want {
			t.Fatalf("%s: offset %d holds %q, reported as %q", iter, rec.Offset, v, want)
		}
		c, ok := parseCrashRec(v)
		if !ok {
			t.Fatalf("%s: offset %d holds %q, which no writer sent", iter, rec.Offset, v)
		}
		s, seen := writers[c.writer]
		var good bool
		switch {
		case !seen:
			good = (c.seq == 0 || gaps) && c.r == 0
		case s.r+1 < s.n:
			good = c.seq == s.seq && c.r == s.r+1 && c.n == s.n
		default:
			good = (c.seq == s.seq+1 || gaps && c.seq > s.seq) && c.r == 0
		}
		if !good {
			t.Fatalf("%s: offset %d holds %q after batch %d record %d/%d of the same writer", iter, rec.Offset, v, s.seq, s.r, s.n)
		}
		writers[c.writer] = state{c.seq, c.r, c.n}
	}
	for w, s := range writers {
		if s.r+1 != s.n {
			t.Fatalf("%s: half of writer %s's batch %d is visible: records up to %d of %d", iter, w, s.seq, s.r, s.n)
		}
	}
	for range 8 {
		if len(recs) == 0 {
			break
		}
		off := recs[rng.IntN(len(recs))].Offset
		v, err := l.Read(off, 1, end)
		if err != nil {
			t.Fatalf("%s: Read(%d): %v", iter, off, err)
		}
		data := viewBytesTB(t, &v)
		v.Release()
		h, err := checkStoredBatch(data)
		if err != nil || h.BaseOffset > off || h.LastOffset() < off {
			t.Fatalf("%s: Read(%d) returned the batch [%d, %d] (%v)", iter, off, h.BaseOffset, h.LastOffset(), err)
		}
	}
	for _, rec := range recs {
		known[rec.Offset] = string(rec.Value)
	}
	if n := len(recs); gaps && n > 0 && recs[n-1].Offset+1 < end {
		holes++
	}
	return unknown, holes
}

// Machine crash: appenders with flush.messages=1 record every offset
// Append returns (durable), or, in two epochs without a flush policy, every
// offset appended before a Flush that returned (and there gaps of offsets
// never flushed are allowed); the machine crashes at a random file-system
// operation (during appends, rolls, flushes, Close or recovery itself) or
// between appends. After each crash the directory holds only what an fsync
// covered (and sometimes a random part of what it did not), recovery must
// succeed, everything reported is there and intact, nothing else is torn or
// foreign, offsets are contiguous, and appends continue.
func TestMachineCrash(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SLUICE_CRASH_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed %d (SLUICE_CRASH_SEED repeats the choices; goroutine timing still varies)", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	debug := os.Getenv("SLUICE_CRASH_DEBUG") != "" // engine log and directory listings on stderr

	opts := Options{
		FlushMessages:      1,
		SegmentBytes:       16 << 10,
		IndexIntervalBytes: 1 << 10,
		SegmentIndexBytes:  8 << 10,
		Logger:             discardLogger,
	}
	if debug {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	// Each epoch is one log directory crashed again and again, so recovery
	// also recovers what earlier recoveries left; a new epoch starts small
	// again, which keeps the verification of everything kept cheap. Epochs
	// 3 and 7 run without a flush policy: there an append is reported
	// durable once a Flush after it has returned, and the log may come back
	// with a gap where records never flushed were lost. (A roll leaves the
	// old segment's fsync to the background, as it may be a whole segment
	// of dirty data, so the next segment's name can reach the disk before
	// the old segment's last size; recovery cannot tell such a short
	// segment from the legitimate gap of a compacted leader's batches. With
	// flush.messages the roll syncs the old segment first: no gaps.)
	const epochs, crashes = 8, 25
	flushEpoch := func(e int) bool { return e%4 == 3 }
	root := fastTempDir(t)
	openOps, runOps := int64(20), int64(100) // operations of an open and of a whole run, as last seen
	var (
		inRecovery, atOp, atEnd          int
		attempted, reported, unknown     int
		dropped, kept, segments, maxSegs int
		flushCrashes, gaps               int
	)
	for e := range epochs {
		dir := filepath.Join(root, fmt.Sprint(e), "p-0")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		known := map[int64]string{}
		opts.FlushMessages = 1
		if flushEpoch(e) {
			opts.FlushMessages = 0
		}
		for i := range crashes + 1 {
			iter := fmt.Sprintf("epoch %d crash %d", e, i)
			cfs := newCrashFS(t, dir)
			opts.FS = cfs
			if debug {
				ents, _ := os.ReadDir(dir)
				for _, de := range ents {
					fi, _ := de.Info()
					fmt.Fprintf(os.Stderr, "%s: %s %d\n", iter, de.Name(), fi.Size())
				}
			}
			plan := crashPlan{keepIndexes: rng.IntN(2) == 0}
			if rng.IntN(2) == 0 {
				plan.writeback = rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
			}
			if i > 0 && i < crashes && rng.IntN(5) == 0 {
				cfs.crashAfter(1+rng.Int64N(openOps), plan)
			}
			before := cfs.ops.Load()
			l, err := OpenLog(dir, opts)
			if cfs.isCrashed() {
				inRecovery++
				if flushEpoch(e) {
					flushCrashes++
				}
				if err == nil {
					abandonCrashed(l)
				}
				if err := cfs.crashError(); err != nil {
					t.Fatal(err)
				}
				continue
			}
			cfs.trigger.Store(0)
			if err != nil {
				t.Fatalf("%s: recovery failed: %v", iter, err)
			}
			openOps = max(cfs.ops.Load()-before, 1)
			u, h := verifyCrashLog(t, iter, l, known, flushEpoch(e), rng)
			unknown, gaps = unknown+u, gaps+h
			segments = len(l.SegmentBases())
			maxSegs = max(maxSegs, segments)
			if i == crashes {
				// The end of the epoch: appends continue, and a clean
				// close keeps them.
				end := l.EndOffset()
				res, err := l.Append(testBatch(t, 3, 20, 1))
				if err != nil || res.FirstOffset != end {
					t.Fatalf("%s: append after the last recovery: %+v %v", iter, res, err)
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				kept += len(known)
				break
			}

			writers, batches := 1+rng.IntN(4), rng.IntN(30)
			flushEvery := 0 // flush.messages=1: Append reports
			if flushEpoch(e) {
				flushEvery = 1 + rng.IntN(5)
				flushCrashes++
			}
			if rng.IntN(4) != 0 {
				cfs.crashAfter(1+rng.Int64N(runOps), plan)
			}
			before = cfs.ops.Load()
			run := &crashRun{cfs: cfs, reported: map[int64]string{}}
			var wg sync.WaitGroup
			for w := range writers {
				wrng := rand.New(rand.NewPCG(rng.Uint64(), uint64(w)))
				name := fmt.Sprintf("w%d.%d", i, w)
				wg.Add(1)
				go func() {
					defer wg.Done()
					type appended struct {
						res    AppendResult
						values []string
					}
					var unflushed []appended
					for seq := range batches {
						if wrng.IntN(25) == 0 {
							if err := l.Roll(); err != nil {
								run.fail("Roll", err)
								return
							}
						}
						n := 1 + wrng.IntN(4)
						values := make([]string, n)
						var bb BatchBuilder
						for r := range n {
							values[r] = crashRecValue(name, seq, r, n)
							bb.Add(Record{Timestamp: int64(1000 + seq), Value: []byte(values[r])})
						}
						run.mu.Lock()
						run.attempted += n
						run.mu.Unlock()
						res, err := l.Append(bb.Build())
						if err != nil {
							run.fail("Append", err)
							return
						}
						if flushEvery == 0 {
							run.report(res, values)
							continue
						}
						unflushed = append(unflushed, appended{res, values})
						if (seq+1)%flushEvery == 0 {
							if err := l.Flush(); err != nil {
								run.fail("Flush", err)
								return
							}
							for _, a := range unflushed {
								run.report(a.res, a.values)
							}
							unflushed = unflushed[:0]
						}
					}
				}()
			}
			wg.Wait()
			closed := false
			if !cfs.isCrashed() {
				var err error
				op := []string{"nothing", "Roll", "Flush", "Close"}[rng.IntN(4)]
				switch op {
				case "Roll":
					err = l.Roll()
				case "Flush":
					err = l.Flush()
				case "Close":
					err, closed = l.Close(), true
				}
				if err != nil {
					run.fail(op, err)
				}
			}
			if cfs.isCrashed() {
				atOp++
			} else {
				atEnd++
				runOps = max(cfs.ops.Load()-before, 1)
			}
			cfs.crash(plan)
			if err := cfs.crashError(); err != nil {
				t.Fatal(err)
			}
			if !closed {
				abandonCrashed(l)
			}
			for _, err := range run.unexpected {
				t.Errorf("%s: %v", iter, err)
			}
			if t.Failed() {
				t.FailNow()
			}
			for off, v := range run.reported {
				known[off] = v
			}
			attempted += run.attempted
			reported += len(run.reported)
			dropped += cfs.droppedWrites()
		}
	}
	t.Logf("%d crashes (%d in runs with flush.messages=1, %d in runs without a flush policy, which left %d gaps of offsets never flushed): %d at a random operation of a run, %d between appends or after a roll, flush or close, %d during recovery",
		atOp+atEnd+inRecovery, atOp+atEnd+inRecovery-flushCrashes, flushCrashes, gaps, atOp, atEnd, inRecovery)
	t.Logf("%d records handed to Append, %d reported durable, all kept; %d present though not reported; %d unsynced writes lost in crashes; %d records in %d logs at the end (up to %d segments)",
		attempted, reported, unknown, dropped, kept, epochs, maxSegs)
	if dropped == 0 {
		t.Fatal("no crash lost an unsynced write: the crash points never fell between a write and its sync")
	}
}

// A roll right after an open, with flush.messages=1. The reopened active
// segment's file ends at its data (Close trimmed it), so the first append
// grows it; if a second appender rolls before that append's sync round and
// the machine crashes once the new segment's name is durable, the old
// segment's durable size ends short of the new segment's base, and recovery
// cannot tell that from a legitimate gap (a compacted leader's). Offsets
// must stay contiguous: the roll makes the old segment durable before it
// creates the next one.
func TestMachineCrashRollAfterOpen(t *testing.T) {
	dir := filepath.Join(fastTempDir(t), "p-0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := Options{FlushMessages: 1, SegmentBytes: 4 << 10, Logger: discardLogger}
	batch := func() []byte { return testBatch(t, 2, 100, 1) } // all the same size
	n := int64(len(batch()))
	opts.FS = newCrashFS(t, dir)
	l := mustOpen(t, dir, opts)
	for activeSize(l)+2*n <= opts.SegmentBytes {
		if _, err := l.Append(batch()); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	cfs := newCrashFS(t, dir)
	opts.FS = cfs
	l = mustOpen(t, dir, opts)
	end := l.EndOffset()
	a, err := l.AppendNoWait(batch()) // fits; its sync round is not asked for yet
	if err != nil || len(l.SegmentBases()) != 1 {
		t.Fatalf("first append: %+v %v, segments %v", a, err, l.SegmentBases())
	}
	next := segmentName(dir, a.LastOffset+1, logSuffix)
	cfs.crashWhen(func(kind fsOpKind, path string) bool { return kind == opWrite && path == next }, crashPlan{})
	if _, err := l.Append(batch()); !errors.Is(err, errCrashed) {
		t.Fatalf("the append that rolls: %v, want the crash", err)
	}
	abandonCrashed(l)

	opts.FS = newCrashFS(t, dir)
	l = mustOpen(t, dir, opts)
	defer l.Close()
	got := l.EndOffset()
	if got != end && got != a.LastOffset+1 {
		t.Fatalf("after the crash the log ends at %d; want %d (the unacknowledged append lost) or %d (kept)", got, end, a.LastOffset+1)
	}
	checkSequence(t, readAll(t, l, 0, 1<<20), 0, int(got))
	if res, err := l.Append(batch()); err != nil || res.FirstOffset != got {
		t.Fatalf("append after the crash: %+v %v", res, err)
	}
}

// offsetBatch builds a batch of n records for offsets [off, off+n) whose
// values name their offsets (crashValue).
func offsetBatch(off int64, n int) []byte {
	var bb BatchBuilder
	for r := range int64(n) {
		bb.Add(Record{Timestamp: 1000 + off + r, Value: []byte(crashValue(off + r))})
	}
	return bb.Build()
}

// checkOffsetValues checks that the log holds exactly [0, EndOffset), each
// record's value naming its offset, and at least [0, acked).
func checkOffsetValues(tb testing.TB, l *Log, acked int64, what string) {
	tb.Helper()
	end := l.EndOffset()
	if end < acked {
		tb.Fatalf("%s: the log ends at %d; records up to %d were acknowledged", what, end, acked)
	}
	recs := readAll(tb, l, 0, 1<<20)
	checkSequence(tb, recs, 0, int(end))
	for _, r := range recs {
		if string(r.Value) != crashValue(r.Offset) {
			tb.Fatalf("%s: offset %d holds %q", what, r.Offset, r.Value)
		}
	}
}

func isInjected(err error) bool {
	var ie *injectedError
	return errors.As(err, &ie)
}

// Fault injection: a fixed scenario (open, appends with flush.messages=1
// and small segments so they roll, explicit rolls and flushes, Close, which
// writes the checkpoint and the clean-shutdown marker) runs with an EIO
// injected at operation N, for N = 0, 1, 2, ... until a run meets no
// injected error. After each failure the open log is consistent (reads
// return everything, and an append works) or refuses writes with
// ErrLogFailed; a reopen on the real file system recovers it with every
// acknowledged record, and appends work. With a file cache of one segment
// the active segment's descriptor is closed whenever another segment is
// used, so appends and reads reopen it, and those opens fail too.
func TestFaultInjection(t *testing.T) {
	opts := Options{FlushMessages: 1, SegmentBytes: 2 << 10, IndexIntervalBytes: 256, SegmentIndexBytes: 1 << 10, Logger: discardLogger}
	t.Run("default", func(t *testing.T) { faultInjection(t, opts) })
	opts.OpenSegments = 1
	t.Run("one open segment", func(t *testing.T) { faultInjection(t, opts) })
}

func faultInjection(t *testing.T, opts Options) {
	root := fastTempDir(t)
	var failedOpen, consistent, sticky, closeFailed, swallowed int
	var n int64
	for ; ; n++ {
		if n > 5000 {
			t.Fatal("the scenario still meets an injected error at operation 5000")
		}
		dir := filepath.Join(root, strconv.FormatInt(n, 10), "p-0")
		efs := newErrorFS(OSFS, failOpAt(n, syscall.EIO))
		o := opts
		o.FS = efs
		what := func() string { return fmt.Sprintf("EIO at %v", efs.failures()) }
		acked := int64(0)
		l, err := OpenLog(dir, o)
		switch {
		case err != nil && !isInjected(err):
			t.Fatalf("%s: OpenLog: %v, which does not carry the injected error", what(), err)
		case err != nil:
			failedOpen++
		default:
			failed := false
			for i := range 30 {
				var err error
				switch {
				case i%9 == 8:
					err = l.Roll()
				case i%7 == 6:
					err = l.Flush()
				default:
					off := l.EndOffset()
					var res AppendResult
					res, err = l.Append(offsetBatch(off, 1+i%3))
					if err == nil {
						if res.FirstOffset != off {
							t.Fatalf("%s: append at %d got offset %d", what(), off, res.FirstOffset)
						}
						acked = res.LastOffset + 1
					}
				}
				if err == nil {
					continue
				}
				if !isInjected(err) {
					t.Fatalf("%s: operation %d failed with %v, which does not carry the injected error", what(), i, err)
				}
				failed = true
				// Consistent or refusing writes.
				checkOffsetValues(t, l, acked, what()+", the open log")
				end := l.EndOffset()
				res, err := l.Append(offsetBatch(end, 2))
				switch {
				case err == nil:
					if res.FirstOffset != end {
						t.Fatalf("%s: the append after the failure got offset %d, want %d", what(), res.FirstOffset, end)
					}
					acked = res.LastOffset + 1
					checkOffsetValues(t, l, acked, what()+", after an append")
					consistent++
				case errors.Is(err, ErrLogFailed):
					if l.EndOffset() != end {
						t.Fatalf("%s: a refused append moved the log end from %d to %d", what(), end, l.EndOffset())
					}
					// A failed fsync may have dropped the pages it was to
					// write, and a retry would then report them synced:
					// nothing may become durable after the failure.
					rp := l.RecoveryPoint()
					if ferr := l.Flush(); l.RecoveryPoint() != rp || (rp < end && !errors.Is(ferr, ErrLogFailed)) {
						t.Fatalf("%s: Flush of the failed log: %v; the recovery point moved from %d to %d (end %d)", what(), ferr, rp, l.RecoveryPoint(), end)
					}
					sticky++
				default:
					t.Fatalf("%s: the append after the failure: %v; want success or ErrLogFailed", what(), err)
				}
				break
			}
			if err := l.Close(); err != nil {
				if !isInjected(err) {
					t.Fatalf("%s: Close: %v, which does not carry the injected error", what(), err)
				}
				closeFailed++
			} else if !failed {
				// Nothing reported the failure: the engine took it for
				// harmless (a removal retried at the next open, a producer
				// snapshot that the next open replaces by replaying more
				// batches), and logged it. Then the log must not have
				// failed, and it cannot have been an fsync of segment data.
				l.mu.Lock()
				lerr := l.mu.err
				l.mu.Unlock()
				if lerr != nil {
					t.Fatalf("%s: the log failed (%v) and Close returned nil", what(), lerr)
				}
				for _, op := range efs.failures() {
					if op.kind == opSync && strings.HasSuffix(op.path, logSuffix) {
						t.Fatalf("%s: a failed fdatasync of segment data went unreported", what())
					}
					swallowed++
				}
			}
		}
		if len(efs.failures()) == 0 {
			break
		}
		l, err = OpenLog(dir, opts)
		if err != nil {
			t.Fatalf("%s: reopen: %v", what(), err)
		}
		checkOffsetValues(t, l, acked, what()+", reopened")
		end := l.EndOffset()
		if res, err := l.Append(offsetBatch(end, 3)); err != nil || res.FirstOffset != end {
			t.Fatalf("%s: append after reopen: %+v %v", what(), res, err)
		}
		checkOffsetValues(t, l, end+3, what()+", reopened, after an append")
		if err := l.Close(); err != nil {
			t.Fatalf("%s: closing the reopened log: %v", what(), err)
		}
		os.RemoveAll(filepath.Dir(dir))
	}
	t.Logf("%d runs with an injected EIO, then one without: %d failed the open, %d left the log consistent, %d left it refusing writes, %d failed Close, %d were survived without failing the log (removals, producer snapshots)",
		n, failedOpen, consistent, sticky, closeFailed, swallowed)
}

// ENOSPC (injected): once the disk is full the append fails with an error
// wrapping ENOSPC that names the file; the log shows nothing of it; after
// space returns a reopen keeps everything acknowledged and appends work.
// With only fallocate failing (the engine reserves space before it writes)
// the failure is not sticky; with writes failing too it is.
func TestInjectedENOSPC(t *testing.T) {
	for _, c := range []struct {
		name   string
		kinds  []fsOpKind
		sticky bool
	}{
		{"fallocate", []fsOpKind{opAllocate}, false},
		{"fallocate and write", []fsOpKind{opAllocate, opWrite}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(fastTempDir(t), "p-0")
			var full atomic.Bool
			efs := newErrorFS(OSFS, failWhile(&full, syscall.ENOSPC, func(op fsOp) bool { return slices.Contains(c.kinds, op.kind) }))
			opts := Options{FS: efs, FlushMessages: 1, SegmentBytes: 8 << 10, IndexIntervalBytes: 512, Logger: discardLogger}
			l := mustOpen(t, dir, opts)
			defer func() { l.Close() }()
			var acked int64
			appendOne := func() error {
				off := l.EndOffset()
				res, err := l.Append(offsetBatch(off, 3))
				if err == nil {
					if res.FirstOffset != acked {
						t.Fatalf("append at %d, want %d", res.FirstOffset, acked)
					}
					acked = res.LastOffset + 1
				}
				return err
			}
			for range 40 {
				if err := appendOne(); err != nil {
					t.Fatal(err)
				}
			}
			full.Store(true)
			var failure error
			for range 200 {
				if failure = appendOne(); failure != nil {
					break
				}
			}
			if failure == nil {
				t.Fatal("200 appends succeeded on a full disk")
			}
			t.Logf("full after %d records: %v", acked, failure)
			if !errors.Is(failure, syscall.ENOSPC) || !strings.Contains(failure.Error(), dir+"/") {
				t.Fatalf("append on a full disk: %v; want an error wrapping ENOSPC that names the file", failure)
			}
			if errors.Is(failure, ErrLogFailed) != c.sticky {
				t.Fatalf("append on a full disk: %v; sticky (ErrLogFailed) %v, want %v", failure, errors.Is(failure, ErrLogFailed), c.sticky)
			}
			err := appendOne()
			if err == nil || (c.sticky && !errors.Is(err, ErrLogFailed)) || (!c.sticky && !errors.Is(err, syscall.ENOSPC)) {
				t.Fatalf("the next append on a full disk: %v", err)
			}
			if l.EndOffset() != acked {
				t.Fatalf("EndOffset %d after failed appends, want %d", l.EndOffset(), acked)
			}
			checkOffsetValues(t, l, acked, "the full log")
			if v, err := l.Read(acked, 1<<20, acked+100); err != nil || v.Len() != 0 {
				t.Fatalf("read at the end: %d bytes, %v", v.Len(), err)
			}

			full.Store(false) // space returns
			if !c.sticky {
				if err := appendOne(); err != nil {
					t.Fatalf("append once space returned, before a reopen: %v", err)
				}
			}
			l.Close()
			l = mustOpen(t, dir, opts)
			if l.EndOffset() != acked {
				t.Fatalf("EndOffset %d after reopen, want %d", l.EndOffset(), acked)
			}
			checkOffsetValues(t, l, acked, "reopened")
			for range 50 {
				if err := appendOne(); err != nil {
					t.Fatalf("append after reopen: %v", err)
				}
			}
			checkOffsetValues(t, l, acked, "reopened, after appends")
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
