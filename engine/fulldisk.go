package engine

// FullDisk: a file system that fills and empties, for tests and
// simulations of a full disk.

import (
	"os"
	"sync/atomic"
	"syscall"
)

// FullDisk is FS with its space reservations (File.Allocate, which the
// engine makes before every write past the reserved end of a file) failing
// with ENOSPC while Full reports true, as on a full file system: what is
// already reserved still takes writes. Nothing is written by a refused
// reservation, so the log refuses the append and stays usable: it takes
// appends again once Full is false.
type FullDisk struct {
	FS
	Full *atomic.Bool
}

type fullDiskFile struct {
	File
	full *atomic.Bool
}

// OpenFile opens name in the underlying FS.
func (d FullDisk) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := d.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return fullDiskFile{f, d.Full}, nil
}

func (f fullDiskFile) Allocate(off, n int64) error {
	if f.full.Load() {
		return &os.PathError{Op: "fallocate", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Allocate(off, n)
}
