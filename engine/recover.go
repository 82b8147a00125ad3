package engine

// Opening a log. After a clean shutdown only the tail of the last segment
// (from its last index entry) is checked. After an unclean stop every
// segment from the one holding the recovery point on is read batch by
// batch: each batch's length, magic and CRC are checked and its offsets must
// increase. The first batch that fails ends the log: a zeroed tail (the
// preallocated space), a short tail (a torn write) or corrupt bytes are cut
// off, later segments are removed, and the scanned segments' indexes are
// rebuilt.

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
)

// load finds the segments in the directory and recovers them.
func (l *Log) load(clean bool, recoveryPoint int64) error {
	entries, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("engine: read log dir %s: %w", l.dir, err)
	}
	if changed, err := l.recoverSwaps(entries); err != nil {
		return err
	} else if changed {
		if entries, err = l.fs.ReadDir(l.dir); err != nil {
			return fmt.Errorf("engine: read log dir %s: %w", l.dir, err)
		}
	}
	type found struct {
		base int64
		size int64
	}
	var segs []found
	logs := map[int64]bool{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, deletedSuffix) || strings.HasSuffix(name, ".rebuild") || strings.HasSuffix(name, ".tmp") {
			l.removeFile(name)
			continue
		}
		if base, ok := parseSegmentName(name, logSuffix); ok {
			info, err := e.Info()
			if err != nil {
				return fmt.Errorf("engine: stat %s: %w", name, err)
			}
			segs = append(segs, found{base, info.Size()})
			logs[base] = true
		}
	}
	for _, e := range entries { // indexes whose log is gone
		name := e.Name()
		for _, suf := range []string{indexSuffix, timeIndexSuffix} {
			if base, ok := parseSegmentName(name, suf); ok && !logs[base] {
				l.removeFile(name)
			}
		}
	}
	slices.SortFunc(segs, func(a, b found) int { return int(min(max(a.base-b.base, -1), 1)) })
	for _, f := range segs {
		s := newSegment(l.dir, f.base, l.cache, l.cfg)
		s.size.Store(f.size)
		l.mu.tree.ReplaceOrInsert(segEntry{base: f.base, seg: s})
	}
	cpStart, err := l.readStartOffset()
	if err != nil {
		return err
	}
	if len(segs) == 0 {
		base := max(cpStart, 0)
		// No strays at base: the loop above removed the indexes whose log
		// is gone.
		s, f, err := l.createSegmentLocked(base, false)
		if err != nil {
			return err
		}
		l.mu.active, l.mu.files = s, f
		l.publishLocked()
		l.nextOffset.Store(base)
		l.startOffset.Store(base)
		l.recoveryPoint.Store(base)
		return nil
	}

	// Recover [first, last]: the last segment only after a clean shutdown.
	first := segs[len(segs)-1].base
	if !clean {
		first = segs[0].base
		for _, f := range segs {
			if f.base <= recoveryPoint {
				first = f.base
			}
		}
	}
	prevNext := int64(-1)
	var toRecover []*segment
	l.mu.tree.AscendGreaterOrEqual(segEntry{base: first}, func(e segEntry) bool {
		toRecover = append(toRecover, e.seg)
		return true
	})
	for i, s := range toRecover {
		last := i == len(toRecover)-1
		nextBase := int64(-1)
		if !last {
			nextBase = toRecover[i+1].base
		}
		f, truncated, err := l.recoverSegment(s, !clean, prevNext, nextBase)
		if err != nil {
			return err
		}
		prevNext = s.w.nextOffset
		if truncated && !last {
			for _, later := range toRecover[i+1:] {
				l.cfg.logger.Warn("removing segment after a truncated one", "segment", later.logPath())
				l.mu.tree.Delete(segEntry{base: later.base})
				later.retireAndRemove()
			}
			last = true
		}
		if last {
			s.activate(f)
			l.mu.active, l.mu.files = s, f
			break
		}
		if err := s.sealLocked(f); err != nil {
			f.close(s.size.Load(), false)
			return err
		}
		if err := f.close(s.size.Load(), false); err != nil {
			return err
		}
	}
	if !clean {
		// Segments removed after a cut must stay removed. After a clean
		// stop nothing here changes a name that matters (leftovers that
		// come back after a crash are removed again): no fsync, so that
		// a restart does not cost one per partition.
		if err := syncDir(l.fs, l.dir); err != nil {
			return err
		}
	}
	l.publishLocked()
	l.nextOffset.Store(l.mu.active.w.nextOffset)
	l.startOffset.Store(min(max(segs[0].base, cpStart), l.mu.active.w.nextOffset))
	if clean {
		l.recoveryPoint.Store(l.mu.active.w.nextOffset)
	} else {
		l.recoveryPoint.Store(min(recoveryPoint, l.mu.active.w.nextOffset))
	}
	return nil
}

func (l *Log) removeFile(name string) {
	if err := l.fs.Remove(l.dir + "/" + name); err != nil && !errors.Is(err, os.ErrNotExist) {
		l.cfg.logger.Warn("removing leftover file", "file", name, "err", err)
	}
}

// recoverSegment opens s writable and checks its batches: all of them when
// full, else those after its last index entry. prevNext is the offset the
// previous segment ended at (-1 for none); nextBase is the base offset of
// the next segment (-1 when s is the last). It cuts the file at the first
// batch that fails and reports whether it cut batches that may have held
// data (later segments must then go).
func (l *Log) recoverSegment(s *segment, full bool, prevNext int64, nextBase int64) (*segmentFiles, bool, error) {
	f, err := s.openFiles(true)
	if err != nil {
		return nil, false, err
	}
	fi, err := f.log.Stat()
	if err != nil {
		err = fmt.Errorf("engine: stat %s: %w", f.log.Name(), err)
		f.close(0, false)
		return nil, false, err
	}
	fileSize := fi.Size()
	br := batchReader{f: f.log, end: fileSize}
	from := int64(0)
	if !full {
		if err := errors.Join(f.index.sanityCheck(fileSize), f.timeIndex.sanityCheck()); err != nil {
			l.cfg.logger.Warn("rebuilding indexes", "segment", s.logPath(), "reason", err)
			full = true
		} else if n := f.index.count(); n > 0 {
			from = int64(f.index.position(n - 1))
			// The entry must name the batch found there (as in positionOf):
			// a scan from inside a batch would cut good data.
			if _, h, err := br.batch(from); err != nil || h.BaseOffset != s.base+int64(f.index.relOffset(n-1)) {
				l.cfg.logger.Warn("rebuilding indexes", "segment", s.logPath(), "reason", "the last index entry does not match the log", "position", from)
				full, from = true, 0
			}
		}
	}
	if full {
		f.index.truncateEntries(0)
		f.timeIndex.truncateEntries(0)
	} else if n := f.timeIndex.count(); n > 0 {
		s.w.maxTimestamp = f.timeIndex.timestamp(n - 1)
		s.w.offsetOfMaxTs = s.base + int64(f.timeIndex.relOffset(n-1))
	}
	s.w.allocated = fileSize

	expect := max(prevNext, s.base)
	pos := from
	var stop error
	for pos < fileSize {
		b, h, err := br.batch(pos)
		if err == nil && (h.BaseOffset < expect || h.LastOffset()-s.base > math.MaxInt32) {
			err = fmt.Errorf("%w: batch in %s at position %d has offsets [%d, %d], expected from %d", ErrCorrupt, f.log.Name(), pos, h.BaseOffset, h.LastOffset(), expect)
		}
		if err != nil {
			stop = err
			break
		}
		if pos == 0 {
			s.w.firstTimestamp = h.MaxTimestamp
		}
		if h.MaxTimestamp > s.w.maxTimestamp {
			s.w.maxTimestamp, s.w.offsetOfMaxTs = h.MaxTimestamp, h.LastOffset()
		}
		if pos != from && s.w.bytesSinceIndex >= s.cfg.indexInterval.Load() {
			if err := errors.Join(f.index.reserve(), f.timeIndex.reserve()); err != nil {
				f.close(0, false)
				return nil, false, err
			}
			f.index.append(uint32(h.BaseOffset-s.base), pos)
			f.timeIndex.maybeAppend(s.w.maxTimestamp, uint32(s.w.offsetOfMaxTs-s.base))
			s.w.bytesSinceIndex = 0
		}
		s.w.bytesSinceIndex += int64(len(b))
		s.w.nextOffset = h.LastOffset() + 1
		expect = s.w.nextOffset
		pos += int64(len(b))
	}
	if pos > 0 && from > 0 {
		hr := newHeaderReader(f.log)
		if h, err := hr.header(0, fileSize); err == nil {
			s.w.firstTimestamp = h.MaxTimestamp
		}
		hr.close()
	}
	s.w.created = l.opts.Load().Now()
	truncated := false
	if pos < fileSize {
		zeros := br.zeroFrom(pos)
		switch {
		case zeros && nextBase < 0:
			// The preallocated tail: the normal end of an active segment.
		case zeros && nextBase == s.w.nextOffset:
			// The preallocated tail of a rolled segment whose trim did not
			// reach the disk (its data was already synced, so the roll's
			// trim was the only change): its batches end where the next
			// segment begins, so nothing is missing.
			l.cfg.logger.Info("truncating the untrimmed preallocated tail of a rolled segment", "segment", s.logPath(), "position", pos, "bytes", fileSize-pos)
		case zeros:
			// Batches of an earlier segment that never reached the disk: a
			// hole, and later segments must go (as Kafka does).
			l.cfg.logger.Warn("truncating zeroed tail of a segment that is not the last", "segment", s.logPath(), "position", pos, "bytes", fileSize-pos)
			truncated = true
		case errors.Is(stop, io.ErrUnexpectedEOF):
			l.cfg.logger.Info("truncating torn tail", "segment", s.logPath(), "position", pos, "bytes", fileSize-pos)
			truncated = true
		default:
			l.cfg.logger.Warn("truncating corrupt data", "segment", s.logPath(), "position", pos, "bytes", fileSize-pos, "err", stop)
			truncated = true
		}
		f.index.truncateToPosition(pos)
		f.timeIndex.truncateToOffset(uint32(max(s.w.nextOffset-s.base, 0)))
		if err := f.log.Truncate(pos); err != nil {
			err = fmt.Errorf("engine: truncate %s at %d: %w", f.log.Name(), pos, err)
			f.close(0, false)
			return nil, false, err
		}
		s.w.allocated = pos
	}
	s.size.Store(pos)
	return f, truncated, nil
}

// batchReader reads whole batches sequentially through a buffer that grows
// to the largest batch met.
type batchReader struct {
	f   File
	end int64
	buf []byte
	off int64 // file position of buf[0]
	n   int
}

// fill makes [pos, pos+need) available in the buffer, reading ahead.
func (r *batchReader) fill(pos, need int64) ([]byte, error) {
	if pos+need > r.end {
		return nil, fmt.Errorf("%s at position %d: %d bytes needed, %d left: %w", r.f.Name(), pos, need, r.end-pos, io.ErrUnexpectedEOF)
	}
	if pos >= r.off && pos+need <= r.off+int64(r.n) && r.buf != nil {
		return r.buf[pos-r.off : pos-r.off+need], nil
	}
	want := min(max(need, 1<<20), r.end-pos)
	if int64(cap(r.buf)) < want {
		r.buf = make([]byte, want)
	}
	r.buf = r.buf[:want]
	n, err := r.f.ReadAt(r.buf, pos)
	r.off, r.n = pos, n
	if int64(n) < need {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("engine: read %s at %d: %w", r.f.Name(), pos, err)
	}
	return r.buf[:need], nil
}

// batch returns the checked batch at pos.
func (r *batchReader) batch(pos int64) ([]byte, BatchHeader, error) {
	hb, err := r.fill(pos, BatchHeaderSize)
	if err != nil {
		return nil, BatchHeader{}, err
	}
	h, err := ParseBatchHeader(hb)
	if err != nil {
		return nil, h, err
	}
	if h.Length < BatchHeaderSize-batchLogOverhead {
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

// zeroFrom reports whether the file holds only zeros from pos to its end.
func (r *batchReader) zeroFrom(pos int64) bool {
	buf := make([]byte, 64<<10)
	for pos < r.end {
		n, err := r.f.ReadAt(buf[:min(int64(len(buf)), r.end-pos)], pos)
		for _, c := range buf[:n] {
			if c != 0 {
				return false
			}
		}
		if n == 0 || (err != nil && err != io.EOF) {
			return err == io.EOF
		}
		pos += int64(n)
	}
	return true
}
