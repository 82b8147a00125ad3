package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// appendEpoch appends n batches of 10 records (over 1 KiB) stamped with
// epoch.
func appendEpoch(t *testing.T, l *Log, epoch int32, n int) {
	t.Helper()
	l.SetLeaderEpoch(epoch)
	for range n {
		if _, err := l.Append(testBatch(t, 10, 100, 1)); err != nil {
			t.Fatal(err)
		}
	}
}

func epochFile(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, leaderEpochCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// A new leader records its epoch at its log end before it writes anything,
// so a follower that wrote further in an epoch this leader never saw learns
// where to truncate (Kafka's makeLeader); the record is on disk when
// BecomeLeader returns and outlives a restart once the epoch has written.
func TestBecomeLeaderRecordsEpochAtLogEnd(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, Options{Logger: discardLogger})
	appendEpoch(t, l, 3, 3) // epoch 3 wrote [0, 30)
	if e, end := l.EndOffsetForEpoch(4); e != -1 || end != -1 {
		t.Fatalf("before the new leader, epoch 4 answers %d, %d", e, end)
	}
	if err := l.BecomeLeader(5); err != nil {
		t.Fatal(err)
	}
	// A follower whose last epoch is 4 truncates at 30, where epoch 3 ends.
	if e, end := l.EndOffsetForEpoch(4); e != 3 || end != 30 {
		t.Fatalf("epoch 4 answers %d, %d; want 3, 30", e, end)
	}
	if e, end := l.EndOffsetForEpoch(5); e != 5 || end != 30 {
		t.Fatalf("epoch 5 answers %d, %d; want 5, 30", e, end)
	}
	if got := epochFile(t, dir); got != "0\n2\n3 0\n5 30\n" {
		t.Fatalf("leader-epoch-checkpoint holds %q", got)
	}
	if err := l.BecomeLeader(5); err != nil || epochFile(t, dir) != "0\n2\n3 0\n5 30\n" {
		t.Fatalf("the same epoch again: %v, file %q", err, epochFile(t, dir))
	}
	res, err := l.Append(testBatch(t, 10, 20, 1))
	if err != nil {
		t.Fatal(err)
	}
	if b := readBatches(t, l, res.FirstOffset); len(b) != 1 || leaderEpochOf(t, b[0]) != 5 {
		t.Fatalf("the new leader's batch is not stamped with epoch 5")
	}
	if err := l.BecomeLeader(5); err != nil || l.LatestEpoch() != 5 {
		t.Fatalf("the same epoch after an append: %v, latest %d", err, l.LatestEpoch())
	}
	if e, end := l.EndOffsetForEpoch(5); e != 5 || end != 40 {
		t.Fatalf("epoch 5 answers %d, %d; want 5, 40", e, end)
	}
	for _, stale := range []int32{4, 0, -1} {
		if err := l.BecomeLeader(stale); !errors.Is(err, ErrStaleLeaderEpoch) || !strings.Contains(err.Error(), l.name) {
			t.Fatalf("BecomeLeader(%d) after 5: %v", stale, err)
		}
	}
	res, err = l.Append(testBatch(t, 1, 20, 1))
	if err != nil || leaderEpochOf(t, readBatches(t, l, res.FirstOffset)[0]) != 5 {
		t.Fatalf("a refused epoch changed the stamped one: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l = mustOpen(t, dir, Options{Logger: discardLogger})
	defer l.Close()
	if e, end := l.EndOffsetForEpoch(4); e != 3 || end != 30 {
		t.Fatalf("after reopen epoch 4 answers %d, %d; want 3, 30", e, end)
	}
	if e, end := l.EndOffsetForEpoch(5); e != 5 || end != l.EndOffset() {
		t.Fatalf("after reopen epoch 5 answers %d, %d; want 5, %d", e, end, l.EndOffset())
	}
	if err := l.BecomeLeader(4); !errors.Is(err, ErrStaleLeaderEpoch) {
		t.Fatalf("after reopen BecomeLeader(4): %v", err)
	}
}

func leaderEpochOf(t *testing.T, b []byte) int32 {
	t.Helper()
	h, err := checkStoredBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	return h.LeaderEpoch
}

// An epoch that wrote nothing starts where the next one does: the next
// assignment replaces it (LeaderEpochFileCache.assign removes the entries
// whose start offset is at or after the new one's). Such an entry at the
// log end does not outlive a reopen, as Kafka's LogLoader truncates the
// cache at the log end; the restarted leader records it again.
func TestBecomeLeaderReplacesAnEpochThatWroteNothing(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, Options{Logger: discardLogger})
	appendEpoch(t, l, 1, 1)
	for _, e := range []int32{2, 3} {
		if err := l.BecomeLeader(e); err != nil {
			t.Fatal(err)
		}
	}
	if got := epochFile(t, dir); got != "0\n2\n1 0\n3 10\n" {
		t.Fatalf("leader-epoch-checkpoint holds %q, want epoch 2 replaced by 3", got)
	}
	if e, end := l.EndOffsetForEpoch(2); e != 1 || end != 10 {
		t.Fatalf("epoch 2 answers %d, %d; want 1, 10", e, end)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, dir, Options{Logger: discardLogger})
	defer l.Close()
	if l.LatestEpoch() != 1 {
		t.Fatalf("after reopen the latest epoch is %d; the entry at the log end should go", l.LatestEpoch())
	}
	if err := l.BecomeLeader(3); err != nil {
		t.Fatal(err)
	}
	if e, end := l.EndOffsetForEpoch(2); e != 1 || end != 10 {
		t.Fatalf("after BecomeLeader again epoch 2 answers %d, %d; want 1, 10", e, end)
	}
}

// The epoch's record is durable when BecomeLeader returns: a machine crash
// right after it keeps the checkpoint; a failed checkpoint write changes
// nothing, and the log goes on in its old epoch.
func TestBecomeLeaderDurable(t *testing.T) {
	dir := filepath.Join(fastTempDir(t), "p-0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfs := newCrashFS(t, dir)
	l := mustOpen(t, dir, Options{Logger: discardLogger, FS: cfs})
	appendEpoch(t, l, 1, 2)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := l.BecomeLeader(2); err != nil {
		t.Fatal(err)
	}
	cfs.crash(crashPlan{})
	abandonCrashed(l)
	if got := epochFile(t, dir); got != "0\n2\n1 0\n2 20\n" {
		t.Fatalf("after the crash leader-epoch-checkpoint holds %q", got)
	}

	on := &atomic.Bool{}
	efs := newErrorFS(OSFS, failWhile(on, syscall.EIO, func(op fsOp) bool {
		return strings.HasSuffix(op.path, leaderEpochCheckpointFile+".tmp")
	}))
	l = mustOpen(t, dir, Options{Logger: discardLogger, FS: efs})
	defer l.Close()
	l.SetLeaderEpoch(1) // a restarted log stamps what it is told; here its old epoch
	on.Store(true)
	if err := l.BecomeLeader(3); !errors.Is(err, syscall.EIO) {
		t.Fatalf("BecomeLeader with a failing checkpoint: %v", err)
	}
	on.Store(false)
	if l.LatestEpoch() != 1 {
		t.Fatalf("a failed BecomeLeader left latest epoch %d", l.LatestEpoch())
	}
	res, err := l.Append(testBatch(t, 1, 20, 1))
	if err != nil || leaderEpochOf(t, readBatches(t, l, res.FirstOffset)[0]) != 1 {
		t.Fatalf("after a failed BecomeLeader: %v", err)
	}
	if err := l.BecomeLeader(3); err != nil || l.LatestEpoch() != 3 {
		t.Fatalf("BecomeLeader once the disk works: %v, latest %d", err, l.LatestEpoch())
	}
}

// A follower's log start offset follows its leader's: inside its log like
// DeleteRecordsBefore, never backwards, and past its log end by emptying
// the log and restarting it there (Kafka's truncateFullyAndStartAt).
func TestIncrementStartOffsetFollowsLeader(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Logger: discardLogger, SegmentBytes: 2 << 10}
	l := mustOpen(t, dir, opts)
	for e := int32(1); e <= 5; e++ {
		appendEpoch(t, l, e, 1) // epoch e wrote [10(e-1), 10e)
	}
	l.SetHighWatermark(15)
	if len(l.SegmentBases()) < 3 {
		t.Fatalf("want several segments, have %v", l.SegmentBases())
	}
	if got, err := l.IncrementStartOffset(0); err != nil || got != 0 {
		t.Fatalf("IncrementStartOffset(0): %d %v", got, err)
	}
	if got, err := l.IncrementStartOffset(23); err != nil || got != 23 {
		t.Fatalf("IncrementStartOffset(23): %d %v", got, err)
	}
	if _, err := l.Read(22, 1<<20, l.EndOffset()); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the new start: %v", err)
	}
	if bases := l.SegmentBases(); bases[0] > 23 || (len(bases) > 1 && bases[1] <= 23) {
		t.Fatalf("segments %v after moving the start to 23", bases)
	}
	if l.HighWatermark() != 23 {
		t.Fatalf("high watermark %d below the log start 23", l.HighWatermark())
	}
	// The cache starts at the new log start: epoch 3 from 23.
	if e, end := l.EndOffsetForEpoch(3); e != 3 || end != 30 {
		t.Fatalf("epoch 3 answers %d, %d; want 3, 30", e, end)
	}
	if e, end := l.EndOffsetForEpoch(2); e != 2 || end != 23 {
		t.Fatalf("epoch 2, now below the cache, answers %d, %d; want 2, 23", e, end)
	}
	if got, err := l.IncrementStartOffset(10); err != nil || got != 23 {
		t.Fatalf("IncrementStartOffset(10) after 23: %d %v", got, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, dir, opts)
	if l.StartOffset() != 23 || l.EndOffset() != 50 {
		t.Fatalf("after reopen the log holds [%d, %d), want [23, 50)", l.StartOffset(), l.EndOffset())
	}
	checkSequence(t, readAll(t, l, 23, 1<<20), 23, 27)

	// The leader's log start passed this replica's log end.
	if got, err := l.IncrementStartOffset(80); err != nil || got != 80 {
		t.Fatalf("IncrementStartOffset(80) on a log ending at 50: %d %v", got, err)
	}
	if l.EndOffset() != 80 || l.HighWatermark() != 80 || l.RecoveryPoint() != 80 || l.LatestEpoch() != -1 {
		t.Fatalf("after truncating fully: end %d, high watermark %d, recovery point %d, latest epoch %d",
			l.EndOffset(), l.HighWatermark(), l.RecoveryPoint(), l.LatestEpoch())
	}
	if bases := l.SegmentBases(); len(bases) != 1 || bases[0] != 80 {
		t.Fatalf("segments %v after truncating fully at 80", bases)
	}
	if _, err := l.AppendReplicated(replicated(testBatch(t, 5, 20, 1), 80, 6)); err != nil {
		t.Fatalf("the leader's next batch: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, dir, opts)
	defer l.Close()
	if l.StartOffset() != 80 || l.EndOffset() != 85 || l.LatestEpoch() != 6 {
		t.Fatalf("after reopen: [%d, %d), latest epoch %d", l.StartOffset(), l.EndOffset(), l.LatestEpoch())
	}
	checkSequence(t, readAll(t, l, 80, 1<<20), 80, 5)
}

// A machine crash right after a follower truncated fully to its leader's
// start leaves the log restarted there, none of its old records.
func TestIncrementStartOffsetPastEndCrash(t *testing.T) {
	dir := filepath.Join(fastTempDir(t), "p-0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfs := newCrashFS(t, dir)
	opts := Options{Logger: discardLogger, FS: cfs, SegmentBytes: 2 << 10}
	l := mustOpen(t, dir, opts)
	appendEpoch(t, l, 1, 4)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.IncrementStartOffset(100); err != nil {
		t.Fatal(err)
	}
	cfs.crash(crashPlan{})
	abandonCrashed(l)
	opts.FS = newCrashFS(t, dir)
	l = mustOpen(t, dir, opts)
	defer l.Close()
	if l.StartOffset() != 100 || l.EndOffset() != 100 || l.LatestEpoch() != -1 {
		t.Fatalf("after the crash: [%d, %d), latest epoch %d; want [100, 100), none", l.StartOffset(), l.EndOffset(), l.LatestEpoch())
	}
	if _, err := l.Read(0, 1<<20, l.EndOffset()); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("old records readable after the crash: %v", err)
	}
}

// The high watermark stays inside the log: clamped when set, pulled down by
// a truncation, pushed up by the log start offset.
func TestHighWatermarkStaysInsideTheLog(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{Logger: discardLogger})
	defer l.Close()
	if l.HighWatermark() != 0 {
		t.Fatalf("a new log's high watermark is %d", l.HighWatermark())
	}
	appendEpoch(t, l, 0, 3)
	for _, c := range []struct{ set, want int64 }{{40, 30}, {20, 20}, {-5, 0}, {25, 25}} {
		if got := l.SetHighWatermark(c.set); got != c.want || l.HighWatermark() != c.want {
			t.Fatalf("SetHighWatermark(%d) = %d, HighWatermark %d; want %d", c.set, got, l.HighWatermark(), c.want)
		}
	}
	if err := l.TruncateTo(10); err != nil || l.HighWatermark() != 10 {
		t.Fatalf("after TruncateTo(10): high watermark %d, %v", l.HighWatermark(), err)
	}
	appendEpoch(t, l, 0, 2) // [10, 30): the old high watermark 25 does not come back
	if l.HighWatermark() != 10 {
		t.Fatalf("appends moved the high watermark to %d", l.HighWatermark())
	}
	if _, err := l.DeleteRecordsBefore(20); err != nil || l.HighWatermark() != 20 {
		t.Fatalf("after DeleteRecordsBefore(20): high watermark %d, %v", l.HighWatermark(), err)
	}
	if err := l.TruncateTo(0); err != nil || l.HighWatermark() != 0 || l.EndOffset() != 0 {
		t.Fatalf("after TruncateTo(0): high watermark %d, end %d, %v", l.HighWatermark(), l.EndOffset(), err)
	}
}

// A former leader that recorded its epoch at its log end and wrote nothing
// in it loses that epoch when it truncates there as a follower, though no
// record goes: its new leader never had the epoch, and a restart must not
// bring it back.
func TestTruncateAtTheEndDropsAnEmptyEpoch(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, Options{Logger: discardLogger})
	appendEpoch(t, l, 3, 3) // epoch 3 wrote [0, 30)
	if err := l.BecomeLeader(5); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(30); err != nil {
		t.Fatal(err)
	}
	if got := l.LatestEpoch(); got != 3 || l.EndOffset() != 30 {
		t.Fatalf("after truncating at the end: latest epoch %d, end %d; want 3, 30", got, l.EndOffset())
	}
	if got := epochFile(t, dir); got != "0\n1\n3 0\n" {
		t.Fatalf("leader-epoch-checkpoint holds %q", got)
	}
	if err := l.TruncateTo(40); err != nil || l.LatestEpoch() != 3 {
		t.Fatalf("truncating past the end: %v, latest epoch %d", err, l.LatestEpoch())
	}
}

// EpochAt answers the epoch of the record at an offset from the epoch
// cache: the last epoch starting at or below it.
func TestEpochAt(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Options{Logger: discardLogger})
	appendEpoch(t, l, 3, 3) // epoch 3 wrote [0, 30)
	if err := l.BecomeLeader(5); err != nil {
		t.Fatal(err)
	}
	appendEpoch(t, l, 5, 1) // epoch 5 wrote [30, 40)
	for off, want := range map[int64]int32{0: 3, 29: 3, 30: 5, 39: 5, 100: 5} {
		if got := l.EpochAt(off); got != want {
			t.Errorf("EpochAt(%d) = %d, want %d", off, got, want)
		}
	}
}
