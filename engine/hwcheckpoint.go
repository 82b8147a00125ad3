package engine

// The high-watermark checkpoint: each log's high watermark (Log.HighWatermark)
// in the Store's data directory, as Kafka's ReplicaManager keeps it in each
// log directory, named and formatted as Kafka's replication-offset-checkpoint
// (its OffsetCheckpointFile), text:
//
//	0               version
//	3               number of entries
//	a-b 3 7         topic, partition, high watermark, separated by one space
//	orders 0 1500
//	orders 1 987
//
// Lines end in "\n". Kafka writes the entries in no particular order; here
// they are sorted by topic, then partition, so an unchanged set of high
// watermarks gives the same bytes and is not written again. The file is
// replaced whole with writeFileAtomic (temp, fsync, rename, fsync dir) by
// Store.Checkpoint and at a clean Close. This format is Kafka's and must not
// change.
//
// Reading it follows Kafka: a missing or empty file holds no entries; a
// file that does not parse (unknown version, a bad count, a line that is not
// three fields of a topic and two integers, fewer or more lines than the
// count) is an error wrapping ErrCorrupt naming the file and line, which
// fails OpenStore, as Kafka takes the log directory offline. An entry of a
// partition the directory does not hold is ignored; an offset outside the
// log is clamped to it when the log opens (Kafka's updateHighWatermark).

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
)

const (
	highWatermarkFile              = "replication-offset-checkpoint"
	highWatermarkCheckpointVersion = 0
)

// readHighWatermarks reads the high-watermark checkpoint at path.
func readHighWatermarks(fs FS, path string) (map[Partition]int64, []byte, error) {
	data, err := readFile(fs, path)
	if errors.Is(err, os.ErrNotExist) {
		return map[Partition]int64{}, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("engine: read %s: %w", path, err)
	}
	out := map[Partition]int64{}
	err = parseCheckpointText("high-watermark checkpoint", path, data, highWatermarkCheckpointVersion, func(f []string) bool {
		if len(f) != 3 {
			return false
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		hw, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		out[Partition{Topic: f[0], Partition: int32(p)}] = hw
		return true
	})
	if err != nil {
		return nil, nil, err
	}
	return out, data, nil
}

// partitionHW is one entry of the checkpoint.
type partitionHW struct {
	tp Partition
	hw int64
}

// encodeHighWatermarks returns the checkpoint's content for entries, which
// it sorts.
func encodeHighWatermarks(entries []partitionHW) []byte {
	slices.SortFunc(entries, func(a, b partitionHW) int {
		return cmp.Or(cmp.Compare(a.tp.Topic, b.tp.Topic), cmp.Compare(a.tp.Partition, b.tp.Partition))
	})
	b := appendCheckpointHeader(make([]byte, 0, 8+len(entries)*32), highWatermarkCheckpointVersion, len(entries))
	for _, e := range entries {
		b = append(b, e.tp.Topic...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(e.tp.Partition), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, e.hw, 10)
		b = append(b, '\n')
	}
	return b
}

// hwCheckpoint writes a Store's high-watermark checkpoint. Its mutex
// serializes the writes (a later snapshot of the high watermarks is never
// replaced by an earlier one) and guards the bytes last written; it is taken
// before Store.mu.
type hwCheckpoint struct {
	fs   FS
	path string

	mu struct {
		sync.Mutex
		written []byte // the file's content as last written or read; nil: unknown
	}
}

func newHWCheckpoint(fs FS, dir string) *hwCheckpoint {
	return &hwCheckpoint{fs: fs, path: filepath.Join(dir, highWatermarkFile)}
}

// write replaces the checkpoint with the high watermarks collect returns
// (called with c.mu held), unless the file already holds exactly them.
func (c *hwCheckpoint) write(collect func() []partitionHW) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	data := encodeHighWatermarks(collect())
	if c.mu.written != nil && bytes.Equal(data, c.mu.written) {
		return nil
	}
	if err := writeFileAtomic(c.fs, c.path, data); err != nil {
		return err
	}
	c.mu.written = data
	return nil
}
