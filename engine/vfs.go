package engine

// The file-system seam. Every file operation of the engine goes through an
// FS, so tests can inject errors at any operation and simulate a machine
// crash that keeps only what an fsync covered. The index mappings and
// sendfile use the *os.File underneath (File.OS): indexes are derived data
// that recovery rebuilds, and sendfile only reads. An index file is opened
// through the FS (and closed) each time it is mapped, grown, trimmed or
// synced, so those operations can fail in tests; stores into the mapping
// and its msync cannot.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// FS is the file system the engine works in. OSFS is the real one.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Remove(name string) error
	Rename(oldpath, newpath string) error
	MkdirAll(path string, perm os.FileMode) error
	ReadDir(name string) ([]os.DirEntry, error)
	Stat(name string) (os.FileInfo, error)
	// SyncDir makes the creations, renames and removals in a directory
	// durable.
	SyncDir(name string) error
}

// File is an open file of an FS.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Writer
	io.Closer
	Name() string
	Stat() (os.FileInfo, error)
	// Sync makes the file's data (and the metadata needed to read it)
	// durable: fdatasync.
	Sync() error
	Truncate(size int64) error
	// Allocate reserves real blocks for [off, off+n), extending the file.
	Allocate(off, n int64) error
	// OS is the underlying open file, for memory maps and sendfile.
	OS() *os.File
}

// OSFS is the operating system's file system.
var OSFS FS = osFS{}

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}
func (osFS) Remove(name string) error                     { return os.Remove(name) }
func (osFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (osFS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }
func (osFS) ReadDir(name string) ([]os.DirEntry, error)   { return os.ReadDir(name) }
func (osFS) Stat(name string) (os.FileInfo, error)        { return os.Stat(name) }

func (osFS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

type osFile struct{ *os.File }

func (f osFile) OS() *os.File { return f.File }

func (f osFile) Sync() error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

func (f osFile) Allocate(off, n int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, off, n)
	if err == nil || (!errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOSYS)) {
		return err
	}
	// The file system cannot reserve space: write zeros instead (never
	// a sparse hole, which a mapped index would fault on when the disk is
	// full).
	var zeros [64 << 10]byte
	for n > 0 {
		c := min(n, int64(len(zeros)))
		if _, err := f.WriteAt(zeros[:c], off); err != nil {
			return err
		}
		off += c
		n -= c
	}
	return nil
}

// readFile reads a whole file through fs.
func readFile(fs FS, path string) ([]byte, error) {
	f, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.NewSectionReader(f, 0, 1<<62))
}

// removeAll removes a directory tree through fs.
func removeAll(fs FS, path string) error {
	ents, err := fs.ReadDir(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fs.Remove(path)
	}
	for _, e := range ents {
		if err := removeAll(fs, filepath.Join(path, e.Name())); err != nil {
			return err
		}
	}
	if err := fs.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("engine: remove %s: %w", path, err)
	}
	return nil
}
