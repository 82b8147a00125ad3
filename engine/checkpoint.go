package engine

// Checkpoint files, written with writeFileAtomic (temp, fsync, rename,
// fsync dir). The recovery-point checkpoint is text, as Kafka's
// recovery-point-offset-checkpoint:
//
//	0                   version
//	2                   number of entries
//	orders-0 1234       partition directory name, offset
//	orders-1 987
//
// The clean-shutdown marker is an empty file; its presence at open means
// every log in the directory was flushed and trimmed by Close.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

const (
	recoveryPointFile = "recovery-point-offset-checkpoint"
	cleanShutdownFile = ".clean-shutdown"
	checkpointVersion = 0
)

// readCheckpoint reads an offset checkpoint. A missing file is empty.
func readCheckpoint(fs FS, path string) (map[string]int64, error) {
	data, err := readFile(fs, path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]int64{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("engine: read checkpoint: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	bad := func(why string) error {
		return fmt.Errorf("%w: checkpoint %s line %d: %s", ErrCorrupt, path, line, why)
	}
	next := func() (string, bool) {
		line++
		if !sc.Scan() {
			return "", false
		}
		return sc.Text(), true
	}
	v, ok := next()
	if !ok || v != strconv.Itoa(checkpointVersion) {
		return nil, bad("unknown version " + strconv.Quote(v))
	}
	v, ok = next()
	n, err := strconv.Atoi(v)
	if !ok || err != nil || n < 0 {
		return nil, bad("bad entry count " + strconv.Quote(v))
	}
	out := make(map[string]int64, n)
	for range n {
		v, ok = next()
		name, off, found := strings.Cut(v, " ")
		o, err := strconv.ParseInt(off, 10, 64)
		if !ok || !found || err != nil || o < 0 {
			return nil, bad("bad entry " + strconv.Quote(v))
		}
		out[name] = o
	}
	return out, nil
}

// writeCheckpoint replaces the checkpoint at path with entries.
func writeCheckpoint(fs FS, path string, entries map[string]int64) error {
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	slices.Sort(names)
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(names))
	for _, n := range names {
		fmt.Fprintf(&b, "%s %d\n", n, entries[n])
	}
	return writeFileAtomic(fs, path, b.Bytes())
}

// takeCleanMarker reports whether dir holds the clean-shutdown marker and
// removes it durably, so a crash from here on is seen as unclean.
func takeCleanMarker(fs FS, dir string) (bool, error) {
	path := filepath.Join(dir, cleanShutdownFile)
	err := fs.Remove(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("engine: remove %s: %w", path, err)
	}
	return true, syncDir(fs, dir)
}

// writeCleanMarker marks dir as cleanly shut down.
func writeCleanMarker(fs FS, dir string) error {
	return writeFileAtomic(fs, filepath.Join(dir, cleanShutdownFile), nil)
}
