package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// File naming. A segment is three files named by its base offset, 20 digits,
// zero-padded, as Kafka names them.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	deletedSuffix   = ".deleted" // a segment file waiting for its readers before removal
)

func segmentName(dir string, base int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, suffix))
}

// parseSegmentName returns the base offset of a "<20 digits>.log" name.
func parseSegmentName(name, suffix string) (int64, bool) {
	if len(name) != 20+len(suffix) || name[20:] != suffix {
		return 0, false
	}
	v, err := strconv.ParseInt(name[:20], 10, 64)
	if err != nil || v < 0 {
		return 0, false
	}
	return v, true
}

// allocate reserves real blocks for [off, off+n) of f, extending its size,
// so that later writes there never extend the file's block map and a store
// through a mapping of that range cannot fault on a full disk. Errors name
// the file.
func allocate(f File, off, n int64) error {
	if n <= 0 {
		return nil
	}
	if err := f.Allocate(off, n); err != nil {
		return fmt.Errorf("engine: fallocate %s [%d, %d): %w", f.Name(), off, off+n, err)
	}
	return nil
}

// datasync flushes f's data (and the metadata needed to read it) to disk.
func datasync(f File) error {
	if err := f.Sync(); err != nil {
		return fmt.Errorf("engine: fdatasync %s: %w", f.Name(), err)
	}
	return nil
}

// syncDir fsyncs a directory so that file creations, renames and removals in
// it survive a machine crash.
func syncDir(fs FS, dir string) error {
	if err := fs.SyncDir(dir); err != nil {
		return fmt.Errorf("engine: fsync dir %s: %w", dir, err)
	}
	return nil
}

// writeFileAtomic replaces path with data: write a temporary file, fsync it,
// rename it over path, fsync the directory. A crash leaves either the old or
// the new content, never a mix.
func writeFileAtomic(fs FS, path string, data []byte) error {
	if err := writeFileReplace(fs, path, data); err != nil {
		return err
	}
	return syncDir(fs, filepath.Dir(path))
}

// writeFileReplace is writeFileAtomic without the directory's fsync, for a
// caller that makes the rename durable with a later one: until then a
// crash leaves the old content or the new, or no file if there was none.
func writeFileReplace(fs FS, path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("engine: create %s: %w", tmp, err)
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fs.Remove(tmp)
		return fmt.Errorf("engine: write %s: %w", tmp, err)
	}
	if err := fs.Rename(tmp, path); err != nil {
		return fmt.Errorf("engine: rename %s: %w", tmp, err)
	}
	return nil
}

// defaultOpenFiles is the Store's default descriptor bound for segment
// logs: half the process's soft RLIMIT_NOFILE (Go raises it to the hard
// limit at start), the other half left to connections and the rest.
func defaultOpenFiles() int {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < 2 {
		return DefaultOpenSegments
	}
	return int(min(lim.Cur/2, 1<<20))
}

// lockDir takes an exclusive advisory lock on dir/.lock, so two processes
// never open the same data. The returned file holds the lock until closed.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, ".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("engine: open %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("engine: lock %s: %w", path, err)
	}
	return f, nil
}

// WriteFileAtomic replaces path with data so that a crash leaves either the
// old or the new content: write a temporary file, fsync, rename, fsync the
// directory. Exported for the metadata files of the layers above.
func WriteFileAtomic(path string, data []byte) error { return writeFileAtomic(OSFS, path, data) }
