package engine

// A segment is one .log file of whole RecordBatch v2 batches (see batch.go
// for their layout) with its .index and .timeindex (see index.go), all named
// by the segment's base offset. The .log holds batches back to back from
// position 0; its logical end (size) is kept in memory, and the file beyond
// it is preallocated space (zeros) while the segment is active. On roll and
// on close the file is trimmed to its logical end.
//
// Descriptors: the index files are mapped and closed (index.go), so a
// segment holds at most one descriptor, its .log's, and only while the
// Store's file cache (filecache.go) keeps it open. An inactive segment the
// cache closes drops its mappings too; the active segment keeps them and
// loses only the descriptor, which the next append or read reopens.

import (
	"container/list"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

const (
	preallocMin = 256 << 10 // first reservation of a segment: an idle partition costs at most this
	preallocMax = 16 << 20  // largest reservation step for a busy partition
	scanBufSize = 8 << 10   // header-scan window
)

type segment struct {
	base  int64
	dir   string
	cache *fileCache
	cfg   *segmentConfig

	// size is the logical end of data: [0, size) holds whole batches. The
	// appender stores it after the bytes are written; readers load it.
	size atomic.Int64

	mu struct {
		sync.Mutex
		// refs counts the holders of the segment (readers, views, the
		// appender while it writes): while there are any, files is not
		// replaced and no file is removed. logRefs counts those of them
		// using the log's descriptor right now (a view holds a ref but
		// takes the descriptor only to send its bytes): the cache closes
		// the descriptor only when there are none.
		refs    int
		logRefs int
		retired bool     // removed from the log: no new references
		remove  []string // files to remove once the last reference goes
		logName string   // the .log's name: logPath() until renamed for removal
		// active: the log's active segment. Its files stay (the cache
		// closes only the log's descriptor, files.log), and files is
		// never nil.
		active bool
		files  *segmentFiles
	}
	cacheElem *list.Element // guarded by cache.mu
	used      atomic.Bool   // acquired since the cache last looked (CLOCK)

	// Appender state: the log's lock guards it, and only the active segment
	// uses it.
	w struct {
		allocated       int64     // bytes of the .log reserved on disk
		chunk           int64     // next reservation step
		chunkAt         time.Time // when the last reservation was made
		bytesSinceIndex int64
		maxTimestamp    int64
		offsetOfMaxTs   int64
		firstTimestamp  int64     // max timestamp of the first batch, -1 when none
		created         time.Time // when this segment was created or loaded
		nextOffset      int64     // last offset + 1 of the data (base when empty)
	}
}

// segmentConfig is what a log's segments share of its options. The two
// sizes change with Log.SetOptions: indexInterval is read at each append
// and index rebuild, indexBytes when a segment's index files are created.
type segmentConfig struct {
	fs            FS
	indexInterval atomic.Int64
	indexBytes    atomic.Int64
	logger        *slog.Logger
}

// segmentFiles are a segment's open files. A reader that holds a reference
// may use them without locks: they are closed only with no references.
// log is nil (and fd -1) while the cache has closed an active segment's
// descriptor; acquire reopens it.
type segmentFiles struct {
	log       File
	fd        int // log's descriptor, for sendfile
	index     *offsetIndex
	timeIndex *timeIndex
	writable  bool
}

func newSegment(dir string, base int64, cache *fileCache, cfg *segmentConfig) *segment {
	s := &segment{base: base, dir: dir, cache: cache, cfg: cfg}
	s.mu.logName = s.logPath()
	s.w.nextOffset = base
	s.w.maxTimestamp = -1
	s.w.firstTimestamp = -1
	s.w.offsetOfMaxTs = base
	s.w.chunk = preallocMin
	return s
}

func (s *segment) logPath() string       { return segmentName(s.dir, s.base, logSuffix) }
func (s *segment) indexPath() string     { return segmentName(s.dir, s.base, indexSuffix) }
func (s *segment) timeIndexPath() string { return segmentName(s.dir, s.base, timeIndexSuffix) }

// openFiles opens the segment's files. A writable open creates missing
// files and maps the indexes at full capacity; a read-only open maps them
// as they are and rebuilds an index that is missing or fails its check.
func (s *segment) openFiles(writable bool) (*segmentFiles, error) {
	flag := os.O_RDONLY
	if writable {
		flag = os.O_RDWR | os.O_CREATE
	}
	f := &segmentFiles{writable: writable}
	if err := s.openLog(f, s.logPath(), flag); err != nil {
		return nil, err
	}
	lf := f.log
	if !writable {
		if err := s.openIndexesReadOnly(f); err != nil {
			lf.Close()
			return nil, err
		}
		return f, nil
	}
	ix, err := openIndexFile(s.cfg.fs, s.indexPath(), offsetIndexEntrySize, s.cfg.indexBytes.Load(), true)
	if err != nil {
		lf.Close()
		return nil, err
	}
	tx, err := openIndexFile(s.cfg.fs, s.timeIndexPath(), timeIndexEntrySize, s.cfg.indexBytes.Load(), true)
	if err != nil {
		ix.close(false)
		lf.Close()
		return nil, err
	}
	f.index, f.timeIndex = &offsetIndex{ix}, &timeIndex{tx}
	return f, nil
}

// openLog opens the .log, named name, into f with flag.
func (s *segment) openLog(f *segmentFiles, name string, flag int) error {
	lf, err := s.cfg.fs.OpenFile(name, flag, 0o644)
	if err != nil {
		return fmt.Errorf("engine: open segment %s: %w", name, err)
	}
	f.log, f.fd = lf, int(lf.OS().Fd())
	return nil
}

// reopenLogLocked opens again the descriptor the cache closed (s.mu held),
// under the log's current name: the file exists while the segment has
// references, and an unreferenced retired segment is never reopened.
func (s *segment) reopenLogLocked(f *segmentFiles) error {
	flag := os.O_RDONLY
	if f.writable {
		flag = os.O_RDWR
	}
	return s.openLog(f, s.mu.logName, flag)
}

// renamedLog records the .log's new name (renamed for removal).
func (s *segment) renamedLog(name string) {
	s.mu.Lock()
	s.mu.logName = name
	s.mu.Unlock()
}

// closeLog closes the .log's descriptor, keeping the mappings.
func (f *segmentFiles) closeLog() error {
	if f.log == nil {
		return nil
	}
	err := f.log.Close()
	f.log, f.fd = nil, -1
	return err
}

func (s *segment) openIndexesReadOnly(f *segmentFiles) error {
	size := s.size.Load()
	ix, err := openIndexFile(s.cfg.fs, s.indexPath(), offsetIndexEntrySize, 0, false)
	if err == nil {
		f.index = &offsetIndex{ix}
		if err = f.index.sanityCheck(size); err != nil {
			f.index.close(false)
		}
	}
	if err == nil {
		var tx *indexFile
		tx, err = openIndexFile(s.cfg.fs, s.timeIndexPath(), timeIndexEntrySize, 0, false)
		if err == nil {
			f.timeIndex = &timeIndex{tx}
			if err = f.timeIndex.sanityCheck(); err != nil {
				f.timeIndex.close(false)
				f.index.close(false)
			}
		} else {
			f.index.close(false)
		}
	}
	if err == nil {
		return nil
	}
	// Indexes are derived data: rebuild them from the log.
	s.cfg.logger.Warn("rebuilding segment indexes", "segment", s.logPath(), "reason", err)
	return s.rebuildIndexes(f)
}

// rebuildIndexes rewrites both index files from a scan of the log's batch
// headers and maps the result read-only into f.
func (s *segment) rebuildIndexes(f *segmentFiles) error {
	interval := s.cfg.indexInterval.Load()
	entries := s.size.Load()/interval + 2
	ix, err := openIndexFile(s.cfg.fs, s.indexPath()+".rebuild", offsetIndexEntrySize, entries*offsetIndexEntrySize, true)
	if err != nil {
		return err
	}
	tx, err := openIndexFile(s.cfg.fs, s.timeIndexPath()+".rebuild", timeIndexEntrySize, entries*timeIndexEntrySize, true)
	if err != nil {
		ix.close(false)
		return err
	}
	oi, ti := &offsetIndex{ix}, &timeIndex{tx}
	oi.truncateEntries(0)
	ti.truncateEntries(0)
	hr := newHeaderReader(f.log)
	defer hr.close()
	end := s.size.Load()
	var since int64
	maxTs, maxOff := int64(-1), s.base
	for pos := int64(0); pos < end; {
		h, err := hr.header(pos, end)
		if err != nil {
			break // the log itself was checked when opened; stop at what reads
		}
		if h.MaxTimestamp > maxTs {
			maxTs, maxOff = h.MaxTimestamp, h.LastOffset()
		}
		if since >= interval {
			if err = oi.reserve(); err == nil {
				err = ti.reserve()
			}
			if err != nil {
				oi.close(false)
				ti.close(false)
				return err
			}
			oi.append(uint32(h.BaseOffset-s.base), pos)
			ti.maybeAppend(maxTs, uint32(maxOff-s.base))
			since = 0
		}
		since += h.Size()
		pos += h.Size()
	}
	// As sealLocked does, the last entry records the segment's newest
	// timestamp, which retention and time lookups read from it.
	if maxTs > ti.lastTimestamp() {
		if err := ti.reserve(); err == nil {
			ti.maybeAppend(maxTs, uint32(maxOff-s.base))
		}
	}
	// No fsync: an index is derived data. One lost or torn in a crash fails
	// its sanity check at open, or the check in positionOf at first use, and
	// is rebuilt again.
	err = errors.Join(oi.materialize(), ti.materialize(), oi.close(true), ti.close(true))
	if err == nil {
		err = s.cfg.fs.Rename(s.indexPath()+".rebuild", s.indexPath())
	}
	if err == nil {
		err = s.cfg.fs.Rename(s.timeIndexPath()+".rebuild", s.timeIndexPath())
	}
	if err != nil {
		return fmt.Errorf("engine: rebuild indexes of %s: %w", s.logPath(), err)
	}
	ix, err = openIndexFile(s.cfg.fs, s.indexPath(), offsetIndexEntrySize, 0, false)
	if err != nil {
		return err
	}
	tx, err = openIndexFile(s.cfg.fs, s.timeIndexPath(), timeIndexEntrySize, 0, false)
	if err != nil {
		ix.close(false)
		return err
	}
	f.index, f.timeIndex = &offsetIndex{ix}, &timeIndex{tx}
	return nil
}

// close closes the files; with trim (writable files, the log open) it
// first cuts the log to size and the indexes to their entries.
func (f *segmentFiles) close(size int64, trim bool) error {
	var errs []error
	if trim && f.writable && f.log != nil {
		if err := f.log.Truncate(size); err != nil {
			errs = append(errs, fmt.Errorf("engine: trim %s: %w", f.log.Name(), err))
		}
	}
	if f.index != nil {
		errs = append(errs, f.index.close(trim && f.writable))
	}
	if f.timeIndex != nil {
		errs = append(errs, f.timeIndex.close(trim && f.writable))
	}
	errs = append(errs, f.closeLog())
	return errors.Join(errs...)
}

// flush makes the log's data and both indexes durable.
func (f *segmentFiles) flush() error {
	if err := datasync(f.log); err != nil {
		return err
	}
	if err := f.index.flush(); err != nil {
		return err
	}
	return f.timeIndex.flush()
}

// acquire takes a reference for a reader (or the appender), opening the
// files, or the log's descriptor, if the cache had closed them; the
// descriptor stays open until release. It fails (nil, nil) on a retired
// segment: the caller reloads the log's segment view and tries again.
func (s *segment) acquire() (*segmentFiles, error) {
	s.mu.Lock()
	if s.mu.retired {
		s.mu.Unlock()
		return nil, nil
	}
	opened := false
	if s.mu.files == nil {
		f, err := s.openFiles(false)
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		s.mu.files, opened = f, true
	} else if s.mu.files.log == nil {
		if err := s.reopenLogLocked(s.mu.files); err != nil {
			s.mu.Unlock()
			return nil, err
		}
		opened = true
	}
	s.mu.refs++
	s.mu.logRefs++
	f := s.mu.files
	s.mu.Unlock()
	s.noteUse(opened)
	return f, nil
}

// noteUse tells the cache of a use of the log's descriptor: opened (just
// now, by this use) adds it to the cache, else the used bit is set.
func (s *segment) noteUse(opened bool) {
	if s.cache == nil {
		return
	}
	if opened {
		s.cache.add(s)
	} else if !s.used.Load() {
		s.used.Store(true)
	}
}

// acquireLog takes the log's descriptor for a holder of a reference (a
// view), reopening it if the cache closed it; releaseLog gives it back.
// The reference keeps files and the file itself: a retired segment's is
// reopened under its .deleted name, and not given to the cache (it closes
// with the last reference).
func (s *segment) acquireLog() (*segmentFiles, error) {
	s.mu.Lock()
	if s.mu.refs <= 0 || s.mu.files == nil {
		s.mu.Unlock()
		panic("engine: segment log acquired without a reference")
	}
	f := s.mu.files
	opened := false
	if f.log == nil {
		if err := s.reopenLogLocked(f); err != nil {
			s.mu.Unlock()
			return nil, err
		}
		opened = !s.mu.retired
	}
	s.mu.logRefs++
	s.mu.Unlock()
	s.noteUse(opened)
	return f, nil
}

// releaseLog gives back the descriptor acquireLog (or acquire, for a
// reader that keeps its reference as a view) took.
func (s *segment) releaseLog() {
	s.mu.Lock()
	s.mu.logRefs--
	if s.mu.logRefs < 0 {
		s.mu.Unlock()
		panic("engine: segment log released more often than acquired")
	}
	s.mu.Unlock()
}

// hold is acquire for the users of the active segment under the log's lock
// (the appender, a roll, Close, a truncation), which never find it retired.
func (s *segment) hold() (*segmentFiles, error) {
	f, err := s.acquire()
	if err == nil && f == nil {
		err = fmt.Errorf("engine: active segment %s is retired", s.logPath())
	}
	return f, err
}

// activate makes s its log's active segment with files f, whose log is
// open, and gives the descriptor to the cache.
func (s *segment) activate(f *segmentFiles) {
	s.mu.Lock()
	s.mu.files, s.mu.active = f, true
	s.mu.Unlock()
	if s.cache != nil {
		s.cache.add(s)
	}
}

// deactivate ends s's active life (it rolled). If the cache had closed its
// descriptor, the mappings it kept for appends close too: an inactive
// segment's files are open only while the cache tracks them.
func (s *segment) deactivate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.active = false
	s.dropUntrackedLocked()
}

// dropUntrackedLocked closes the mappings of an inactive segment whose log
// descriptor the cache closed while it was active or held (the cache no
// longer tracks it), once no one holds it.
func (s *segment) dropUntrackedLocked() {
	f := s.mu.files
	if f == nil || f.log != nil || s.mu.active || s.mu.refs != 0 {
		return
	}
	s.mu.files = nil
	if err := f.close(s.size.Load(), false); err != nil {
		s.cfg.logger.Warn("closing idle segment", "segment", s.logPath(), "err", err)
	}
}

// release drops a reference and the descriptor acquire took.
func (s *segment) release() {
	s.mu.Lock()
	s.mu.logRefs--
	s.releaseLocked()
	s.mu.Unlock()
}

// releaseRef drops a reference whose descriptor was given back already
// (releaseLog): a view's.
func (s *segment) releaseRef() {
	s.mu.Lock()
	s.releaseLocked()
	s.mu.Unlock()
}

// releaseLocked drops a reference. The last reference of a retired segment
// closes its files and removes those marked for removal.
func (s *segment) releaseLocked() {
	s.mu.refs--
	if s.mu.refs < 0 || s.mu.logRefs < 0 || s.mu.logRefs > s.mu.refs {
		panic("engine: segment released more often than acquired")
	}
	if s.mu.refs == 0 && s.mu.retired {
		s.finishLocked()
	} else {
		s.dropUntrackedLocked()
	}
}

// retire takes the segment out of service: no new references; files close
// (and the named files are removed) when the last reference goes, which is
// now if there is none. Removing a file a reader still has open is safe:
// its descriptor and mappings keep the bytes until closed.
func (s *segment) retire(remove ...string) {
	s.mu.Lock()
	s.mu.retired = true
	s.mu.active = false
	s.mu.remove = append(s.mu.remove, remove...)
	if s.mu.refs == 0 {
		s.finishLocked()
	}
	s.mu.Unlock()
	if s.cache != nil {
		s.cache.forget(s)
	}
}

// tryRetireIdle retires the segment only if no reader holds it.
func (s *segment) tryRetireIdle() bool {
	s.mu.Lock()
	if s.mu.refs != 0 {
		s.mu.Unlock()
		return false
	}
	s.mu.retired = true
	s.mu.active = false
	s.finishLocked()
	s.mu.Unlock()
	if s.cache != nil {
		s.cache.forget(s)
	}
	return true
}

func (s *segment) finishLocked() {
	if f := s.mu.files; f != nil {
		s.mu.files = nil
		if err := f.close(s.size.Load(), false); err != nil {
			s.cfg.logger.Warn("closing retired segment", "segment", s.logPath(), "err", err)
		}
	}
	for _, p := range s.mu.remove {
		if err := s.cfg.fs.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.cfg.logger.Warn("removing segment file", "file", p, "err", err)
		}
	}
	s.mu.remove = nil
}

// tryCloseIdle closes the segment's log descriptor if no one holds the
// files, and reports whether it is closed: an inactive segment's files
// close whole; the active segment keeps its index mappings. The file cache
// calls it to stay under its bound.
func (s *segment) tryCloseIdle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.mu.files
	if f == nil || f.log == nil {
		return true
	}
	if s.mu.logRefs != 0 {
		return false
	}
	var err error
	if s.mu.active || s.mu.refs != 0 {
		// The mappings stay for the appender, or for the views holding
		// the segment (the last to go closes them: dropUntrackedLocked).
		err = f.closeLog()
	} else {
		s.mu.files = nil
		err = f.close(s.size.Load(), false)
	}
	if err != nil {
		s.cfg.logger.Warn("closing idle segment", "segment", s.logPath(), "err", err)
	}
	return true
}

// headerReader reads batch headers through a small window, so a scan over
// many small batches costs one pread per window, not one per batch.
type headerReader struct {
	f   File
	buf *[scanBufSize]byte
	off int64 // file position of buf[0]
	n   int   // valid bytes in buf
	// stop, when > 0, is where the caller's search ends: a read starting
	// before it takes only the bytes up to it (at least one header), not a
	// whole window. A lookup sets it from the index, so that finding one
	// batch reads about IndexIntervalBytes instead of scanBufSize.
	stop int64
}

var scanBufPool = sync.Pool{New: func() any { return new([scanBufSize]byte) }}

func newHeaderReader(f File) headerReader {
	return headerReader{f: f, buf: scanBufPool.Get().(*[scanBufSize]byte), off: -1}
}

func (r *headerReader) close() {
	if r.buf != nil {
		scanBufPool.Put(r.buf)
		r.buf = nil
	}
}

// header returns the header of the batch at pos, which must end by end. A
// batch that runs past end, or a header that cannot be a batch, is an error
// wrapping ErrCorrupt (io.ErrUnexpectedEOF when pos+61 > end).
func (r *headerReader) header(pos, end int64) (BatchHeader, error) {
	if pos+BatchHeaderSize > end {
		return BatchHeader{}, io.ErrUnexpectedEOF
	}
	if r.off < 0 || pos < r.off || pos+BatchHeaderSize > r.off+int64(r.n) {
		want := min(int64(scanBufSize), end-pos)
		if r.stop > pos {
			want = min(want, max(r.stop-pos, BatchHeaderSize))
		}
		n, err := r.f.ReadAt(r.buf[:want], pos)
		if n < BatchHeaderSize {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			r.off = -1
			return BatchHeader{}, fmt.Errorf("engine: read %s at %d: %w", r.f.Name(), pos, err)
		}
		r.off, r.n = pos, n
	}
	i := pos - r.off
	h, err := ParseBatchHeader(r.buf[i : i+BatchHeaderSize])
	if err != nil {
		return h, err
	}
	if h.Length < BatchHeaderSize-batchLogOverhead || pos+h.Size() > end || h.LastOffsetDelta < 0 {
		return h, fmt.Errorf("%w: batch header in %s at position %d (length %d, %d bytes of data)", ErrCorrupt, r.f.Name(), pos, h.Length, end-pos)
	}
	return h, nil
}

// findBatch returns the position and header of the first batch in [from,
// end) whose last offset is >= target. ok is false when there is none.
func (s *segment) findBatch(hr *headerReader, from, end, target int64) (int64, BatchHeader, bool, error) {
	for pos := from; pos < end; {
		h, err := hr.header(pos, end)
		if err != nil {
			return 0, h, false, err
		}
		if h.LastOffset() >= target {
			return pos, h, true, nil
		}
		pos += h.Size()
	}
	return 0, BatchHeader{}, false, nil
}

// positionOf returns where the first batch with last offset >= target starts
// (end when none does), using the index to skip ahead. It reads only the
// span the index bounds the batch to: from the entry at or below target up
// to the header at the next entry.
func (s *segment) positionOf(f *segmentFiles, hr *headerReader, end, target int64) (int64, BatchHeader, bool, error) {
	from := int64(0)
	if target > s.base {
		rel := target - s.base
		if rel > math.MaxUint32 {
			rel = math.MaxUint32
		}
		var entry uint32
		var next int64
		entry, from, next = f.index.lookupSpan(uint32(rel))
		// The span is a hint for how much to read, never a bound on the
		// scan: a wrong index costs reads, not answers.
		if next >= from {
			hr.stop = next + BatchHeaderSize
		}
		if from > 0 {
			// The entry must name the batch found there; an index that does
			// not (torn by a crash before it reached the disk) is not used.
			if h, err := hr.header(from, end); err != nil || h.BaseOffset != s.base+int64(entry) {
				s.cfg.logger.Warn("index entry does not match the log; scanning from the start", "segment", s.logPath(), "position", from)
				from, hr.stop = 0, 0
			}
		}
	} else {
		hr.stop = BatchHeaderSize
	}
	pos, h, ok, err := s.findBatch(hr, from, end, target)
	hr.stop = 0
	if !ok {
		pos = end
	}
	return pos, h, ok, err
}

// read returns the view for Log.Read on this segment. hi is an offset no
// batch of this segment reaches (the next segment's base, or the log end).
// found is false when the segment has no batch with last offset >= offset.
func (s *segment) read(f *segmentFiles, offset, maxBytes, upTo, hi int64) (View, bool, error) {
	end := s.size.Load()
	hr := newHeaderReader(f.log)
	defer hr.close()
	start, h, ok, err := s.positionOf(f, &hr, end, offset)
	if err != nil || !ok {
		return View{}, false, err
	}
	if h.LastOffset() >= upTo {
		return View{}, true, nil // the batch holding offset is not yet readable
	}
	limit := end
	if upTo < hi {
		limit, _, _, err = s.positionOf(f, &hr, end, upTo)
		if err != nil {
			return View{}, false, err
		}
	}
	stop := start + h.Size() // at least one whole batch
	if limit-start <= maxBytes {
		stop = limit
	} else if h.Size() < maxBytes {
		target := start + maxBytes
		rel, p := f.index.lookupPosition(target)
		if p > stop {
			if bh, err := hr.header(p, limit); err != nil || bh.BaseOffset != s.base+int64(rel) {
				p = stop // an index entry that does not match the log is not used
			}
		}
		for p = max(p, stop); p < limit; {
			bh, err := hr.header(p, limit)
			if err != nil {
				return View{}, false, err
			}
			if p+bh.Size() > target {
				break
			}
			p += bh.Size()
		}
		stop = p
	}
	return View{seg: s, pos: start, n: stop - start}, true, nil
}
