package engine

// The two sparse indexes of a segment are arrays of fixed-size big-endian
// entries in a memory-mapped file:
//
//	.index      8 bytes an entry              .timeindex   12 bytes an entry
//	+-----------------+-----------------+      +--------------------+-----------------+
//	| relative offset | file position   |      | timestamp (ms)     | relative offset |
//	| uint32          | uint32          |      | int64              | uint32          |
//	+-----------------+-----------------+      +--------------------+-----------------+
//
// The relative offset is the offset minus the segment's base offset. An
// offset entry (r, p) says: the batch whose base offset is base+r starts at
// byte p of the .log file. A time entry (t, r) says: t is the largest
// timestamp in this segment up to and including the batch whose last offset
// is base+r. Entries increase in both columns; one is written each
// IndexIntervalBytes of log. These constants are part of the file format and
// must not change.
//
// An index holds no file descriptor: a file is opened only to be mapped,
// grown, trimmed or synced, and closed again, so that a partition costs one
// descriptor (its log's) at most. The active segment's index files are
// created and mapped at their full capacity (SegmentIndexBytes) when the
// first entry is reserved (an index that never gets one, as in a partition
// that holds less than IndexIntervalBytes, has no file and maps nothing:
// creating a topic of many partitions creates two files fewer for each; a
// roll creates the missing files, empty), and the file behind the mapping is
// grown with fallocate in chunks ahead of the entries written, so the
// mapping is never remapped under a reader and never has sparse pages (a
// store into a sparse page on a full disk is SIGBUS, not an error). On roll
// the files are trimmed to their entries. A flush writes the mapped pages
// back with msync, then fdatasyncs the file through the FS (which makes a
// trimmed size durable and lets tests see and fail the sync).
//
// Concurrency: one writer (holding the log's lock) appends an entry and then
// publishes the new count with an atomic store; readers load the count and
// read only entries below it, which never change while the segment is
// referenced. The mapping is made before the first count above zero is
// published, so a reader that sees an entry sees the mapping.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/edsrzf/mmap-go"
)

const (
	offsetIndexEntrySize = 8
	timeIndexEntrySize   = 12

	// warmIndexBytes is the tail of an index searched first: appends and
	// tailing readers land there, so cold pages at the front stay unfaulted.
	warmIndexBytes = 8192

	indexChunkMin = 4 << 10
	indexChunkMax = 1 << 20
)

// indexFile is the mapped array behind both indexes.
type indexFile struct {
	fs        FS
	path      string
	entrySize int64
	capacity  int64 // bytes the mapping can hold (writable) or holds (read-only)
	writable  bool

	fileSize  int64       // the file's size when opened
	exists    bool        // the file exists (a writable index is created at its first entry)
	m         mmap.MMap   // nil while unmapped: no entry yet (writable) or an empty file
	allocated int64       // the file's size: bytes reserved with fallocate (writable only)
	dirty     atomic.Bool // changed (entries, size) since the last flush
	entries   atomic.Int64
}

// openIndexFile maps path and closes it. A writable index is mapped at
// maxBytes (rounded down to whole entries, and never below the file's size)
// once it has bytes (now, or at the first reserve), and a missing file is
// an empty index, created at the first reserve; a read-only index maps
// exactly the file. The entry count starts as the file's size in entries;
// the caller checks it (sanityCheck) or resets it.
func openIndexFile(fs FS, path string, entrySize int64, maxBytes int64, writable bool) (*indexFile, error) {
	flag := os.O_RDONLY
	if writable {
		flag = os.O_RDWR
	}
	f, err := fs.OpenFile(path, flag, 0o644)
	if writable && errors.Is(err, os.ErrNotExist) {
		ix := &indexFile{fs: fs, path: path, entrySize: entrySize, writable: true}
		ix.capacity = maxBytes / entrySize * entrySize
		return ix, nil
	}
	if err != nil {
		return nil, fmt.Errorf("engine: open index %s: %w", path, err)
	}
	defer f.Close() // a mapping outlives its descriptor
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("engine: stat index %s: %w", path, err)
	}
	size := fi.Size()
	ix := &indexFile{fs: fs, path: path, entrySize: entrySize, fileSize: size, writable: writable, exists: true}
	ix.entries.Store(size / entrySize)
	if writable {
		ix.capacity = max(maxBytes/entrySize*entrySize, size/entrySize*entrySize)
		ix.allocated = size
	} else {
		ix.capacity = size / entrySize * entrySize
	}
	if size > 0 && ix.capacity > 0 {
		if err := ix.mapFile(f); err != nil {
			return nil, err
		}
	}
	return ix, nil
}

// mapFile maps the index's capacity from f.
func (ix *indexFile) mapFile(f File) error {
	prot := mmap.RDONLY
	if ix.writable {
		prot = mmap.RDWR
	}
	m, err := mmap.MapRegion(f.OS(), int(ix.capacity), prot, 0, 0)
	if err != nil {
		return fmt.Errorf("engine: mmap index %s: %w", ix.path, err)
	}
	ix.m = m
	return nil
}

// reopen opens (creating) the index's file for a change that needs a
// descriptor; the caller closes it.
func (ix *indexFile) reopen(why string) (File, error) {
	flag := os.O_RDWR
	if !ix.exists {
		flag |= os.O_CREATE
	}
	f, err := ix.fs.OpenFile(ix.path, flag, 0o644)
	if err != nil {
		return nil, fmt.Errorf("engine: open index %s to %s: %w", ix.path, why, err)
	}
	ix.exists = true
	return f, nil
}

// materialize creates the file of an index that never had an entry, empty,
// so that the segment, once inactive, opens it read-only as it is instead
// of rebuilding it.
func (ix *indexFile) materialize() error {
	if !ix.writable || ix.exists {
		return nil
	}
	f, err := ix.reopen("create it")
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("engine: close index %s: %w", ix.path, err)
	}
	return nil
}

func (ix *indexFile) count() int64 { return ix.entries.Load() }

func (ix *indexFile) full() bool { return (ix.entries.Load()+1)*ix.entrySize > ix.capacity }

// entry returns the bytes of entry i; i < count.
func (ix *indexFile) entry(i int64) []byte {
	o := i * ix.entrySize
	return ix.m[o : o+ix.entrySize]
}

// reserve makes sure the file has real blocks for one more entry, growing
// it in chunks, and that it is mapped. The caller holds the log's lock and
// has checked full().
func (ix *indexFile) reserve() error {
	end := (ix.entries.Load() + 1) * ix.entrySize
	if end <= ix.allocated && ix.m != nil {
		return nil
	}
	if end > ix.capacity {
		return fmt.Errorf("engine: index %s is full", ix.path)
	}
	chunk := min(max(ix.allocated, indexChunkMin), indexChunkMax)
	grow := max(min(max(chunk, end-ix.allocated), ix.capacity-ix.allocated), 0)
	f, err := ix.reopen("grow it")
	if err != nil {
		return err
	}
	err = allocate(f, ix.allocated, grow)
	if err == nil && ix.m == nil {
		// Mapped only now that the blocks under its first pages exist.
		err = ix.mapFile(f)
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("engine: close index %s: %w", ix.path, cerr)
	}
	if err != nil {
		return err
	}
	ix.allocated += grow
	ix.dirty.Store(true)
	return nil
}

// appendEntry writes one entry and publishes it. The caller holds the log's
// lock and reserved room for it.
func (ix *indexFile) appendEntry(e []byte) error {
	if err := ix.reserve(); err != nil {
		return err
	}
	n := ix.entries.Load()
	copy(ix.m[n*ix.entrySize:(n+1)*ix.entrySize], e)
	ix.dirty.Store(true)
	ix.entries.Store(n + 1)
	return nil
}

// truncateEntries drops entries from n on. Readers holding the segment see
// at most the old count; the writer only shrinks an index no reader holds.
func (ix *indexFile) truncateEntries(n int64) {
	if n < ix.entries.Load() {
		ix.entries.Store(n)
	}
}

// trim cuts the file to its entries, giving back the preallocated tail.
func (ix *indexFile) trim() error {
	size := ix.entries.Load() * ix.entrySize
	if !ix.writable || size == ix.allocated {
		return nil
	}
	f, err := ix.reopen("trim it")
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("engine: trim index %s: %w", ix.path, err)
	}
	ix.allocated = size
	ix.dirty.Store(true)
	return nil
}

// flush makes the entries and the file's size durable: msync of the
// mapped pages, then fdatasync through the FS. An index unchanged since its
// last flush (or a read-only one) costs nothing.
func (ix *indexFile) flush() error {
	if !ix.writable || !ix.dirty.Swap(false) {
		return nil
	}
	var err error
	if ix.m != nil {
		if ferr := ix.m.Flush(); ferr != nil {
			err = fmt.Errorf("engine: msync %s: %w", ix.path, ferr)
		}
	}
	if err == nil {
		err = syncPath(ix.fs, ix.path)
	}
	if err != nil {
		ix.dirty.Store(true)
	}
	return err
}

// close unmaps. With trim it first cuts the file to its entries.
func (ix *indexFile) close(trim bool) error {
	var err error
	if trim {
		err = ix.trim()
	}
	if ix.m != nil {
		if uerr := ix.m.Unmap(); uerr != nil {
			err = errors.Join(err, fmt.Errorf("engine: munmap %s: %w", ix.path, uerr))
		}
		ix.m = nil
	}
	return err
}

// floor returns the largest i in [0, n) with !after(i), or -1. after must be
// monotonic (false then true). The warm tail is tried first.
func floorSearch(n int64, warm int64, after func(i int64) bool) int64 {
	lo, hi := int64(0), n // search [lo, hi)
	if warm > 0 && n > warm {
		if after(n - warm) {
			hi = n - warm
		} else {
			lo = n - warm
		}
	}
	// Find the first index in [lo, hi) for which after is true.
	for lo < hi {
		mid := int64(uint64(lo+hi) >> 1)
		if after(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo - 1
}

// offsetIndex maps relative offsets to file positions.
type offsetIndex struct{ *indexFile }

func (ix *offsetIndex) relOffset(i int64) uint32 { return binary.BigEndian.Uint32(ix.entry(i)) }
func (ix *offsetIndex) position(i int64) uint32  { return binary.BigEndian.Uint32(ix.entry(i)[4:]) }

// lookup returns the entry with the largest relative offset <= rel, or
// (0, 0) when there is none (the scan then starts at the segment's start).
func (ix *offsetIndex) lookup(rel uint32) (uint32, int64) {
	n := ix.count()
	i := floorSearch(n, warmIndexBytes/offsetIndexEntrySize, func(i int64) bool { return ix.relOffset(i) > rel })
	if i < 0 {
		return 0, 0
	}
	return ix.relOffset(i), int64(ix.position(i))
}

// lookupSpan is lookup that also returns the position of the next entry, or
// -1 when there is none: the first batch with last offset >= rel starts
// before it, or is the batch there. With no entry <= rel, from is 0 and next
// is the first entry's position.
func (ix *offsetIndex) lookupSpan(rel uint32) (entry uint32, from, next int64) {
	n := ix.count()
	i := floorSearch(n, warmIndexBytes/offsetIndexEntrySize, func(i int64) bool { return ix.relOffset(i) > rel })
	next = -1
	if i+1 < n {
		next = int64(ix.position(i + 1))
	}
	if i < 0 {
		return 0, 0, next
	}
	return ix.relOffset(i), int64(ix.position(i)), next
}

// lookupPosition returns the entry with the largest position <= pos.
func (ix *offsetIndex) lookupPosition(pos int64) (uint32, int64) {
	n := ix.count()
	i := floorSearch(n, warmIndexBytes/offsetIndexEntrySize, func(i int64) bool { return int64(ix.position(i)) > pos })
	if i < 0 {
		return 0, 0
	}
	return ix.relOffset(i), int64(ix.position(i))
}

func (ix *offsetIndex) append(rel uint32, pos int64) error {
	var e [offsetIndexEntrySize]byte
	binary.BigEndian.PutUint32(e[0:], rel)
	binary.BigEndian.PutUint32(e[4:], uint32(pos))
	return ix.appendEntry(e[:])
}

// truncateToPosition drops entries at or after pos.
func (ix *offsetIndex) truncateToPosition(pos int64) {
	i := floorSearch(ix.count(), 0, func(i int64) bool { return int64(ix.position(i)) >= pos })
	ix.truncateEntries(i + 1)
}

// sanityCheck rejects an index that cannot belong to a log of logSize bytes.
func (ix *offsetIndex) sanityCheck(logSize int64) error {
	if ix.fileSize%offsetIndexEntrySize != 0 {
		return fmt.Errorf("%w: index %s has size %d, not a multiple of %d", ErrCorrupt, ix.path, ix.fileSize, offsetIndexEntrySize)
	}
	n := ix.count()
	if n == 0 {
		return nil
	}
	if ix.relOffset(0) > ix.relOffset(n-1) || ix.position(0) > ix.position(n-1) {
		return fmt.Errorf("%w: index %s entries do not increase", ErrCorrupt, ix.path)
	}
	if int64(ix.position(n-1)) >= logSize {
		return fmt.Errorf("%w: index %s points at position %d past the log's %d bytes", ErrCorrupt, ix.path, ix.position(n-1), logSize)
	}
	return nil
}

// timeIndex maps timestamps to relative offsets.
type timeIndex struct{ *indexFile }

func (ix *timeIndex) timestamp(i int64) int64  { return int64(binary.BigEndian.Uint64(ix.entry(i))) }
func (ix *timeIndex) relOffset(i int64) uint32 { return binary.BigEndian.Uint32(ix.entry(i)[8:]) }

// last returns the newest entry's timestamp, or -1 when empty.
func (ix *timeIndex) lastTimestamp() int64 {
	n := ix.count()
	if n == 0 {
		return -1
	}
	return ix.timestamp(n - 1)
}

// lookup returns the entry with the largest timestamp <= ts, ok false when
// every entry is newer.
func (ix *timeIndex) lookup(ts int64) (int64, uint32, bool) {
	n := ix.count()
	i := floorSearch(n, warmIndexBytes/timeIndexEntrySize, func(i int64) bool { return ix.timestamp(i) > ts })
	if i < 0 {
		return 0, 0, false
	}
	return ix.timestamp(i), ix.relOffset(i), true
}

// maybeAppend adds (ts, rel) when ts is newer than the last entry, keeping
// timestamps strictly increasing.
func (ix *timeIndex) maybeAppend(ts int64, rel uint32) error {
	if ts <= ix.lastTimestamp() {
		return nil
	}
	var e [timeIndexEntrySize]byte
	binary.BigEndian.PutUint64(e[0:], uint64(ts))
	binary.BigEndian.PutUint32(e[8:], rel)
	return ix.appendEntry(e[:])
}

// truncateToOffset drops entries whose relative offset is >= rel.
func (ix *timeIndex) truncateToOffset(rel uint32) {
	i := floorSearch(ix.count(), 0, func(i int64) bool { return ix.relOffset(i) >= rel })
	ix.truncateEntries(i + 1)
}

func (ix *timeIndex) sanityCheck() error {
	if ix.fileSize%timeIndexEntrySize != 0 {
		return fmt.Errorf("%w: time index %s has size %d, not a multiple of %d", ErrCorrupt, ix.path, ix.fileSize, timeIndexEntrySize)
	}
	n := ix.count()
	if n > 1 && (ix.timestamp(0) > ix.timestamp(n-1) || ix.relOffset(0) > ix.relOffset(n-1)) {
		return fmt.Errorf("%w: time index %s entries do not increase", ErrCorrupt, ix.path)
	}
	return nil
}
