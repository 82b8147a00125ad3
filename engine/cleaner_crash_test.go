package engine

// Crashes and file-system faults during cleaning: at every counted
// operation of a pass (building the cleaned segments, the swap renames and
// fsyncs, the checkpoint), a machine crash (crashFS) or an EIO (errorFS).
// After each, the reopened log holds every key's latest record, offsets
// increase with no duplicates, every record is one that was appended at its
// offset, and a new pass compacts it fully.

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// cleanFixture is a closed log with many updates to few keys over several
// segments, and what was appended at each offset.
type cleanFixture struct {
	dir   string
	opts  Options
	m     *model
	orig  map[int64]kv
	clock *fakeClock
}

func newCleanFixture(t *testing.T) *cleanFixture {
	t.Helper()
	clock := &fakeClock{t: time.UnixMilli(1_700_000_000_000)}
	f := &cleanFixture{dir: filepath.Join(fastTempDir(t), "template"), opts: compactOpts(clock), m: newModel(), orig: map[int64]kv{}, clock: clock}
	f.opts.SegmentBytes = 2 << 10
	l := mustOpen(t, f.dir, f.opts)
	for i := range 120 {
		recs := []kv{{fmt.Sprintf("k%d", i%9), []byte(fmt.Sprintf("v%d", i))}, {fmt.Sprintf("k%d", (i*7)%9), []byte(fmt.Sprintf("w%d", i))}}
		if i%40 == 39 {
			recs[1].value = nil
		}
		res, err := l.Append(keyedBatch(t, clock.t.UnixMilli(), Compression(i%2), recs...))
		if err != nil {
			t.Fatal(err)
		}
		f.m.appended(res, recs...)
		for j, r := range recs {
			f.orig[res.FirstOffset+int64(j)] = r
		}
	}
	settle(t, l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return f
}

// copyTo copies the fixture's directory to dst.
func (f *cleanFixture) copyTo(t *testing.T, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(f.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, d.Name()), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// verify checks the log against the fixture (see the top of the file).
func (f *cleanFixture) verify(t *testing.T, what string, l *Log) []Record {
	t.Helper()
	recs, _ := logRecords(t, l)
	for _, r := range recs {
		o, ok := f.orig[r.Offset]
		if !ok || o.key != string(r.Key) || string(o.value) != string(r.Value) || (o.value == nil) != (r.Value == nil) {
			t.Fatalf("%s: offset %d holds %q=%q, appended there: %q=%q", what, r.Offset, r.Key, r.Value, o.key, o.value)
		}
	}
	f.m.check(t, recs, 0, false)
	return recs
}

// finish cleans l to the end and checks the result is fully compacted.
func (f *cleanFixture) finish(t *testing.T, what string, l *Log) {
	t.Helper()
	st, err := NewCleaner(CleanerOptions{DedupeBufferBytes: 1 << 20}).Clean(l)
	if err != nil {
		t.Fatalf("%s: the pass after recovery: %v", what, err)
	}
	recs := f.verify(t, what+", cleaned again", l)
	f.m.check(t, recs, l.EndOffset(), false)
	if st.End != 0 && st.End != l.EndOffset() {
		t.Fatalf("%s: the pass after recovery cleaned to %d, the log ends at %d", what, st.End, l.EndOffset())
	}
}

func TestCleanerMachineCrash(t *testing.T) {
	f := newCleanFixture(t)
	root := fastTempDir(t)
	crashes := 0
	for n := int64(1); ; n++ {
		if n > 2000 {
			t.Fatal("the pass still crashes at operation 2000")
		}
		dir := filepath.Join(root, strconv.FormatInt(n, 10), filepath.Base(f.dir)) // the checkpoints name the directory
		f.copyTo(t, dir)
		cfs := newCrashFS(t, dir)
		o := f.opts
		o.FS = cfs
		l := mustOpen(t, dir, o)
		// Alternately: only synced data survives; indexes as of their last
		// sync too; a random part of the unsynced writes as well.
		plans := []crashPlan{{}, {keepIndexes: true}, {writeback: rand.New(rand.NewPCG(uint64(n), 8))}}
		cfs.crashAfter(n, plans[n%3])
		_, err := NewCleaner(CleanerOptions{DedupeBufferBytes: 1 << 20}).Clean(l)
		what := fmt.Sprintf("crash at operation %d", n)
		if !cfs.isCrashed() {
			if err != nil {
				t.Fatalf("%s did not happen, and the pass failed: %v", what, err)
			}
			f.verify(t, "the pass without a crash", l)
			l.Close()
			break
		}
		crashes++
		abandonCrashed(l)
		if err := cfs.crashError(); err != nil {
			t.Fatal(err)
		}
		o.FS = OSFS
		l = mustOpen(t, dir, o)
		f.verify(t, what, l)
		f.finish(t, what, l)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		os.RemoveAll(filepath.Dir(dir))
	}
	if crashes < 20 {
		t.Fatalf("only %d crash points in a pass", crashes)
	}
	t.Logf("%d crash points", crashes)
}

func TestCleanerFaultInjection(t *testing.T) {
	f := newCleanFixture(t)
	root := fastTempDir(t)
	faults := 0
	for n := int64(0); ; n++ {
		if n > 2000 {
			t.Fatal("the pass still meets an injected error at operation 2000")
		}
		dir := filepath.Join(root, strconv.FormatInt(n, 10), filepath.Base(f.dir)) // the checkpoints name the directory
		f.copyTo(t, dir)
		o := f.opts
		l := mustOpen(t, dir, o) // opened on the real FS: only the pass meets faults
		efs := newErrorFS(OSFS, failOpAt(n, syscall.EIO))
		l.fs, l.cfg.fs = efs, efs
		_, err := NewCleaner(CleanerOptions{DedupeBufferBytes: 1 << 20}).Clean(l)
		what := fmt.Sprintf("EIO at %v", efs.failures())
		if len(efs.failures()) == 0 {
			if err != nil {
				t.Fatalf("no fault injected at %d, and the pass failed: %v", n, err)
			}
			l.Close()
			break
		}
		faults++
		if err == nil {
			// The fault hit a best-effort removal of a stray file.
			recs := f.verify(t, what+", the pass succeeded", l)
			f.m.check(t, recs, l.EndOffset(), false)
		}
		// The open log still reads consistently.
		f.verify(t, what+", the open log", l)
		l.fs, l.cfg.fs = OSFS, OSFS
		l.Close()
		l = mustOpen(t, dir, o)
		f.verify(t, what+", reopened", l)
		f.finish(t, what, l)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		os.RemoveAll(filepath.Dir(dir))
	}
	t.Logf("%d fault points", faults)
}
