package engine

// The leader-epoch cache: for each leader epoch the partition has seen, the
// first offset written in it, as Kafka's LeaderEpochFileCache keeps it. It
// answers OffsetForLeaderEpoch (where a follower or a consumer must truncate
// after a leader change) and is checkpointed in the partition directory as
// Kafka's leader-epoch-checkpoint, text, one entry a line:
//
//	0            version
//	2            number of entries
//	0 0          leader epoch, start offset (the first offset of that epoch),
//	3 1500       separated by white space; epochs and start offsets increase
//
// The file is replaced whole with writeFileAtomic on every change, so a
// crash leaves the old or the new cache. This format is Kafka's and must not
// change.
//
// The rules are Kafka 3.9's (storage/.../epoch/LeaderEpochFileCache.java):
// assign adds an entry only when its epoch differs from the latest or its
// start offset is below the latest's, first removing the entries it
// contradicts (epoch or start offset >= the new one's); truncateFromEnd
// drops entries starting at or after the new log end; truncateFromStart
// drops entries at or below the new log start offset and re-adds the last of
// them starting at it. Kafka flushes truncations in the background; here
// every change is written before the call returns.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
)

const (
	leaderEpochCheckpointFile    = "leader-epoch-checkpoint"
	leaderEpochCheckpointVersion = 0
)

// epochEntry is one leader epoch and the first offset written in it.
type epochEntry struct {
	epoch int32
	start int64
}

// epochCache is a partition's leader-epoch cache. Its methods are safe for
// concurrent use: lookups take a read lock and never wait for a checkpoint
// write, which holds only writeMu. Lock order: writeMu, then mu.
type epochCache struct {
	fs   FS
	path string

	writeMu sync.Mutex // serializes changes and their checkpoint writes

	mu struct {
		sync.RWMutex
		entries []epochEntry // increasing in epoch and in start; replaced whole on change
	}
}

// openEpochCache loads the leader-epoch checkpoint of the partition in dir;
// a missing or empty file is an empty cache. A file that does not parse is
// an error wrapping ErrCorrupt naming the file and line. Entries are
// replayed through assign's rules, as Kafka does, so a file whose entries do
// not increase loads as the cache those assignments make.
func openEpochCache(fs FS, dir string) (*epochCache, error) {
	c := &epochCache{fs: fs, path: filepath.Join(dir, leaderEpochCheckpointFile)}
	data, err := readFile(fs, c.path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("engine: read %s: %w", c.path, err)
	}
	loaded, err := parseEpochCheckpoint(c.path, data)
	if err != nil {
		return nil, err
	}
	var entries []epochEntry
	for _, e := range loaded {
		entries = assignEntry(entries, e)
	}
	c.mu.entries = entries
	return c, nil
}

// parseEpochCheckpoint parses the checkpoint format above, strictly: the
// version, a count, and exactly that many lines of two integers.
func parseEpochCheckpoint(path string, data []byte) ([]epochEntry, error) {
	var entries []epochEntry
	err := parseCheckpointText("leader-epoch checkpoint", path, data, leaderEpochCheckpointVersion, func(f []string) bool {
		if len(f) != 2 {
			return false
		}
		epoch, err1 := strconv.ParseInt(f[0], 10, 32)
		start, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || epoch < 0 || start < 0 {
			return false
		}
		entries = append(entries, epochEntry{int32(epoch), start})
		return true
	})
	if err != nil {
		return nil, err
	}
	return entries, nil
}

// encodeEpochCheckpoint returns the checkpoint file's content for entries.
func encodeEpochCheckpoint(entries []epochEntry) []byte {
	b := appendCheckpointHeader(make([]byte, 0, 8+len(entries)*16), leaderEpochCheckpointVersion, len(entries))
	for _, e := range entries {
		b = strconv.AppendInt(b, int64(e.epoch), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, e.start, 10)
		b = append(b, '\n')
	}
	return b
}

// updateNeeded is Kafka's isUpdateNeeded: a new epoch, or the latest epoch
// starting earlier than recorded.
func updateNeeded(entries []epochEntry, e epochEntry) bool {
	if len(entries) == 0 {
		return true
	}
	last := entries[len(entries)-1]
	return e.epoch != last.epoch || e.start < last.start
}

// assignEntry returns entries with e assigned by Kafka's rule: the entries
// e contradicts (epoch >= e's or start >= e's) are removed from the end, then
// e is appended. entries is not modified; the result may share nothing with
// it.
func assignEntry(entries []epochEntry, e epochEntry) []epochEntry {
	if !updateNeeded(entries, e) {
		return entries
	}
	keep := len(entries)
	for keep > 0 && (entries[keep-1].epoch >= e.epoch || entries[keep-1].start >= e.start) {
		keep--
	}
	out := make([]epochEntry, keep, keep+1)
	copy(out, entries[:keep])
	return append(out, e)
}

// assign records that leader epoch epoch starts at startOffset, by Kafka's
// rule (see the top of the file), and writes the checkpoint when the cache
// changes. The common call, the current epoch again at a later offset, takes
// a read lock and returns without allocating. An epoch below 0 (a batch
// without a leader epoch) carries no information and is ignored; a negative
// start offset is an error wrapping ErrOffsetOutOfRange. When the write
// fails the cache is left as it was.
func (c *epochCache) assign(epoch int32, startOffset int64) error {
	if epoch < 0 {
		return nil
	}
	if startOffset < 0 {
		return fmt.Errorf("%w: leader epoch %d assigned start offset %d", ErrOffsetOutOfRange, epoch, startOffset)
	}
	e := epochEntry{epoch, startOffset}
	c.mu.RLock()
	needed := updateNeeded(c.mu.entries, e)
	c.mu.RUnlock()
	if !needed {
		return nil
	}
	return c.change(func(entries []epochEntry) []epochEntry { return assignEntry(entries, e) })
}

// change applies f to the entries and, when the result differs, writes the
// checkpoint and then publishes the result. f must not modify its argument.
func (c *epochCache) change(f func([]epochEntry) []epochEntry) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.mu.RLock()
	old := c.mu.entries
	c.mu.RUnlock() // only writeMu holders replace entries: old stays current
	next := f(old)
	if slices.Equal(next, old) {
		return nil
	}
	if err := writeFileAtomic(c.fs, c.path, encodeEpochCheckpoint(next)); err != nil {
		return err
	}
	c.mu.Lock()
	c.mu.entries = next
	c.mu.Unlock()
	return nil
}

// latest returns the latest epoch and its start offset; ok is false when
// the cache is empty.
func (c *epochCache) latest() (epoch int32, startOffset int64, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if n := len(c.mu.entries); n > 0 {
		e := c.mu.entries[n-1]
		return e.epoch, e.start, true
	}
	return -1, -1, false
}

// endOffsetFor answers OffsetForLeaderEpoch for epoch on a log whose end
// offset is logEnd, as Kafka's LeaderEpochFileCache.endOffsetFor:
//
//   - epoch -1 (undefined), an empty cache, or an epoch above every known
//     one: -1, -1;
//   - the latest epoch: it and logEnd;
//   - a known earlier epoch: it and the start offset of the next larger
//     epoch (its end);
//   - an unknown epoch between known ones: the largest known epoch below it
//     and the start offset of the first epoch above it;
//   - an epoch below every known one: the requested epoch and the start
//     offset of the first known epoch (the data before it is gone; the
//     follower truncates to where the leader's log begins).
func (c *epochCache) endOffsetFor(epoch int32, logEnd int64) (int32, int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	entries := c.mu.entries
	if epoch == -1 || len(entries) == 0 {
		return -1, -1
	}
	if entries[len(entries)-1].epoch == epoch {
		return epoch, logEnd
	}
	// higher: the first entry with an epoch above the requested one.
	higher, _ := slices.BinarySearchFunc(entries, epoch, func(e epochEntry, t int32) int {
		if e.epoch <= t {
			return -1
		}
		return 1
	})
	switch {
	case higher == len(entries):
		return -1, -1
	case higher == 0:
		return epoch, entries[0].start
	}
	return entries[higher-1].epoch, entries[higher].start
}

// epochAt is the epoch of the record at offset: the entry with the largest
// start offset at or below it; -1 if none (Kafka's epochForOffset).
func (c *epochCache) epochAt(offset int64) int32 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	entries := c.mu.entries
	i, _ := slices.BinarySearchFunc(entries, offset, func(e epochEntry, t int64) int {
		if e.start <= t {
			return -1
		}
		return 1
	})
	if i == 0 {
		return -1
	}
	return entries[i-1].epoch
}

// truncateFromEnd removes the entries whose start offset is at or after
// endOffset: the log was truncated to end there. It writes the checkpoint
// when anything is removed.
func (c *epochCache) truncateFromEnd(endOffset int64) error {
	if endOffset < 0 {
		return nil
	}
	return c.change(func(entries []epochEntry) []epochEntry {
		keep := len(entries)
		for keep > 0 && entries[keep-1].start >= endOffset {
			keep--
		}
		return entries[:keep:keep]
	})
}

// truncateFromStart moves the cache's start to startOffset, the new log
// start offset: the entries starting at or below it go, and the last of them
// comes back starting at startOffset (its epoch still covers the records
// from there). It writes the checkpoint when the cache changes.
func (c *epochCache) truncateFromStart(startOffset int64) error {
	return c.change(func(entries []epochEntry) []epochEntry {
		drop := 0
		for drop < len(entries) && entries[drop].start <= startOffset {
			drop++
		}
		if drop == 0 {
			return entries
		}
		out := make([]epochEntry, 0, len(entries)-drop+1)
		out = append(out, epochEntry{entries[drop-1].epoch, startOffset})
		return append(out, entries[drop:]...)
	})
}

// clear empties the cache and its checkpoint, as Kafka's clearAndFlush when
// a log is truncated fully and restarted at a new offset.
func (c *epochCache) clear() error {
	return c.change(func([]epochEntry) []epochEntry { return nil })
}

// all returns a copy of the entries, oldest first.
func (c *epochCache) all() []epochEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Clone(c.mu.entries)
}
