package engine

// The log cleaner: compaction of logs whose policy is compact or
// compact,delete, after Kafka 3.9's LogCleaner (Cleaner.doClean,
// buildOffsetMap, groupSegmentsBySize, cleanSegments, cleanInto).
//
// A log is split at its clean point, the first dirty offset, which the
// cleaner-offset-checkpoint keeps (cleanermanager.go): below it every key
// appears at most once (besides tombstones in their retention), from it
// on records are as appended. One pass over a log:
//
//  1. Range. The dirty section is [first dirty, first uncleanable), where
//     the first uncleanable offset is the base of the first segment that may
//     not be cleaned: the active segment, the segment holding the recovery
//     point (only data known to be on disk justifies removing older data: a
//     crash must not lose a key's latest record after its older ones are
//     gone), the segment holding the first unstable offset (the first
//     offset of the oldest open transaction, Kafka's bound by the last
//     stable offset: an open transaction's records may yet be aborted, so
//     they neither go nor shadow older records), and the first segment
//     whose newest record is younger than min.compaction.lag.ms. A
//     checkpoint below the log start offset or past the log end is reset
//     to the log start (Kafka's cleanableOffsets).
//  2. Offset map (offsetmap.go). The dirty section's records are read in
//     offset order and each keyed record's offset is put in the map under
//     its key; control batches and the batches of aborted transactions
//     (cleantxn.go) are not mapped, so an aborted write of a key never
//     removes its committed value. When the map will take no new key,
//     mapping stops after the last whole batch: the pass then cleans only
//     up to there (end = the last mapped batch's last offset + 1), and the
//     next pass goes on from it.
//  3. Groups. The segments from the first to the one holding end - 1 are
//     grouped, in order, so that a group's log bytes fit in segment.bytes
//     and its offsets span at most 2³¹-1 (relative offsets are 32-bit), as
//     groupSegmentsBySize. Each group becomes one segment named by its
//     first segment's base offset.
//  4. Clean. Each group's batches are filtered (cleanfilter.go) into
//     <base>.log.cleaned, with its offset and time indexes built as an
//     append would build them (<base>.index.cleaned, .timeindex.cleaned)
//     and, when the group had aborted transactions, its aborted transaction
//     index (<base>.txnindex.cleaned: the entries of the abort markers kept
//     that still have records, cleantxn.go; empty when none has); all are
//     fsynced, then swapped in (swap.go). The pass walks the transactions
//     of every group in order, from the log's first segment.
//  5. The clean point becomes end, in the checkpoint.
//
// Offsets never change: a cleaned log has gaps between and inside batches,
// which reads, recovery and timestamp lookups step over.
//
// A pass holds a reference on each segment it reads, so retention,
// truncation and Close never cut a file under it; a swap checks under the
// log's lock that each segment of its group is still the log's, and the pass
// ends without moving the clean point otherwise. Close waits for a running
// pass, which notices the close at its next batch and stops.

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Suffixes of a cleaned segment's files before and during the swap.
const (
	cleanedSuffix = ".cleaned"
	swapSuffix    = ".swap"
)

// errCleanAborted ends a pass whose log changed under it (closed,
// truncated, segments deleted). The cleaned files are removed and the clean
// point stays.
var errCleanAborted = errors.New("engine: cleaning aborted")

// logCleanState is a log's part in compaction.
type logCleanState struct {
	pass  sync.Mutex         // held for a whole pass; Close takes it to wait for one
	ended bool               // no more passes (the log closed); guarded by pass
	cp    *cleanerCheckpoint // where the clean point is kept
	gen   int64              // truncations so far; guarded by Log.mu
	last  atomic.Pointer[CleanStats]
}

// endCleaning waits for a running pass to stop and refuses later ones.
func (l *Log) endCleaning() {
	l.clean.pass.Lock()
	l.clean.ended = true
	l.clean.pass.Unlock()
}

// CleanStats describe one cleaning pass over a log.
type CleanStats struct {
	Log          string        // the log's directory name
	FirstDirty   int64         // the clean point before the pass
	End          int64         // the clean point after: [FirstDirty, End) was deduplicated
	Segments     int           // segments read
	Groups       int           // segments written (or dropped) in their place
	BytesRead    int64         // log bytes read while cleaning (not counting the map)
	MapBytesRead int64         // log bytes read while building the offset map
	BytesWritten int64         // log bytes written
	RecordsRead  int64         // records read while cleaning
	Removed      int64         // records removed
	Tombstones   int64         // tombstones removed (past their delete horizon)
	Keyless      int64         // records removed for having no key
	Aborted      int64         // records of aborted transactions removed
	Markers      int64         // transaction markers removed (past their delete horizon)
	MapFull      bool          // the offset map filled: End stops short of the dirty section
	MapUse       float64       // share of the map's slots in use
	Duration     time.Duration // wall time of the pass
}

// Cleaner cleans logs, one at a time: it owns one offset map and its I/O
// buffers. A Store runs StoreOptions.Cleaner.Threads of them; a program
// using logs outside a Store makes its own.
type Cleaner struct {
	mapBytes   int64
	loadFactor float64
	ioBytes    int

	mu      sync.Mutex // one pass at a time
	m       *offsetMap // allocated at the first pass
	mapTxns cleanTxns  // the transactions of the offset map's walk
	f       cleanFilter
	rd      cleanReader
	out     []byte
	ix      []byte // offset index entries of the segment being written
	tix     []byte // time index entries
	txnBuf  []byte // the aborted transaction index of the segment being written
}

// NewCleaner makes a cleaner with o's memory for one thread:
// DedupeBufferBytes/Threads of offset map and IOBufferBytes/Threads of I/O
// buffers. The map is allocated at the first pass.
func NewCleaner(o CleanerOptions) *Cleaner {
	o = o.withDefaults()
	return &Cleaner{
		mapBytes:   o.DedupeBufferBytes / int64(o.Threads),
		loadFactor: o.LoadFactor,
		ioBytes:    max(o.IOBufferBytes/o.Threads/2, 4<<10),
	}
}

// cleanRange is what a pass needs to know of a log, read under its lock.
type cleanRange struct {
	firstDirty  int64
	uncleanable int64      // first uncleanable offset: a segment base
	segs        []*segment // every segment below uncleanable, in order
	nextBase    []int64    // base of the segment after each of segs
	producers   map[int64]producerLast
	gen         int64
	now         time.Time
}

// Clean runs one pass over l now, whatever its dirty ratio (see the top of
// the file). A log with nothing cleanable returns zero stats. l's policy
// must compact.
func (c *Cleaner) Clean(l *Log) (CleanStats, error) {
	if !l.opts.Load().Compaction.Policy.compacts() {
		return CleanStats{}, fmt.Errorf("engine: log %s has cleanup.policy=%v: nothing to compact", l.name, l.opts.Load().Compaction.Policy)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	l.clean.pass.Lock()
	defer l.clean.pass.Unlock()
	if l.clean.ended {
		return CleanStats{}, ErrClosed
	}
	start := time.Now()
	st := CleanStats{Log: l.name}
	r, err := l.cleanRange()
	if err != nil || r.uncleanable <= r.firstDirty {
		return st, err
	}
	st.FirstDirty, st.End = r.firstDirty, r.firstDirty
	if c.m == nil {
		c.m = newOffsetMap(c.mapBytes, c.loadFactor)
	} else {
		c.m.clear()
	}
	full, err := c.buildMap(l, r, &st)
	if err != nil {
		return st, err
	}
	end := c.m.latest + 1
	st.MapFull, st.MapUse = full, c.m.utilization()
	if end <= r.firstDirty {
		return st, fmt.Errorf("engine: clean %s: the offset map (%d bytes) holds no whole batch from offset %d", l.name, c.mapBytes, r.firstDirty)
	}
	c.f = cleanFilter{
		m: c.m, now: r.now.UnixMilli(), deleteRetention: max(0, l.opts.Load().Compaction.DeleteRetention.Milliseconds()),
		lastOfProducer: r.producers, txns: c.f.txns, scratch: c.f.scratch, recs: c.f.recs, kept: c.f.kept,
	}
	groups := groupSegments(r, end, l.opts.Load().SegmentBytes)
	if n := len(groups); n > 0 {
		last := groups[n-1][len(groups[n-1])-1]
		c.f.txns.reset(l.AbortedTxns(c.f.txns.aborted[:0], r.segs[0].base, r.nextBase[last]))
	}
	for _, g := range groups {
		if err := c.cleanGroup(l, r, g, &st); err != nil {
			return st, err
		}
	}
	if err := l.commitCleanPoint(r.gen, end); err != nil {
		return st, err
	}
	st.End = end
	st.Duration = time.Since(start)
	l.clean.last.Store(&st)
	l.cfg.logger.Info("cleaned log", "first_dirty", st.FirstDirty, "end", st.End, "segments", st.Segments, "into", st.Groups,
		"read_bytes", st.BytesRead, "map_bytes", st.MapBytesRead, "written_bytes", st.BytesWritten,
		"records_removed", st.Removed, "tombstones_removed", st.Tombstones, "aborted_removed", st.Aborted,
		"markers_removed", st.Markers, "map_full", st.MapFull, "duration", st.Duration)
	return st, nil
}

// cleanRange reads, under the log's lock, the range a pass may clean and the
// producers' last batches.
func (l *Log) cleanRange() (cleanRange, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return cleanRange{}, err
	}
	r := cleanRange{now: l.opts.Load().Now(), gen: l.clean.gen}
	r.firstDirty = l.validCleanPointLocked()
	r.uncleanable = l.firstUncleanableLocked(r.firstDirty, r.now)
	var all []segEntry
	l.mu.tree.Ascend(func(e segEntry) bool {
		all = append(all, e)
		return true
	})
	for i, e := range all {
		if e.seg == l.mu.active || e.base >= r.uncleanable {
			break
		}
		r.segs = append(r.segs, e.seg)
		r.nextBase = append(r.nextBase, all[i+1].base)
	}
	r.producers = map[int64]producerLast{}
	if l.producers != nil {
		for id, e := range l.producers.producers {
			p := producerLast{lastData: -1, epoch: e.epoch}
			if e.n > 0 {
				p.lastData = e.batches[e.n-1].lastOffset
			}
			r.producers[id] = p
		}
	}
	return r, nil
}

// validCleanPointLocked is the clean point, reset to the log start offset
// when it lies outside the log (Kafka's cleanableOffsets).
func (l *Log) validCleanPointLocked() int64 {
	start, end := l.startOffset.Load(), l.nextOffset.Load()
	cp, ok := l.clean.cp.get(l.name)
	if !ok || cp < start || cp > end {
		if ok && l.opts.Load().Compaction.Policy != PolicyCompactDelete {
			l.cfg.logger.Warn("resetting the clean point to the log start offset", "checkpoint", cp, "start", start, "end", end)
		}
		return start
	}
	return cp
}

// firstUncleanableLocked is the base of the first segment the cleaner may
// not touch (see the top of the file).
func (l *Log) firstUncleanableLocked(firstDirty int64, now time.Time) int64 {
	v := &segmentView{tree: l.mu.tree}
	bound := min(l.mu.active.base, l.recoveryPoint.Load())
	if fu := l.FirstUnstableOffset(); fu >= 0 {
		bound = min(bound, fu)
	}
	if lag := l.opts.Load().Compaction.MinCompactionLag; lag > 0 {
		limit := now.Add(-lag).UnixMilli()
		for s := v.floor(firstDirty); s != nil && s.base < bound; s = v.after(s.base) {
			if l.segmentMaxTimestamp(s) > limit {
				bound = s.base
				break
			}
		}
	}
	if s := v.floor(bound); s != nil {
		return s.base
	}
	return bound
}

// dirtyStats are what the picker weighs (Kafka's LogToClean).
type dirtyStats struct {
	cleanBytes, dirtyBytes int64
	ratio                  float64
	overdue                bool // dirty data older than max.compaction.lag.ms
}

// dirtyStats measures the log's clean and cleanable bytes now.
func (l *Log) dirtyStats() dirtyStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	var d dirtyStats
	if l.mu.closed || l.mu.err != nil {
		return d
	}
	now := l.opts.Load().Now()
	firstDirty := l.validCleanPointLocked()
	unclean := l.firstUncleanableLocked(firstDirty, now)
	maxLag := l.opts.Load().Compaction.MaxCompactionLag
	var prev *segment
	account := func(s *segment, next int64) {
		size := s.size.Load()
		if s.base < firstDirty {
			d.cleanBytes += size
		}
		if next > firstDirty && s.base < unclean {
			d.dirtyBytes += size
			if maxLag > 0 && !d.overdue {
				if ts := l.segmentFirstTimestamp(s); ts > 0 && ts < now.Add(-maxLag).UnixMilli() {
					d.overdue = true
				}
			}
		}
	}
	l.mu.tree.Ascend(func(e segEntry) bool {
		if prev != nil {
			account(prev, e.base)
		}
		prev = e.seg
		return e.seg != l.mu.active
	})
	if total := d.cleanBytes + d.dirtyBytes; total > 0 {
		d.ratio = float64(d.dirtyBytes) / float64(total)
	}
	return d
}

// segmentFirstTimestamp is the max timestamp of the segment's first batch
// (Kafka's getFirstBatchTimestampForSegments), -1 when unknown.
func (l *Log) segmentFirstTimestamp(s *segment) int64 {
	f, err := s.acquire()
	if err != nil || f == nil {
		return -1
	}
	defer s.release()
	hr := newHeaderReader(f.log)
	defer hr.close()
	h, err := hr.header(0, s.size.Load())
	if err != nil {
		return -1
	}
	return h.MaxTimestamp
}

// commitCleanPoint moves the log's clean point to end, unless the log was
// truncated since the pass read its range (gen): then the clean point the
// truncation left stays.
func (l *Log) commitCleanPoint(gen, end int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.clean.gen != gen || l.mu.closed {
		return errCleanAborted
	}
	return l.clean.cp.set(l.name, end)
}

// clampCleanPointLocked keeps the clean point at or below the log end after
// a truncation, and fails passes that started before it.
func (l *Log) clampCleanPointLocked() {
	l.clean.gen++
	if l.clean.cp == nil {
		return
	}
	if cp, ok := l.clean.cp.get(l.name); ok && cp > l.nextOffset.Load() {
		if err := l.clean.cp.set(l.name, l.nextOffset.Load()); err != nil {
			l.cfg.logger.Warn("writing the cleaner checkpoint after truncation", "err", err)
		}
	}
}

// LastClean returns the stats of the log's last cleaning pass, if any.
func (l *Log) LastClean() (CleanStats, bool) {
	if st := l.clean.last.Load(); st != nil {
		return *st, true
	}
	return CleanStats{}, false
}

// buildMap maps the dirty section's keys (step 2). It reports whether the map
// filled before the end of the section.
func (c *Cleaner) buildMap(l *Log, r cleanRange, st *CleanStats) (bool, error) {
	c.mapTxns.reset(l.AbortedTxns(c.mapTxns.aborted[:0], r.firstDirty, r.uncleanable))
	for i, s := range r.segs {
		if r.nextBase[i] <= r.firstDirty {
			continue
		}
		full, err := c.mapSegment(l, s, r.firstDirty, st)
		if err != nil || full {
			return full, err
		}
	}
	return false, nil
}

func (c *Cleaner) mapSegment(l *Log, s *segment, firstDirty int64, st *CleanStats) (bool, error) {
	f, err := s.acquire()
	if err != nil {
		return false, err
	}
	if f == nil {
		return false, errCleanAborted
	}
	defer s.release()
	size := s.size.Load()
	hr := newHeaderReader(f.log)
	pos, _, _, err := s.positionOf(f, &hr, size, firstDirty)
	hr.close()
	if err != nil {
		return false, err
	}
	c.rd.reset(f.log, size, c.ioBytes)
	for pos < size {
		if l.closed.Load() {
			return false, errCleanAborted
		}
		b, h, err := c.rd.batch(pos)
		if err != nil {
			return false, err
		}
		st.MapBytesRead += int64(len(b))
		pos += int64(len(b))
		aborted := false
		if h.Control() {
			c.mapTxns.onControl(&h, b)
		} else {
			aborted = c.mapTxns.onData(&h)
		}
		if h.LastOffset() < firstDirty {
			continue
		}
		if !h.Control() && !aborted {
			full, err := c.mapBatch(b, &h, firstDirty)
			if err != nil || full {
				return full, err
			}
		}
		c.m.latest = max(c.m.latest, h.LastOffset())
	}
	return false, nil
}

// mapBatch puts the batch's keyed records at or after firstDirty in the map.
// full is true when a new key found the map full (the batch is then mapped
// only in part and the map's latest offset stays before it).
func (c *Cleaner) mapBatch(b []byte, h *BatchHeader, firstDirty int64) (full bool, err error) {
	recs, pos := b, BatchHeaderSize
	if cd := h.Compression(); cd != CompressionNone {
		if cd > CompressionZstd {
			return false, fmt.Errorf("%w: unknown compression codec %d in the batch at offset %d", ErrCorrupt, int8(cd), h.BaseOffset)
		}
		c.f.scratch, err = decompress(c.f.scratch, cd, b[BatchHeaderSize:])
		if err != nil {
			return false, fmt.Errorf("%w: %v batch at offset %d does not decompress: %v", ErrCorrupt, cd, h.BaseOffset, err)
		}
		recs, pos = c.f.scratch, 0
	}
	for i := int32(0); i < h.NumRecords; i++ {
		var fr recordFrame
		var d defect
		if !scanRecord(recs, pos, &fr, &d) {
			return false, fmt.Errorf("%w: record %d of the batch at offset %d: %v", ErrCorrupt, i, h.BaseOffset, d)
		}
		pos = fr.end
		off := h.BaseOffset + int64(fr.offsetDelta)
		if fr.keyPos < 0 || off < firstDirty {
			continue
		}
		if !c.m.put(recs[fr.keyPos:fr.keyPos+fr.keyLen], off) {
			return true, nil
		}
	}
	return false, nil
}

// groupSegments splits the segments holding offsets below end into groups
// (step 3).
func groupSegments(r cleanRange, end int64, segBytes int64) [][]int {
	var groups [][]int
	var cur []int
	var size int64
	for i, s := range r.segs {
		if s.base >= end {
			break
		}
		n := s.size.Load()
		if len(cur) > 0 && (size+n > segBytes || (n > 0 && r.nextBase[i]-1-r.segs[cur[0]].base > math.MaxInt32)) {
			groups = append(groups, cur)
			cur, size = nil, 0
		}
		cur = append(cur, i)
		size += n
	}
	if len(cur) > 0 {
		groups = append(groups, cur)
	}
	return groups
}

// cleanGroup writes the cleaned segment of one group and swaps it in.
func (c *Cleaner) cleanGroup(l *Log, r cleanRange, g []int, st *CleanStats) error {
	segs := make([]*segment, len(g))
	for i, j := range g {
		segs[i] = r.segs[j]
	}
	base, next := segs[0].base, r.nextBase[g[len(g)-1]]
	paths := cleanedPaths(l.dir, base, cleanedSuffix)
	w, err := c.newSegmentWriter(l, base, paths)
	if err != nil {
		return err
	}
	c.f.txns.kept = c.f.txns.kept[:0]
	err = c.writeGroup(l, segs, w, st)
	if err == nil {
		err = w.finish()
	} else {
		w.abandon()
	}
	kept := c.f.txns.kept
	txn := len(kept) > 0 || c.f.txns.anyMarkerIn(base, next)
	if txn {
		paths = append(paths, segmentName(l.dir, base, txnIndexSuffix)+cleanedSuffix)
	}
	if err == nil && txn {
		// Written even when empty: the swap then replaces the .txnindex
		// of the group's first segment (swap.go).
		c.txnBuf = encodeTxnIndex(c.txnBuf[:0], kept)
		err = writeSynced(l.fs, paths[3], c.txnBuf)
	}
	if err == nil {
		err = l.replaceSegments(segs, base, next, w.size, paths, kept)
	}
	if err != nil {
		// A decided swap (.swap files) is never undone here: the swap
		// itself removes what it did not decide.
		removePaths(l.fs, paths...)
		return err
	}
	st.Groups++
	st.BytesWritten += w.size
	return nil
}

// writeGroup filters every batch of segs into w.
func (c *Cleaner) writeGroup(l *Log, segs []*segment, w *segmentWriter, st *CleanStats) error {
	for _, s := range segs {
		f, err := s.acquire()
		if err != nil {
			return err
		}
		if f == nil {
			return errCleanAborted
		}
		err = c.filterSegment(l, s, f, w, st)
		s.release()
		if err != nil {
			return err
		}
		st.Segments++
	}
	return nil
}

func (c *Cleaner) filterSegment(l *Log, s *segment, f *segmentFiles, w *segmentWriter, st *CleanStats) error {
	size := s.size.Load()
	c.rd.reset(f.log, size, c.ioBytes)
	for pos := int64(0); pos < size; {
		if l.closed.Load() {
			return errCleanAborted
		}
		b, h, err := c.rd.batch(pos)
		if err != nil {
			return err
		}
		pos += int64(len(b))
		st.BytesRead += int64(len(b))
		read, kept, keyless, tombs := c.f.recordsRead, c.f.recordsKept, c.f.keyless, c.f.tombstonesDropped
		aborted, markers := c.f.abortedDropped, c.f.markersDropped
		n := len(c.out)
		if c.out, err = c.f.filterBatch(c.out, b, &h); err != nil {
			return fmt.Errorf("engine: clean %s at position %d: %w", s.logPath(), pos-int64(len(b)), err)
		}
		st.RecordsRead += c.f.recordsRead - read
		st.Removed += (c.f.recordsRead - read) - (c.f.recordsKept - kept)
		st.Keyless += c.f.keyless - keyless
		st.Tombstones += c.f.tombstonesDropped - tombs
		st.Aborted += c.f.abortedDropped - aborted
		st.Markers += c.f.markersDropped - markers
		if len(c.out) > n {
			w.indexBatch(c.out[n:])
		}
		if len(c.out) >= c.ioBytes {
			if err := w.write(c.out); err != nil {
				return err
			}
			c.out = c.out[:0]
		}
	}
	if len(c.out) > 0 {
		if err := w.write(c.out); err != nil {
			return err
		}
		c.out = c.out[:0]
	}
	return nil
}

// cleanedPaths are the log, index and time index paths of a segment at
// base with a suffix after their names (room for the transaction index's
// after them, for a group with one).
func cleanedPaths(dir string, base int64, suffix string) []string {
	return append(make([]string, 0, 4),
		segmentName(dir, base, logSuffix)+suffix,
		segmentName(dir, base, indexSuffix)+suffix,
		segmentName(dir, base, timeIndexSuffix)+suffix,
	)
}

func removePaths(fs FS, paths ...string) {
	for _, p := range paths {
		fs.Remove(p)
	}
}

// segmentWriter writes a cleaned segment: the log through buffered writes,
// the index entries collected in memory (at most segment.index.bytes each)
// and written at the end, as appendLocked and sealLocked would lay them out.
type segmentWriter struct {
	c          *Cleaner
	fs         FS
	paths      []string
	log        File
	base       int64
	interval   int64
	maxIndex   int
	size       int64 // bytes written and indexed
	indexed    int64 // bytes indexed (ahead of size until the buffer is written)
	sinceIndex int64
	maxTs      int64
	maxTsOff   int64
}

func (c *Cleaner) newSegmentWriter(l *Log, base int64, paths []string) (*segmentWriter, error) {
	removePaths(l.fs, paths...) // a failed group removes its .txnindex.cleaned too
	f, err := l.fs.OpenFile(paths[0], os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("engine: create %s: %w", paths[0], err)
	}
	c.ix, c.tix, c.out = c.ix[:0], c.tix[:0], c.out[:0]
	return &segmentWriter{c: c, fs: l.fs, paths: paths, log: f, base: base,
		interval: int64(l.opts.Load().IndexIntervalBytes), maxIndex: l.opts.Load().SegmentIndexBytes, maxTs: -1, maxTsOff: base}, nil
}

// indexBatch adds the index entries of the batch b written next.
func (w *segmentWriter) indexBatch(b []byte) {
	h := parseHeader(b)
	if h.MaxTimestamp > w.maxTs {
		w.maxTs, w.maxTsOff = h.MaxTimestamp, h.LastOffset()
	}
	if w.sinceIndex >= w.interval && len(w.c.tix)+timeIndexEntrySize <= w.maxIndex {
		w.c.ix = appendOffsetEntry(w.c.ix, uint32(h.BaseOffset-w.base), w.indexed)
		w.c.tix = appendTimeEntry(w.c.tix, w.maxTs, uint32(w.maxTsOff-w.base))
		w.sinceIndex = 0
	}
	w.sinceIndex += int64(len(b))
	w.indexed += int64(len(b))
}

func (w *segmentWriter) write(b []byte) error {
	if _, err := w.log.WriteAt(b, w.size); err != nil {
		return fmt.Errorf("engine: write %s at %d: %w", w.paths[0], w.size, err)
	}
	w.size += int64(len(b))
	return nil
}

// finish writes the indexes and makes the three files durable.
func (w *segmentWriter) finish() error {
	if n := len(w.c.tix); w.maxTs >= 0 && (n == 0 || int64(beUint64(w.c.tix[n-timeIndexEntrySize:])) < w.maxTs) && n+timeIndexEntrySize <= w.maxIndex {
		w.c.tix = appendTimeEntry(w.c.tix, w.maxTs, uint32(w.maxTsOff-w.base))
	}
	err := datasync(w.log)
	if cerr := w.log.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = writeSynced(w.fs, w.paths[1], w.c.ix)
	}
	if err == nil {
		err = writeSynced(w.fs, w.paths[2], w.c.tix)
	}
	return err
}

func (w *segmentWriter) abandon() { w.log.Close() }

// writeSynced creates path holding data, fsynced.
func writeSynced(fs FS, path string, data []byte) error {
	f, err := fs.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("engine: create %s: %w", path, err)
	}
	if len(data) > 0 {
		_, err = f.WriteAt(data, 0)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("engine: write %s: %w", path, err)
	}
	return nil
}

// cleanReader reads whole, checked batches of one segment through a buffer
// of the cleaner's I/O size that grows to the largest batch met.
type cleanReader struct {
	f     File
	end   int64
	chunk int
	buf   []byte
	off   int64 // file position of buf[0]
}

func (r *cleanReader) reset(f File, end int64, chunk int) {
	r.f, r.end, r.chunk, r.off = f, end, chunk, 0
	r.buf = r.buf[:0]
}

func (r *cleanReader) fill(pos, need int64) ([]byte, error) {
	if pos+need > r.end {
		return nil, fmt.Errorf("%w: %s at position %d: %d bytes needed, %d left", ErrCorrupt, r.f.Name(), pos, need, r.end-pos)
	}
	if pos >= r.off && pos+need <= r.off+int64(len(r.buf)) {
		return r.buf[pos-r.off : pos-r.off+need], nil
	}
	want := min(max(need, int64(r.chunk)), r.end-pos)
	if int64(cap(r.buf)) < want {
		r.buf = make([]byte, want)
	}
	r.buf = r.buf[:want]
	n, err := r.f.ReadAt(r.buf, pos)
	if int64(n) < want {
		r.buf = r.buf[:0]
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("engine: read %s at %d: %w", r.f.Name(), pos, err)
	}
	r.off = pos
	return r.buf[:need], nil
}

// batch returns the batch at pos, its CRC checked.
func (r *cleanReader) batch(pos int64) ([]byte, BatchHeader, error) {
	hb, err := r.fill(pos, BatchHeaderSize)
	if err != nil {
		return nil, BatchHeader{}, err
	}
	h := parseHeader(hb)
	if h.Length < minBatchLength {
		return nil, h, fmt.Errorf("%w: batch length %d in %s at position %d", ErrCorrupt, h.Length, r.f.Name(), pos)
	}
	b, err := r.fill(pos, h.Size())
	if err != nil {
		return nil, h, err
	}
	if h, err = checkStoredBatch(b); err != nil {
		return nil, h, fmt.Errorf("%s at position %d: %w", r.f.Name(), pos, err)
	}
	return b, h, nil
}
