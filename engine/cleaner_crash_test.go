package engine

// Crashes and file-system faults during cleaning: at every counted
// operation of a pass (building the cleaned segments, the swap renames and
// fsyncs, the checkpoint), a machine crash (crashFS) or an EIO (errorFS).
// After each, the reopened log holds every key's latest record, offsets
// increase with no duplicates, every record is one that was appended at its
// offset, and a new pass compacts it fully.
//
// The transactional fixtures add committed and aborted transactions and
// crash the pass that drops aborted records, the one that drops their
// .txnindex entries and stamps the markers' horizons, and the one that
// drops the markers. After each crash a read_committed consumer sees
// exactly the committed records, and every aborted transaction the log
// reports has its abort marker in the log and its entry in the .txnindex
// of the segment holding the marker (no file of a segment that is gone).

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
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
	txn   bool // holds transactions
}

func newCleanFixture(t *testing.T) *cleanFixture { return newCleanFixtureAt(t, false, 0) }

// newCleanFixtureAt builds the fixture, with transactions when txn, cleaned
// passes times (the clock past the delete horizon before the second) and
// then appended to, so the next pass has something dirty.
func newCleanFixtureAt(t *testing.T, txn bool, passes int) *cleanFixture {
	t.Helper()
	clock := &fakeClock{t: time.UnixMilli(1_700_000_000_000)}
	f := &cleanFixture{dir: filepath.Join(fastTempDir(t), "template"), opts: compactOpts(clock), m: newModel(), orig: map[int64]kv{}, clock: clock, txn: txn}
	f.opts.SegmentBytes = 2 << 10
	l := mustOpen(t, f.dir, f.opts)
	var seq [3]int32
	var txnRecs [3][]kv // the open transaction's records, by producer
	var txnRes [3][]AppendResult
	add := func(b []byte, recs []kv, committed bool) AppendResult {
		t.Helper()
		res, err := l.Append(b)
		if err != nil {
			t.Fatal(err)
		}
		if committed {
			f.m.appended(res, recs...)
		}
		for j, r := range recs {
			f.orig[res.FirstOffset+int64(j)] = r
		}
		return res
	}
	for i := range 120 {
		recs := []kv{{fmt.Sprintf("k%d", i%9), []byte(fmt.Sprintf("v%d", i))}, {fmt.Sprintf("k%d", (i*7)%9), []byte(fmt.Sprintf("w%d", i))}}
		if i%40 == 39 && !txn {
			recs[1].value = nil
		}
		add(keyedBatch(t, clock.t.UnixMilli(), Compression(i%2), recs...), recs, true)
		if !txn {
			continue
		}
		// Producers 1 and 2 run transactions of two batches over five
		// plain ones; every third is aborted.
		if pid := int64(1 + i%2); i%5 < 2 {
			trecs := []kv{{fmt.Sprintf("k%d", (i*5)%9), []byte(fmt.Sprintf("t%d", i))}, {fmt.Sprintf("a%d", i%4), []byte(fmt.Sprintf("t%d", i))}}
			res := add(txnKeyed(t, pid, 0, seq[pid], clock.t.UnixMilli(), trecs...), trecs, false)
			seq[pid] += 2
			txnRecs[pid] = append(txnRecs[pid], trecs...)
			txnRes[pid] = append(txnRes[pid], res)
		} else if len(txnRecs[pid]) > 0 && i%5 == 3 {
			typ := ControlCommit
			if (i/5)%3 == 0 {
				typ = ControlAbort
			}
			if _, err := l.Append(AppendControlBatch(nil, pid, 0, typ, 0, clock.t.UnixMilli())); err != nil {
				t.Fatal(err)
			}
			if typ == ControlCommit { // its records count where they are
				for j, res := range txnRes[pid] {
					for k, r := range txnRecs[pid][2*j : 2*j+2] {
						if off, ok := f.m.latest[r.key]; !ok || off < res.FirstOffset+int64(k) {
							f.m.latest[r.key], f.m.value[r.key] = res.FirstOffset+int64(k), r.value
						}
					}
				}
			}
			txnRecs[pid], txnRes[pid] = nil, nil
		}
	}
	for pid := range txnRecs { // no transaction stays open: all is cleanable
		if len(txnRecs[pid]) > 0 {
			if _, err := l.Append(AppendControlBatch(nil, int64(pid), 0, ControlAbort, 0, clock.t.UnixMilli())); err != nil {
				t.Fatal(err)
			}
		}
	}
	settle(t, l)
	for p := range passes {
		if p == 1 {
			clock.t = clock.t.Add(2 * f.opts.Compaction.DeleteRetention)
		}
		if _, err := NewCleaner(CleanerOptions{DedupeBufferBytes: 1 << 20}).Clean(l); err != nil {
			t.Fatal(err)
		}
		recs := []kv{{"k0", []byte(fmt.Sprintf("pass%d", p))}}
		add(keyedBatch(t, clock.t.UnixMilli(), CompressionNone, recs...), recs, true)
		settle(t, l)
	}
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
	if f.txn {
		f.verifyTxns(t, what, l)
	}
	return recs
}

// verifyTxns checks a transactional fixture (see the top of the file).
func (f *cleanFixture) verifyTxns(t *testing.T, what string, l *Log) {
	t.Helper()
	got := consume(t, l, true)
	want := map[string]string{}
	for k, v := range f.m.value {
		if v != nil {
			want[k] = string(v)
		}
	}
	if len(got.values) != len(want) {
		t.Fatalf("%s: read_committed sees %d keys, want %d: %v", what, len(got.values), len(want), got.values)
	}
	wantValues(t, what+", read_committed", got, want)
	entries := l.AbortedTxns(nil, 0, l.EndOffset())
	l.mu.Lock()
	failed := l.mu.err != nil
	l.mu.Unlock()
	if failed {
		// A swap a fault interrupted: the files are half renamed until the
		// reopen completes it; the log serves its old state from memory.
		return
	}
	files := txnIndexFiles(t, l.dir)
	bases := l.SegmentBases()
	for base := range files {
		if !slices.Contains(bases, base) {
			t.Fatalf("%s: a .txnindex at %d, of no segment (%v)", what, base, bases)
		}
	}
	for _, e := range entries {
		sb, ok := markerAt(t, l, e.LastOffset)
		if !ok || sb.h.ProducerID != e.ProducerID {
			t.Fatalf("%s: aborted transaction %+v has no marker in the log", what, e)
		}
		if cr, err := ParseControlBatch(sb.b); err != nil || cr.Type != ControlAbort {
			t.Fatalf("%s: aborted transaction %+v: the batch at its marker is %v (%v)", what, e, cr.Type, err)
		}
		i, _ := slices.BinarySearch(bases, e.LastOffset+1)
		if !slices.Contains(files[bases[i-1]], e) {
			t.Fatalf("%s: aborted transaction %+v is not in the .txnindex of segment %d: %+v", what, e, bases[i-1], files)
		}
	}
	n := 0
	for _, es := range files {
		n += len(es)
	}
	if n != len(entries) {
		t.Fatalf("%s: the .txnindex files hold %d entries, the log reports %d", what, n, len(entries))
	}
	// And every abort marker whose transaction still has a batch in the
	// log (an empty one counts) has its entry.
	pending := map[int64]bool{}
	for _, sb := range logBatches(t, l) {
		switch h := sb.h; {
		case h.ProducerID < 0:
		case !h.Control():
			pending[h.ProducerID] = pending[h.ProducerID] || h.Transactional()
		default:
			if cr, err := ParseControlBatch(sb.b); err == nil && cr.Type == ControlAbort && pending[h.ProducerID] &&
				!slices.ContainsFunc(entries, func(e AbortedTxn) bool { return e.LastOffset == h.BaseOffset }) {
				t.Fatalf("%s: the abort marker at %d has batches of its transaction in the log and no entry: %+v", what, h.BaseOffset, entries)
			}
			delete(pending, h.ProducerID)
		}
	}
}

// finish cleans l to the end and checks the result is fully compacted.
func (f *cleanFixture) finish(t *testing.T, what string, l *Log) {
	t.Helper()
	st, err := NewCleaner(CleanerOptions{DedupeBufferBytes: 1 << 20}).Clean(l)
	if err != nil {
		t.Fatalf("%s: the pass after recovery: %v", what, err)
	}
	recs := f.verify(t, what+", cleaned again", l)
	f.m.check(t, recs, l.EndOffset(), false) // no aborted record left either
	if st.End != 0 && st.End != l.EndOffset() {
		t.Fatalf("%s: the pass after recovery cleaned to %d, the log ends at %d", what, st.End, l.EndOffset())
	}
	if !f.txn {
		return
	}
	// Two more passes, each past the delete horizon of the last: the
	// markers whose transactions are gone go, and no entry may outlive its
	// marker. What makes each pass dirty is an aborted transaction of a
	// producer of its own, invisible to the model.
	saved := f.clock.t
	defer func() { f.clock.t = saved }()
	for p := range 2 {
		f.clock.t = f.clock.t.Add(2 * f.opts.Compaction.DeleteRetention)
		ts := f.clock.t.UnixMilli()
		mustAppend(t, l, txnKeyed(t, 9, 0, int32(p), ts, kv{"dirt", []byte("aborted")}))
		mustAppend(t, l, AppendControlBatch(nil, 9, 0, ControlAbort, 0, ts))
		settle(t, l)
		if _, err := NewCleaner(CleanerOptions{DedupeBufferBytes: 1 << 20}).Clean(l); err != nil {
			t.Fatalf("%s: pass %d past the horizon: %v", what, p, err)
		}
		recs := f.verify(t, fmt.Sprintf("%s, pass %d past the horizon", what, p), l)
		f.m.check(t, recs, l.EndOffset(), false)
	}
}

func TestCleanerMachineCrash(t *testing.T) {
	t.Run("plain", func(t *testing.T) { cleanerMachineCrash(t, newCleanFixture(t)) })
	for passes, name := range []string{"txn dropping aborted records", "txn dropping index entries", "txn dropping markers"} {
		t.Run(name, func(t *testing.T) { cleanerMachineCrash(t, newCleanFixtureAt(t, true, passes)) })
	}
}

func cleanerMachineCrash(t *testing.T, f *cleanFixture) {
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
	t.Run("plain", func(t *testing.T) { cleanerFaultInjection(t, newCleanFixture(t)) })
	for passes, name := range []string{"txn dropping aborted records", "txn dropping index entries", "txn dropping markers"} {
		t.Run(name, func(t *testing.T) { cleanerFaultInjection(t, newCleanFixtureAt(t, true, passes)) })
	}
}

func cleanerFaultInjection(t *testing.T, f *cleanFixture) {
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
