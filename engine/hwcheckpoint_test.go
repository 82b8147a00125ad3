package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func openTestStore(t *testing.T, dir string, fs FS) *Store {
	t.Helper()
	st, err := OpenStore(dir, StoreOptions{Log: Options{Logger: discardLogger, FS: fs}})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func storeLogs(t *testing.T, st *Store, tps ...Partition) []*Log {
	t.Helper()
	logs, err := st.CreateLogs(NewTopicID(), tps...)
	if err != nil {
		t.Fatal(err)
	}
	return logs
}

func storeHW(t *testing.T, st *Store, tp Partition) int64 {
	t.Helper()
	l, _, ok := st.Log(tp)
	if !ok {
		t.Fatalf("store has no %v", tp)
	}
	return l.HighWatermark()
}

// The high watermarks go to replication-offset-checkpoint in Kafka's bytes,
// with Checkpoint and at a clean Close, and a reopened store starts from
// them. A file as Kafka writes it (any order) reads the same.
func TestHighWatermarkCheckpointRoundTrip(t *testing.T) {
	dir := t.TempDir()
	st := openTestStore(t, dir, nil)
	o0, o1, ab := Partition{"orders", 0}, Partition{"orders", 1}, Partition{"a-b", 3}
	logs := storeLogs(t, st, o0, o1)
	logs = append(logs, storeLogs(t, st, ab)...)
	for i, n := range []int{15, 5, 7} {
		if _, err := logs[i].Append(testBatch(t, n, 10, 1)); err != nil {
			t.Fatal(err)
		}
	}
	logs[0].SetHighWatermark(10)
	logs[1].SetHighWatermark(99) // past its end: 5
	logs[2].SetHighWatermark(7)
	if err := st.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, highWatermarkFile)
	if data, err := os.ReadFile(path); err != nil || string(data) != "0\n3\na-b 3 7\norders 0 10\norders 1 5\n" {
		t.Fatalf("replication-offset-checkpoint holds %q (%v)", data, err)
	}
	logs[0].SetHighWatermark(12)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != "0\n3\na-b 3 7\norders 0 12\norders 1 5\n" {
		t.Fatalf("after Close replication-offset-checkpoint holds %q (%v)", data, err)
	}

	st = openTestStore(t, dir, nil)
	for tp, want := range map[Partition]int64{o0: 12, o1: 5, ab: 7} {
		if got := storeHW(t, st, tp); got != want {
			t.Fatalf("after reopen %v has high watermark %d, want %d", tp, got, want)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// As Kafka writes it: its own order, and a partition this directory
	// does not hold.
	kafka := "0\n4\norders 1 3\ngone 0 77\na-b 3 2\norders 0 9\n"
	if err := os.WriteFile(path, []byte(kafka), 0o644); err != nil {
		t.Fatal(err)
	}
	st = openTestStore(t, dir, nil)
	defer st.Close()
	for tp, want := range map[Partition]int64{o0: 9, o1: 3, ab: 2} {
		if got := storeHW(t, st, tp); got != want {
			t.Fatalf("from Kafka's file %v has high watermark %d, want %d", tp, got, want)
		}
	}
}

// The checkpoint is not rewritten while no high watermark moves: a store
// whose partitions are idle costs no fsync for it.
func TestHighWatermarkCheckpointUnchangedNotWritten(t *testing.T) {
	dir := t.TempDir()
	efs := newErrorFS(OSFS, nil)
	st := openTestStore(t, dir, efs)
	defer st.Close()
	logs := storeLogs(t, st, Partition{"t", 0})
	if _, err := logs[0].Append(testBatch(t, 4, 10, 1)); err != nil {
		t.Fatal(err)
	}
	logs[0].SetHighWatermark(4)
	if err := st.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, highWatermarkFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	before := efs.syncs.Load()
	if err := st.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	// The recovery-point checkpoint is rewritten (two fsyncs); this one not.
	if got := efs.syncs.Load() - before; got != 2 {
		t.Fatalf("an unchanged checkpoint cost %d fsyncs, want 2 (the recovery points')", got)
	}
	if fi2, err := os.Stat(path); err != nil || !os.SameFile(fi, fi2) {
		t.Fatalf("replication-offset-checkpoint replaced though unchanged (%v)", err)
	}
	logs[0].SetHighWatermark(3)
	if err := st.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != "0\n1\nt 0 3\n" {
		t.Fatalf("after a change the checkpoint holds %q (%v)", data, err)
	}
}

// A machine crash that loses the log's unflushed tail leaves a checkpointed
// high watermark above the recovered log end: it comes back clamped to it.
func TestHighWatermarkClampedAfterCrash(t *testing.T) {
	dir := fastTempDir(t)
	cfs := newCrashFS(t, dir)
	st := openTestStore(t, dir, cfs)
	tp := Partition{"t", 0}
	l := storeLogs(t, st, tp)[0]
	if _, err := l.Append(testBatch(t, 10, 10, 1)); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(testBatch(t, 10, 10, 1)); err != nil { // never synced
		t.Fatal(err)
	}
	l.SetHighWatermark(20)
	if err := st.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	cfs.crash(crashPlan{})
	st.Close() // fails: the machine is gone
	if data, err := os.ReadFile(filepath.Join(dir, highWatermarkFile)); err != nil || string(data) != "0\n1\nt 0 20\n" {
		t.Fatalf("after the crash replication-offset-checkpoint holds %q (%v)", data, err)
	}

	st = openTestStore(t, dir, newCrashFS(t, dir))
	defer st.Close()
	l, _, _ = st.Log(tp)
	if l.EndOffset() != 10 || l.HighWatermark() != 10 {
		t.Fatalf("after the crash the log ends at %d with high watermark %d; want 10 and 10", l.EndOffset(), l.HighWatermark())
	}
}

// A missing or empty checkpoint is all zero; a damaged one fails the open
// with an error naming the file and line (Kafka takes the log directory
// offline).
func TestHighWatermarkCheckpointDamaged(t *testing.T) {
	dir := t.TempDir()
	st := openTestStore(t, dir, nil)
	l := storeLogs(t, st, Partition{"t", 0})[0]
	if _, err := l.Append(testBatch(t, 10, 10, 1)); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, highWatermarkFile)
	for _, content := range []string{"", "0\n0\n"} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		st := openTestStore(t, dir, nil)
		if got := storeHW(t, st, Partition{"t", 0}); got != 0 {
			t.Fatalf("checkpoint %q gives high watermark %d", content, got)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(path)
	st = openTestStore(t, dir, nil)
	if got := storeHW(t, st, Partition{"t", 0}); got != 0 {
		t.Fatalf("no checkpoint gives high watermark %d", got)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		content string
		line    int
	}{
		{"1\n1\nt 0 5\n", 1},           // unknown version
		{"0\nthree\nt 0 5\n", 2},       // bad count
		{"0\n1\nt 0\n", 3},             // two fields
		{"0\n1\nt zero 5\n", 3},        // partition not a number
		{"0\n1\nt 0 5x\n", 3},          // offset not a number
		{"0\n2\nt 0 5\n", 4},           // fewer entries than the count
		{"0\n1\nt 0 5\nt 1 6\n", 4},    // more
		{"0\n1\nt 0 5 extra\n", 3},     // four fields
		{"0\n1\nt 99999999999 5\n", 3}, // partition past int32
	} {
		if err := os.WriteFile(path, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		st, err := OpenStore(dir, StoreOptions{Log: Options{Logger: discardLogger}})
		if err == nil {
			st.Close()
			t.Fatalf("checkpoint %q opened", c.content)
		}
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), fmt.Sprintf(" line %d:", c.line)) {
			t.Fatalf("checkpoint %q: %v; want ErrCorrupt naming %s line %d", c.content, err, path, c.line)
		}
	}
}
