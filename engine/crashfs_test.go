package engine

// crashFS: an FS over a real directory that knows, at every moment, what a
// machine crash would leave of it, in the manner of pebble's
// MemFS.CrashClone. Files live on disk (memory maps and sendfile need real
// descriptors); beside them crashFS keeps, per file, its content as of its
// last Sync, and per name whether the name is durable.
//
//   - File content is durable at File.Sync: a copy of the whole file is
//     taken then. Writes, Truncate, Allocate and O_TRUNC opens change the
//     live file only; a file never synced comes back empty.
//   - Names are durable at SyncDir of their directory: before that a crash
//     undoes creations (the file vanishes), removals (the file comes back
//     with its durable content) and renames (the file goes back).
//   - Index files (.index, .timeindex) are written through memory maps,
//     which bypass the seam: a crash drops them whole (derived data that
//     recovery rebuilds), or, if the plan says so, keeps them as of their
//     last Sync (msync then fdatasync), a state a real crash can also leave.
//   - With a writeback source in the plan, a crash also keeps a random
//     prefix of each file's unsynced writes, truncations and reservations,
//     the last write possibly torn at any byte: the kernel may have written
//     back some dirty pages before the machine died.
//
// The crash comes when the test calls crash, or when an operation an armed
// trigger picks starts (crashAfter: the n-th operation from now; crashWhen:
// the first that matches). It takes effect while no operation is running
// and closes every file opened through crashFS; after
// it every operation fails, so the abandoned engine's background work fails
// harmlessly and nothing it does reaches the directory. The directory is
// rewritten to the crash state with new files (new inodes), so stores into
// the abandoned engine's mappings land in unlinked files. A new crashFS over
// the same directory takes what it finds as durable.
//
// Directories themselves are not tracked (assumed durable), nor files the
// engine opens outside the seam (.lock): tests create the log directory
// first and keep to one directory's files. TestCrashFSModel, at the end,
// checks these rules.

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// errCrashed is what every operation returns after the crash.
var errCrashed = errors.New("crashfs: the machine crashed")

// crashPlan says what a crash leaves besides the synced state.
type crashPlan struct {
	keepIndexes bool       // keep index files as of their last Sync instead of dropping them
	writeback   *rand.Rand // non-nil: keep a random prefix of each file's unsynced changes
}

type crashFS struct {
	root string
	fs   FS

	// opMu is held shared by every operation for its whole length and
	// exclusively by crash, so no operation straddles the crash.
	opMu    sync.RWMutex
	crashed bool

	ops     atomic.Int64 // counted operations started (as errorFS counts them)
	trigger atomic.Int64 // crash when ops reaches it; 0: not armed
	when    atomic.Pointer[func(kind fsOpKind, path string) bool]
	plan    atomic.Pointer[crashPlan]

	mu      sync.Mutex
	live    map[string]*crashInode // names as they are on disk now
	durable map[string]*crashInode // names as a crash would leave them
	open    map[*crashFile]struct{}
	err     error // a failure of the crash itself
	dropped int   // unsynced writes the crash lost
}

// crashInode is one file: its durable content and its changes since.
type crashInode struct {
	mu      sync.Mutex // serializes changes and the copy taken at Sync
	synced  []byte     // content as of the last Sync
	pending []crashOp  // changes since, in order
}

type crashOp struct {
	kind fsOpKind // opWrite, opTruncate or opAllocate
	off  int64    // write: position; truncate: new size; allocate: new end
	data []byte   // write: the bytes written
}

// newCrashFS starts tracking root (an existing directory): every regular
// file in it is taken as durable with its current content.
func newCrashFS(tb testing.TB, root string) *crashFS {
	tb.Helper()
	c := &crashFS{
		root:    filepath.Clean(root),
		fs:      OSFS,
		live:    map[string]*crashInode{},
		durable: map[string]*crashInode{},
		open:    map[*crashFile]struct{}{},
	}
	err := filepath.WalkDir(c.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || d.Name() == ".lock" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		ino := &crashInode{synced: data}
		c.live[path], c.durable[path] = ino, ino
		return nil
	})
	if err != nil {
		tb.Fatalf("crashfs: scanning %s: %v", root, err)
	}
	return c
}

// crashAfter arms the crash to happen when the n-th operation from now
// (n >= 1) starts, before it runs.
func (c *crashFS) crashAfter(n int64, plan crashPlan) {
	c.plan.Store(&plan)
	c.trigger.Store(c.ops.Load() + n)
}

// crashWhen arms the crash to happen when an operation that match accepts
// starts, before it runs.
func (c *crashFS) crashWhen(match func(kind fsOpKind, path string) bool, plan crashPlan) {
	c.plan.Store(&plan)
	c.when.Store(&match)
}

// isCrashed reports whether the crash has happened.
func (c *crashFS) isCrashed() bool {
	c.opMu.RLock()
	defer c.opMu.RUnlock()
	return c.crashed
}

// crashError is a failure of the crash itself (rewriting the directory).
func (c *crashFS) crashError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// enter starts an operation of kind on path: it fires an armed crash that
// is due, then holds opMu shared until leave. counted operations are
// numbered (and only they can fire a crash, so kind and path matter only
// for them).
func (c *crashFS) enter(counted bool, kind fsOpKind, path string) error {
	if counted {
		n := c.ops.Add(1)
		if t := c.trigger.Load(); t > 0 && n >= t && c.trigger.CompareAndSwap(t, 0) {
			c.crash(*c.plan.Load())
		}
		if m := c.when.Load(); m != nil && (*m)(kind, path) && c.when.CompareAndSwap(m, nil) {
			c.crash(*c.plan.Load())
		}
	}
	c.opMu.RLock()
	if c.crashed {
		c.opMu.RUnlock()
		return errCrashed
	}
	return nil
}

func (c *crashFS) leave() { c.opMu.RUnlock() }

// crash turns the directory into what the machine would find on reboot.
// It waits for running operations; later ones fail. Only the first call
// does anything.
func (c *crashFS) crash(plan crashPlan) {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	if c.crashed {
		return
	}
	c.crashed = true
	c.mu.Lock()
	defer c.mu.Unlock()
	for f := range c.open {
		f.File.Close()
	}
	clear(c.open)
	var errs []error
	for path := range c.live {
		if err := os.Remove(path); err != nil {
			errs = append(errs, err)
		}
	}
	for path, ino := range c.durable {
		if isIndexPath(path) && !plan.keepIndexes {
			continue
		}
		data, kept := ino.crashContent(plan.writeback)
		c.dropped += ino.writes() - kept
		if err := os.WriteFile(path, data, 0o644); err != nil {
			errs = append(errs, err)
		}
	}
	c.err = errors.Join(errs...)
}

// droppedWrites is how many unsynced writes to files that survived the
// crash it lost.
func (c *crashFS) droppedWrites() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dropped
}

func (ino *crashInode) writes() int {
	n := 0
	for _, op := range ino.pending {
		if op.kind == opWrite {
			n++
		}
	}
	return n
}

func isIndexPath(path string) bool {
	return strings.HasSuffix(path, indexSuffix) || strings.HasSuffix(path, timeIndexSuffix)
}

// crashContent is the file's content after a crash: its synced content,
// and with writeback a random prefix of the changes since, the last write
// possibly torn. kept counts the writes kept whole.
func (ino *crashInode) crashContent(writeback *rand.Rand) (data []byte, kept int) {
	data = append([]byte(nil), ino.synced...)
	if writeback == nil || len(ino.pending) == 0 {
		return data, 0
	}
	k := writeback.IntN(len(ino.pending) + 1)
	for i, op := range ino.pending[:k] {
		switch op.kind {
		case opWrite:
			kept++
			w := op.data
			if i == k-1 && writeback.IntN(2) == 0 {
				w = w[:writeback.IntN(len(w)+1)]
				kept--
			}
			if end := op.off + int64(len(w)); end > int64(len(data)) {
				data = append(data, make([]byte, end-int64(len(data)))...)
			}
			copy(data[op.off:], w)
		case opTruncate:
			if op.off <= int64(len(data)) {
				data = data[:op.off]
			} else {
				data = append(data, make([]byte, op.off-int64(len(data)))...)
			}
		case opAllocate:
			if op.off > int64(len(data)) {
				data = append(data, make([]byte, op.off-int64(len(data)))...)
			}
		}
	}
	return data, kept
}

func (c *crashFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	name = filepath.Clean(name)
	if err := c.enter(flag&(os.O_CREATE|os.O_RDWR|os.O_WRONLY) != 0, opOpen, name); err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	defer c.leave()
	if flag&os.O_WRONLY != 0 {
		// Sync reads the file to copy it.
		flag = flag&^os.O_WRONLY | os.O_RDWR
	}
	// The name operation and the bookkeeping of live names happen under
	// c.mu together: an open racing a remove of the same name (a reader of
	// a producer snapshot the log is deleting) must not leave a live name
	// the disk no longer has.
	c.mu.Lock()
	f, err := c.fs.OpenFile(name, flag, perm)
	if err != nil {
		c.mu.Unlock()
		return nil, err
	}
	ino := c.live[name]
	if ino == nil {
		ino = &crashInode{}
		c.live[name] = ino
	}
	cf := &crashFile{File: f, fs: c, ino: ino}
	c.open[cf] = struct{}{}
	c.mu.Unlock()
	if flag&os.O_TRUNC != 0 {
		ino.mu.Lock()
		ino.pending = append(ino.pending, crashOp{kind: opTruncate})
		ino.mu.Unlock()
	}
	return cf, nil
}

func (c *crashFS) Remove(name string) error {
	name = filepath.Clean(name)
	if err := c.enter(true, opRemove, name); err != nil {
		return &os.PathError{Op: "remove", Path: name, Err: err}
	}
	defer c.leave()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.fs.Remove(name); err != nil {
		return err
	}
	delete(c.live, name)
	return nil
}

func (c *crashFS) Rename(oldpath, newpath string) error {
	oldpath, newpath = filepath.Clean(oldpath), filepath.Clean(newpath)
	if err := c.enter(true, opRename, oldpath); err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	defer c.leave()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.fs.Rename(oldpath, newpath); err != nil {
		return err
	}
	if ino, ok := c.live[oldpath]; ok {
		c.live[newpath] = ino
		delete(c.live, oldpath)
	}
	return nil
}

func (c *crashFS) MkdirAll(path string, perm os.FileMode) error {
	if err := c.enter(true, opMkdirAll, path); err != nil {
		return &os.PathError{Op: "mkdir", Path: path, Err: err}
	}
	defer c.leave()
	return c.fs.MkdirAll(path, perm)
}

func (c *crashFS) ReadDir(name string) ([]os.DirEntry, error) {
	if err := c.enter(false, opOpen, name); err != nil {
		return nil, &os.PathError{Op: "readdir", Path: name, Err: err}
	}
	defer c.leave()
	return c.fs.ReadDir(name)
}

func (c *crashFS) Stat(name string) (os.FileInfo, error) {
	if err := c.enter(false, opOpen, name); err != nil {
		return nil, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	defer c.leave()
	return c.fs.Stat(name)
}

// SyncDir makes the names in dir durable as they are now: created and
// renamed-to names point at their files, removed and renamed-from names
// are gone.
func (c *crashFS) SyncDir(name string) error {
	name = filepath.Clean(name)
	if err := c.enter(true, opSyncDir, name); err != nil {
		return &os.PathError{Op: "fsync", Path: name, Err: err}
	}
	defer c.leave()
	c.mu.Lock()
	defer c.mu.Unlock()
	for path, ino := range c.live {
		if filepath.Dir(path) == name {
			c.durable[path] = ino
		}
	}
	for path := range c.durable {
		if _, ok := c.live[path]; !ok && filepath.Dir(path) == name {
			delete(c.durable, path)
		}
	}
	return nil
}

// crashFile is a File of a crashFS.
type crashFile struct {
	File
	fs  *crashFS
	ino *crashInode
}

func (f *crashFile) Write(p []byte) (int, error) {
	if err := f.fs.enter(true, opWrite, f.Name()); err != nil {
		return 0, &os.PathError{Op: "write", Path: f.Name(), Err: err}
	}
	defer f.fs.leave()
	f.ino.mu.Lock()
	defer f.ino.mu.Unlock()
	off, err := f.OS().Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, err
	}
	n, err := f.File.Write(p)
	f.ino.pending = append(f.ino.pending, crashOp{kind: opWrite, off: off, data: append([]byte(nil), p[:n]...)})
	return n, err
}

func (f *crashFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.enter(true, opWrite, f.Name()); err != nil {
		return 0, &os.PathError{Op: "write", Path: f.Name(), Err: err}
	}
	defer f.fs.leave()
	f.ino.mu.Lock()
	defer f.ino.mu.Unlock()
	n, err := f.File.WriteAt(p, off)
	f.ino.pending = append(f.ino.pending, crashOp{kind: opWrite, off: off, data: append([]byte(nil), p[:n]...)})
	return n, err
}

// Sync makes the file's current content its durable content. No real
// fdatasync is needed: durability is what crashFS models.
func (f *crashFile) Sync() error {
	if err := f.fs.enter(true, opSync, f.Name()); err != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
	}
	defer f.fs.leave()
	f.ino.mu.Lock()
	defer f.ino.mu.Unlock()
	fi, err := f.File.Stat()
	if err != nil {
		return err
	}
	data := make([]byte, fi.Size())
	if n, err := f.File.ReadAt(data, 0); n < len(data) {
		return &os.PathError{Op: "fdatasync (crashfs copy)", Path: f.Name(), Err: err}
	}
	f.ino.synced, f.ino.pending = data, nil
	return nil
}

func (f *crashFile) Truncate(size int64) error {
	if err := f.fs.enter(true, opTruncate, f.Name()); err != nil {
		return &os.PathError{Op: "truncate", Path: f.Name(), Err: err}
	}
	defer f.fs.leave()
	f.ino.mu.Lock()
	defer f.ino.mu.Unlock()
	if err := f.File.Truncate(size); err != nil {
		return err
	}
	f.ino.pending = append(f.ino.pending, crashOp{kind: opTruncate, off: size})
	return nil
}

func (f *crashFile) Allocate(off, n int64) error {
	if err := f.fs.enter(true, opAllocate, f.Name()); err != nil {
		return &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
	}
	defer f.fs.leave()
	f.ino.mu.Lock()
	defer f.ino.mu.Unlock()
	if err := f.File.Allocate(off, n); err != nil {
		return err
	}
	f.ino.pending = append(f.ino.pending, crashOp{kind: opAllocate, off: off + n})
	return nil
}

// Close closes the file. One the crash closed already fails with the
// crash: an index file is opened for a moment to grow or trim it, and the
// crash may come between its open and its close.
func (f *crashFile) Close() error {
	f.fs.mu.Lock()
	delete(f.fs.open, f)
	f.fs.mu.Unlock()
	err := f.File.Close()
	if err != nil && f.fs.isCrashed() {
		return &os.PathError{Op: "close", Path: f.Name(), Err: errCrashed}
	}
	return err
}

// OS is the underlying file (memory maps and sendfile use it).
func (f *crashFile) OS() *os.File { return f.File.OS() }

// TestCrashFSModel checks the crash file system's rules on plain files:
// content is durable at Sync, names at SyncDir, index files are dropped,
// and nothing runs after the crash.
func TestCrashFSModel(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "old"), []byte("old content"))
	mustWrite(t, filepath.Join(dir, "gone"), []byte("removed, not synced"))
	mustWrite(t, filepath.Join(dir, "moved"), []byte("renamed, not synced"))
	mustWrite(t, filepath.Join(dir, "cut"), []byte("truncated, not synced"))
	mustWrite(t, filepath.Join(dir, "00000000000000000000.index"), []byte("index"))
	c := newCrashFS(t, dir)
	p := func(name string) string { return filepath.Join(dir, name) }
	create := func(name, data string, sync bool) File {
		t.Helper()
		f, err := c.OpenFile(p(name), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte(data), 0); err != nil {
			t.Fatal(err)
		}
		if sync {
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		return f
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Durable names: synced after their files were created.
	f := create("synced", "synced", true)
	create("empty-name-only", "written, only the name synced", false)
	renamed := create("renamed-durably", "renamed and synced", true)
	must(c.SyncDir(dir))
	must(c.Rename(p("renamed-durably"), p("renamed-to")))
	must(c.SyncDir(dir))
	must(renamed.Sync())
	// After the last directory sync: none of this survives.
	create("unsynced", "never synced", false)
	create("synced-no-dir", "synced, name not", true)
	_, err := f.WriteAt([]byte(" and more"), 6)
	must(err)
	must(c.Remove(p("gone")))
	must(c.Rename(p("moved"), p("moved-to")))
	g, err := c.OpenFile(p("cut"), os.O_RDWR, 0)
	must(err)
	must(g.Truncate(3))
	must(g.Allocate(0, 1<<20))
	h, err := c.OpenFile(p("old"), os.O_WRONLY|os.O_TRUNC, 0)
	must(err)
	_, err = h.Write([]byte("new"))
	must(err)

	c.crash(crashPlan{})
	if err := c.crashError(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"synced":          "synced",
		"empty-name-only": "",
		"old":             "old content",
		"gone":            "removed, not synced",
		"moved":           "renamed, not synced",
		"cut":             "truncated, not synced",
		"renamed-to":      "renamed and synced",
		".lock":           "",
	}
	mustWrite(t, p(".lock"), nil) // outside the seam: left alone
	ents, err := os.ReadDir(dir)
	must(err)
	got := map[string]string{}
	for _, e := range ents {
		got[e.Name()] = string(mustRead(t, p(e.Name())))
	}
	if len(got) != len(want) {
		t.Errorf("after the crash the directory holds %v, want %v", got, want)
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || g != w {
			t.Errorf("after the crash %s holds %q (present %v), want %q", name, g, ok, w)
		}
	}
	if _, err := c.OpenFile(p("x"), os.O_RDWR|os.O_CREATE, 0o644); !errors.Is(err, errCrashed) {
		t.Errorf("open after the crash: %v, want errCrashed", err)
	}
	if _, err := f.WriteAt([]byte("x"), 0); !errors.Is(err, errCrashed) {
		t.Errorf("write after the crash: %v, want errCrashed", err)
	}

	// An armed crash fires when its operation starts, before it runs;
	// with writeback, a prefix of the unsynced writes survives, the last
	// one possibly torn.
	c = newCrashFS(t, dir)
	f, err = c.OpenFile(p("synced"), os.O_RDWR, 0)
	must(err)
	c.crashAfter(4, crashPlan{writeback: rand.New(rand.NewPCG(7, 7))})
	for i := range 3 {
		_, err := f.WriteAt(bytes.Repeat([]byte{'a' + byte(i)}, 10), int64(6+10*i))
		must(err)
	}
	if _, err := f.WriteAt([]byte("never"), 0); !errors.Is(err, errCrashed) {
		t.Fatalf("the armed operation: %v, want errCrashed", err)
	}
	kept := string(mustRead(t, p("synced")))
	full := "synced" + strings.Repeat("a", 10) + strings.Repeat("b", 10) + strings.Repeat("c", 10)
	if !strings.HasPrefix(full, kept) || len(kept) < len("synced") {
		t.Fatalf("with writeback the file holds %q, not a prefix of %q", kept, full)
	}
	t.Logf("writeback kept %q", kept)
}
