package engine

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func openEpochs(t *testing.T, dir string) *epochCache {
	t.Helper()
	c, err := openEpochCache(OSFS, dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkEpochs compares the cache, the cache reopened from its checkpoint
// and the checkpoint's text with want.
func checkEpochs(t *testing.T, c *epochCache, dir string, want ...epochEntry) {
	t.Helper()
	if got := c.all(); !slices.Equal(got, want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	if got := openEpochs(t, dir).all(); !slices.Equal(got, want) {
		t.Fatalf("reopened: entries %v, want %v", got, want)
	}
}

func TestEpochCacheAssign(t *testing.T) {
	dir := t.TempDir()
	c := openEpochs(t, dir)
	if _, _, ok := c.latest(); ok {
		t.Fatal("empty cache has a latest epoch")
	}
	if e, o := c.endOffsetFor(0, 10); e != -1 || o != -1 {
		t.Fatalf("empty cache: %d, %d", e, o)
	}
	if _, err := os.Stat(filepath.Join(dir, leaderEpochCheckpointFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("an empty cache wrote a checkpoint")
	}

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.assign(0, 0))
	must(c.assign(2, 10))
	must(c.assign(5, 30))
	checkEpochs(t, c, dir, epochEntry{0, 0}, epochEntry{2, 10}, epochEntry{5, 30})
	data, err := os.ReadFile(filepath.Join(dir, leaderEpochCheckpointFile))
	if err != nil || string(data) != "0\n3\n0 0\n2 10\n5 30\n" {
		t.Fatalf("checkpoint %q, %v", data, err)
	}
	if e, o, ok := c.latest(); !ok || e != 5 || o != 30 {
		t.Fatalf("latest %d, %d, %t", e, o, ok)
	}

	// The latest epoch again at a later offset changes nothing and writes
	// nothing.
	must(os.Remove(filepath.Join(dir, leaderEpochCheckpointFile)))
	must(c.assign(5, 31))
	must(c.assign(5, 1000))
	if _, err := os.Stat(filepath.Join(dir, leaderEpochCheckpointFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a no-op assign wrote the checkpoint")
	}
	// No epoch (-1) is ignored.
	must(c.assign(-1, 7))

	// The latest epoch starting earlier replaces it (Kafka: a leader's
	// epoch start assigned again after truncation).
	must(c.assign(5, 20))
	checkEpochs(t, c, dir, epochEntry{0, 0}, epochEntry{2, 10}, epochEntry{5, 20})

	// A lower epoch removes the entries it contradicts.
	must(c.assign(3, 25))
	checkEpochs(t, c, dir, epochEntry{0, 0}, epochEntry{2, 10}, epochEntry{3, 25})
	must(c.assign(4, 5))
	checkEpochs(t, c, dir, epochEntry{0, 0}, epochEntry{4, 5})

	// A higher epoch at the same offset as the latest replaces it: no
	// record was written in the latest epoch.
	must(c.assign(6, 5))
	checkEpochs(t, c, dir, epochEntry{0, 0}, epochEntry{6, 5})

	if err := c.assign(7, -1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("negative start offset: %v", err)
	}
}

func TestEpochCacheEndOffsetFor(t *testing.T) {
	dir := t.TempDir()
	c := openEpochs(t, dir)
	for _, e := range []epochEntry{{1, 0}, {3, 100}, {6, 250}} {
		if err := c.assign(e.epoch, e.start); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		epoch, wantEpoch int32
		wantEnd          int64
	}{
		{-1, -1, -1}, // undefined
		{0, 0, 0},    // below every epoch: the requested epoch, the first start offset
		{1, 1, 100},  // a known epoch ends where the next begins
		{2, 1, 100},  // unknown, between 1 and 3: epoch 1's end
		{3, 3, 250},
		{4, 3, 250},
		{5, 3, 250},
		{6, 6, 400}, // the latest: the log end
		{7, -1, -1}, // above every epoch
		{1 << 30, -1, -1},
	} {
		e, end := c.endOffsetFor(tc.epoch, 400)
		if e != tc.wantEpoch || end != tc.wantEnd {
			t.Errorf("endOffsetFor(%d) = %d, %d; want %d, %d", tc.epoch, e, end, tc.wantEpoch, tc.wantEnd)
		}
	}
	// One entry.
	c2 := openEpochs(t, t.TempDir())
	c2.assign(4, 10)
	for _, tc := range []struct {
		epoch, wantEpoch int32
		wantEnd          int64
	}{{4, 4, 50}, {3, 3, 10}, {5, -1, -1}} {
		if e, end := c2.endOffsetFor(tc.epoch, 50); e != tc.wantEpoch || end != tc.wantEnd {
			t.Errorf("one entry: endOffsetFor(%d) = %d, %d; want %d, %d", tc.epoch, e, end, tc.wantEpoch, tc.wantEnd)
		}
	}
}

func TestEpochCacheTruncate(t *testing.T) {
	setup := func(t *testing.T) (*epochCache, string) {
		dir := t.TempDir()
		c := openEpochs(t, dir)
		for _, e := range []epochEntry{{1, 0}, {3, 100}, {6, 250}} {
			if err := c.assign(e.epoch, e.start); err != nil {
				t.Fatal(err)
			}
		}
		return c, dir
	}
	t.Run("from end", func(t *testing.T) {
		c, dir := setup(t)
		for _, tc := range []struct {
			end  int64
			want []epochEntry
		}{
			{1000, []epochEntry{{1, 0}, {3, 100}, {6, 250}}},
			{251, []epochEntry{{1, 0}, {3, 100}, {6, 250}}},
			{250, []epochEntry{{1, 0}, {3, 100}}},
			{101, []epochEntry{{1, 0}, {3, 100}}},
			{-1, []epochEntry{{1, 0}, {3, 100}}}, // ignored, as Kafka
			{100, []epochEntry{{1, 0}}},
			{0, nil},
		} {
			if err := c.truncateFromEnd(tc.end); err != nil {
				t.Fatal(err)
			}
			checkEpochs(t, c, dir, tc.want...)
		}
		// After truncation the epoch start can be assigned again.
		if err := c.assign(7, 0); err != nil {
			t.Fatal(err)
		}
		checkEpochs(t, c, dir, epochEntry{7, 0})
	})
	t.Run("from start", func(t *testing.T) {
		for _, tc := range []struct {
			start int64
			want  []epochEntry
		}{
			{0, []epochEntry{{1, 0}, {3, 100}, {6, 250}}},
			{50, []epochEntry{{1, 50}, {3, 100}, {6, 250}}},
			{100, []epochEntry{{3, 100}, {6, 250}}},
			{120, []epochEntry{{3, 120}, {6, 250}}},
			{300, []epochEntry{{6, 300}}},
		} {
			c, dir := setup(t)
			if err := c.truncateFromStart(tc.start); err != nil {
				t.Fatal(err)
			}
			checkEpochs(t, c, dir, tc.want...)
		}
	})
	t.Run("clear", func(t *testing.T) {
		c, dir := setup(t)
		if err := c.clear(); err != nil {
			t.Fatal(err)
		}
		checkEpochs(t, c, dir)
		data, _ := os.ReadFile(filepath.Join(dir, leaderEpochCheckpointFile))
		if string(data) != "0\n0\n" {
			t.Fatalf("checkpoint %q", data)
		}
	})
}

func TestEpochCacheCheckpointFile(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		line          int // 0: loads
		want          []epochEntry
	}{
		{"empty file", "", 0, nil},
		{"no entries", "0\n0\n", 0, nil},
		{"white space as Kafka splits it", "0\n2\n3\t 40\n 5 90 \n", 0, []epochEntry{{3, 40}, {5, 90}}},
		{"no final newline", "0\n1\n2 7", 0, []epochEntry{{2, 7}}},
		{"entries that do not increase replay as assignments", "0\n3\n1 0\n4 50\n2 60\n", 0, []epochEntry{{1, 0}, {2, 60}}},
		{"unknown version", "1\n0\n", 1, nil},
		{"bad count", "0\nx\n", 2, nil},
		{"negative count", "0\n-1\n", 2, nil},
		{"missing count", "0\n", 2, nil},
		{"missing entry", "0\n2\n1 0\n", 4, nil},
		{"three fields", "0\n1\n1 0 7\n", 3, nil},
		{"one field", "0\n1\n17\n", 3, nil},
		{"not numbers", "0\n1\nabc def\n", 3, nil},
		{"negative offset", "0\n1\n1 -5\n", 3, nil},
		{"negative epoch", "0\n1\n-2 5\n", 3, nil},
		{"epoch beyond int32", "0\n1\n4294967296 5\n", 3, nil},
		{"more entries than counted", "0\n1\n1 0\n2 5\n", 4, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, leaderEpochCheckpointFile)
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := openEpochCache(OSFS, dir)
			if tc.line == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if got := c.all(); !slices.Equal(got, tc.want) {
					t.Fatalf("entries %v, want %v", got, tc.want)
				}
				return
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err %v, want ErrCorrupt", err)
			}
			for _, want := range []string{path, "line " + string(rune('0'+tc.line)) + ":"} {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("error %q does not name %q", err, want)
				}
			}
		})
	}
}

// failingFS fails creating files whose name ends in fail.
type failingFS struct {
	FS
	fail string
}

var errInjected = errors.New("injected failure")

func (f failingFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if f.fail != "" && strings.HasSuffix(name, f.fail) && flag&os.O_CREATE != 0 {
		return nil, &os.PathError{Op: "open", Path: name, Err: errInjected}
	}
	return f.FS.OpenFile(name, flag, perm)
}

func TestEpochCacheWriteFailure(t *testing.T) {
	dir := t.TempDir()
	c, err := openEpochCache(failingFS{FS: OSFS, fail: ".tmp"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.assign(1, 0); !errors.Is(err, errInjected) {
		t.Fatalf("err %v", err)
	}
	if len(c.all()) != 0 {
		t.Fatal("a failed write changed the cache")
	}
	c.fs = OSFS
	if err := c.assign(1, 0); err != nil {
		t.Fatal(err)
	}
	c.fs = failingFS{FS: OSFS, fail: ".tmp"}
	if err := c.truncateFromEnd(0); !errors.Is(err, errInjected) || len(c.all()) != 1 {
		t.Fatalf("err %v, %v", err, c.all())
	}
}

func TestEpochCacheConcurrent(t *testing.T) {
	c := openEpochs(t, t.TempDir())
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				e, off, ok := c.latest()
				if ok {
					if ge, end := c.endOffsetFor(e, off+10); ge != e || end != off+10 {
						t.Errorf("endOffsetFor(latest %d) = %d, %d", e, ge, end)
						return
					}
				}
			}
		}()
	}
	for i := range int32(10) {
		if err := c.assign(i, int64(i)*10); err != nil {
			t.Error(err)
		}
		for j := range int64(10) {
			c.assign(i, int64(i)*10+j)
		}
	}
	close(stop)
	wg.Wait()
	if e, off, _ := c.latest(); e != 9 || off != 90 {
		t.Fatalf("latest %d, %d", e, off)
	}
}

func TestEpochCacheAssignAllocs(t *testing.T) {
	c := openEpochs(t, t.TempDir())
	c.assign(3, 100)
	off := int64(100)
	if allocs := testing.AllocsPerRun(100, func() {
		off++
		if err := c.assign(3, off); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Fatalf("assigning the current epoch allocates %.1f times", allocs)
	}
}
