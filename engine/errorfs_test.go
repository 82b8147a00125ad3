package engine

// errorFS: an FS wrapper that numbers the operations that change the file
// system or make it durable, counts fsyncs, and fails the operations an
// injector picks, in the manner of pebble's errorfs. Fault-injection tests
// fail operation N for N = 0, 1, 2, ... until a run succeeds; the ENOSPC
// test fails every reservation and write while the "disk" is full; the
// durability benchmark counts fsyncs through it without injecting anything.
//
// Counted operations: OpenFile when it may create or write (O_CREATE,
// O_RDWR, O_WRONLY), Remove, Rename, MkdirAll, SyncDir, and on files Write,
// WriteAt, Sync, Truncate and Allocate. Reads, Stat, ReadDir and Close are
// neither counted nor failed. Stores through a memory map (the indexes) and
// their msync bypass the seam and are not seen; the opens, fallocates,
// truncations and fdatasyncs that grow, trim and flush an index file are
// counted (index.go opens the file through the FS for each).

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// fsOpKind names a counted operation.
type fsOpKind uint8

const (
	opOpen fsOpKind = iota
	opRemove
	opRename
	opMkdirAll
	opSyncDir
	opWrite // Write and WriteAt
	opSync
	opTruncate
	opAllocate
)

var fsOpNames = [...]string{"open", "remove", "rename", "mkdirall", "syncdir", "write", "sync", "truncate", "allocate"}

func (k fsOpKind) String() string { return fsOpNames[k] }

// fsOp describes one counted operation: its number (from 0, in the order
// operations start), kind and path (the old path of a rename).
type fsOp struct {
	n    int64
	kind fsOpKind
	path string
}

func (op fsOp) String() string { return fmt.Sprintf("op %d (%s %s)", op.n, op.kind, op.path) }

// injectedError is the error errorFS returns for a failed operation. It
// unwraps to its errno, so callers see what a real failure would give them
// (errors.Is(err, syscall.EIO)), and tests find it with errors.As.
type injectedError struct {
	op    fsOp
	errno syscall.Errno
}

func (e *injectedError) Error() string {
	return fmt.Sprintf("injected %s at %s", e.errno.Error(), e.op)
}
func (e *injectedError) Unwrap() error { return e.errno }

// injector decides whether op fails: it returns the errno to fail it with,
// or 0.
type injector func(op fsOp) syscall.Errno

// failOpAt fails operation n, once, with errno.
func failOpAt(n int64, errno syscall.Errno) injector {
	return func(op fsOp) syscall.Errno {
		if op.n == n {
			return errno
		}
		return 0
	}
}

// failWhile fails every operation that match accepts with errno while on
// is set.
func failWhile(on *atomic.Bool, errno syscall.Errno, match func(op fsOp) bool) injector {
	return func(op fsOp) syscall.Errno {
		if on.Load() && match(op) {
			return errno
		}
		return 0
	}
}

// errorFS wraps an FS, counting operations and injecting errors.
type errorFS struct {
	fs     FS
	inject injector // nil: never fail

	ops      atomic.Int64 // counted operations started
	syncs    atomic.Int64 // File.Sync and SyncDir calls (fsyncs)
	inFlight atomic.Int64 // fsyncs running now
	maxSync  atomic.Int64 // most fsyncs seen running at once

	mu       sync.Mutex
	injected []fsOp // operations that were failed
}

func newErrorFS(fs FS, inject injector) *errorFS {
	return &errorFS{fs: fs, inject: inject}
}

// begin numbers an operation and returns the injected error for it, if any.
func (e *errorFS) begin(kind fsOpKind, path string) error {
	op := fsOp{n: e.ops.Add(1) - 1, kind: kind, path: path}
	if e.inject == nil {
		return nil
	}
	errno := e.inject(op)
	if errno == 0 {
		return nil
	}
	e.mu.Lock()
	e.injected = append(e.injected, op)
	e.mu.Unlock()
	return &injectedError{op: op, errno: errno}
}

// failures returns the operations failed so far.
func (e *errorFS) failures() []fsOp {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]fsOp(nil), e.injected...)
}

// timeSync runs an fsync, keeping the count and the most seen at once.
func (e *errorFS) timeSync(sync func() error) error {
	e.syncs.Add(1)
	n := e.inFlight.Add(1)
	for {
		m := e.maxSync.Load()
		if n <= m || e.maxSync.CompareAndSwap(m, n) {
			break
		}
	}
	defer e.inFlight.Add(-1)
	return sync()
}

func (e *errorFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if flag&(os.O_CREATE|os.O_RDWR|os.O_WRONLY) != 0 {
		if err := e.begin(opOpen, name); err != nil {
			return nil, &os.PathError{Op: "open", Path: name, Err: err}
		}
	}
	f, err := e.fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &errorFile{File: f, fs: e}, nil
}

func (e *errorFS) Remove(name string) error {
	if err := e.begin(opRemove, name); err != nil {
		return &os.PathError{Op: "remove", Path: name, Err: err}
	}
	return e.fs.Remove(name)
}

func (e *errorFS) Rename(oldpath, newpath string) error {
	if err := e.begin(opRename, oldpath); err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return e.fs.Rename(oldpath, newpath)
}

func (e *errorFS) MkdirAll(path string, perm os.FileMode) error {
	if err := e.begin(opMkdirAll, path); err != nil {
		return &os.PathError{Op: "mkdir", Path: path, Err: err}
	}
	return e.fs.MkdirAll(path, perm)
}

func (e *errorFS) ReadDir(name string) ([]os.DirEntry, error) { return e.fs.ReadDir(name) }
func (e *errorFS) Stat(name string) (os.FileInfo, error)      { return e.fs.Stat(name) }

func (e *errorFS) SyncDir(name string) error {
	if err := e.begin(opSyncDir, name); err != nil {
		return &os.PathError{Op: "fsync", Path: name, Err: err}
	}
	return e.timeSync(func() error { return e.fs.SyncDir(name) })
}

// errorFile is a File of an errorFS. A failed write first writes half of
// its bytes, as a write cut short by the failure may.
type errorFile struct {
	File
	fs *errorFS
}

func (f *errorFile) Write(p []byte) (int, error) {
	if err := f.fs.begin(opWrite, f.Name()); err != nil {
		n, _ := f.File.Write(p[:len(p)/2])
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: err}
	}
	return f.File.Write(p)
}

func (f *errorFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.begin(opWrite, f.Name()); err != nil {
		n, _ := f.File.WriteAt(p[:len(p)/2], off)
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: err}
	}
	return f.File.WriteAt(p, off)
}

func (f *errorFile) Sync() error {
	if err := f.fs.begin(opSync, f.Name()); err != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
	}
	return f.fs.timeSync(f.File.Sync)
}

func (f *errorFile) Truncate(size int64) error {
	if err := f.fs.begin(opTruncate, f.Name()); err != nil {
		return &os.PathError{Op: "truncate", Path: f.Name(), Err: err}
	}
	return f.File.Truncate(size)
}

func (f *errorFile) Allocate(off, n int64) error {
	if err := f.fs.begin(opAllocate, f.Name()); err != nil {
		return &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
	}
	return f.File.Allocate(off, n)
}

// OS is the underlying file (memory maps and sendfile use it).
func (f *errorFile) OS() *os.File { return f.File.OS() }
