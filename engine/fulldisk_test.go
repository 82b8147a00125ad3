package engine

import (
	"errors"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
)

// A full FullDisk refuses the append that needs space with ENOSPC, leaves
// the log usable (not failed), and takes appends again once it has room.
func TestFullDisk(t *testing.T) {
	var full atomic.Bool
	dir := filepath.Join(t.TempDir(), "p-0")
	l := mustOpen(t, dir, Options{FS: FullDisk{FS: OSFS, Full: &full}, Logger: discardLogger})
	defer l.Close()
	if _, err := l.Append(testBatch(t, 1, 10, 0)); err != nil { // the segment reserves its first space
		t.Fatal(err)
	}
	full.Store(true)
	var err error
	for i := 0; err == nil && i < 10; i++ {
		_, err = l.Append(testBatch(t, 1, 600<<10, 0))
	}
	if !errors.Is(err, syscall.ENOSPC) || errors.Is(err, ErrLogFailed) || l.Failure() != nil {
		t.Fatalf("append on a full disk: %v (failure %v); want ENOSPC, not a failed log", err, l.Failure())
	}
	end := l.EndOffset()
	full.Store(false)
	if _, err := l.Append(testBatch(t, 1, 600<<10, 0)); err != nil || l.EndOffset() != end+1 {
		t.Fatalf("append once the disk has room: %v, end %d after %d", err, l.EndOffset(), end)
	}
}
