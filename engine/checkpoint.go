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

// readCheckpoint reads an offset checkpoint. A missing or empty file is
// empty, as Kafka reads it.
func readCheckpoint(fs FS, path string) (map[string]int64, error) {
	data, err := readFile(fs, path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]int64{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("engine: read checkpoint: %w", err)
	}
	out := map[string]int64{}
	err = parseCheckpointText("checkpoint", path, data, checkpointVersion, func(f []string) bool {
		if len(f) != 2 {
			return false
		}
		o, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || o < 0 {
			return false
		}
		out[f[0]] = o
		return true
	})
	return out, err
}

// parseCheckpointText parses Kafka's checkpoint text format, which every
// checkpoint file here shares: a version line, an entry count, and exactly
// that many entry lines, each split into white-space separated fields and
// handed to entry, which says whether the line is well formed. An empty
// file holds no entries. Errors wrap ErrCorrupt and name the file and line.
func parseCheckpointText(kind, path string, data []byte, version int, entry func(fields []string) bool) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s %s line %d: %s", ErrCorrupt, kind, path, line, fmt.Sprintf(format, args...))
	}
	next := func() (string, bool) {
		line++
		if !sc.Scan() {
			return "", false
		}
		return sc.Text(), true
	}
	v, ok := next()
	if !ok {
		if err := sc.Err(); err != nil {
			return bad("%v", err)
		}
		return nil
	}
	if strings.TrimSpace(v) != strconv.Itoa(version) {
		return bad("unknown version %q", v)
	}
	v, ok = next()
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if !ok || err != nil || n < 0 {
		return bad("bad entry count %q", v)
	}
	for i := range n {
		v, ok = next()
		if !ok {
			return bad("missing entry: the count says %d, the file has %d", n, i)
		}
		if !entry(strings.Fields(v)) {
			return bad("malformed entry %q", v)
		}
	}
	if v, ok := next(); ok {
		return bad("%q after the %d entries the count announces", v, n)
	}
	if err := sc.Err(); err != nil {
		return bad("%v", err)
	}
	return nil
}

// appendCheckpointHeader appends the version and entry-count lines that
// open every checkpoint file in Kafka's text format.
func appendCheckpointHeader(b []byte, version, entries int) []byte {
	b = strconv.AppendInt(b, int64(version), 10)
	b = append(b, '\n')
	b = strconv.AppendInt(b, int64(entries), 10)
	return append(b, '\n')
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
