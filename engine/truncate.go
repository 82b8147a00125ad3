package engine

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// TruncateTo removes every record at or after offset, as a follower does
// when its log diverged from the leader's. The log end offset becomes offset,
// or the base offset of the batch holding offset when a batch straddles it
// (batches are kept or removed whole). Truncating at or below the log start
// offset empties the log and restarts it at offset. A high watermark above
// the new log end comes down to it (Kafka's truncateTo). The leader epoch
// cache loses the entries starting at or after offset even when no record
// goes (offset at or past the log end): an epoch a former leader recorded
// at its log end without writing in it, which its new leader never had.
//
// Views already handed out keep reading the bytes they covered: a segment a
// reader holds is not cut in place; its kept prefix is copied to a new file
// and the old file is removed when the last view is released, so later
// appends never overwrite viewed positions.
func (l *Log) TruncateTo(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	if offset >= l.nextOffset.Load() {
		err := l.epochs.truncateFromEnd(offset)
		l.cacheLastEpochLocked()
		return err
	}
	if offset <= l.startOffset.Load() {
		return l.truncateFullyLocked(offset)
	}
	v := &segmentView{tree: l.mu.tree}
	seg := v.floor(offset)
	var later []*segment
	l.mu.tree.AscendGreaterOrEqual(segEntry{base: seg.base + 1}, func(e segEntry) bool {
		later = append(later, e.seg)
		return true
	})

	// Where does the cut go inside seg?
	f, err := seg.acquire()
	if err != nil || f == nil {
		return fmt.Errorf("engine: truncate %s: segment %d unavailable: %v", l.name, seg.base, err)
	}
	hr := newHeaderReader(f.log)
	size := seg.size.Load()
	pos, h, ok, err := seg.positionOf(f, &hr, size, offset)
	hr.close()
	seg.release()
	if err != nil {
		return err
	}
	newEnd := offset
	if ok && h.BaseOffset < offset {
		newEnd = h.BaseOffset
	}

	for _, s := range later {
		l.mu.tree.Delete(segEntry{base: s.base})
	}
	if seg == l.mu.active && pos == size {
		l.publishLocked()
		l.finishTruncateLocked(later, newEnd)
		return nil
	}
	ns, nf, err := l.cutSegmentLocked(seg, pos, newEnd)
	if err != nil {
		l.mu.err = err // the log's files are in an unknown state: reopen
		return fmt.Errorf("%w: %w", ErrLogFailed, err)
	}
	l.mu.tree.ReplaceOrInsert(segEntry{base: ns.base, seg: ns})
	l.mu.active, l.mu.files = ns, nf
	l.publishLocked()
	l.finishTruncateLocked(later, newEnd)
	return nil
}

func (l *Log) finishTruncateLocked(removed []*segment, newEnd int64) {
	for _, s := range removed {
		s.retireAndRemove()
	}
	l.nextOffset.Store(newEnd)
	l.clampHighWatermarkLocked()
	l.clampCleanPointLocked()
	if l.recoveryPoint.Load() > newEnd {
		l.recoveryPoint.Store(newEnd)
	}
	if err := l.loadStateLocked(); err != nil {
		l.mu.err = err
		l.cfg.logger.Error("reloading partition state after truncation", "err", err)
	}
	l.cfg.logger.Info("truncated log", "end", newEnd)
}

// cutSegmentLocked makes a new active segment at seg's base holding seg's
// bytes [0, pos), in place when no reader holds seg, else by copying.
func (l *Log) cutSegmentLocked(seg *segment, pos, newEnd int64) (*segment, *segmentFiles, error) {
	if seg == l.mu.active {
		if err := l.sealActiveLocked(); err != nil {
			return nil, nil, err
		}
	}
	if seg.tryRetireIdle() {
		if err := truncatePath(l.fs, seg.logPath(), pos); err != nil {
			return nil, nil, fmt.Errorf("engine: truncate %s at %d: %w", seg.logPath(), pos, err)
		}
	} else {
		// No new readers (retired before the renames: a reader must not
		// reopen a file the cache closed under a name that is gone); the
		// renamed files are removed with the last reader only once copied
		// (a reader releasing it meanwhile, such as a background flush,
		// would otherwise remove them first).
		seg.retire()
		paths := seg.renameForRemoval()
		if err := copyPrefix(l.fs, paths[0], seg.logPath(), pos); err != nil {
			return nil, nil, err
		}
		if err := errors.Join(copyPrefix(l.fs, paths[1], seg.indexPath(), -1), copyPrefix(l.fs, paths[2], seg.timeIndexPath(), -1)); err != nil {
			return nil, nil, err
		}
		seg.retire(paths...)
	}
	if err := truncateIndexFiles(seg, pos, newEnd); err != nil {
		return nil, nil, err
	}
	ns := newSegment(l.dir, seg.base, l.cache, l.cfg)
	ns.w.chunk = seg.w.chunk
	nf, _, err := l.recoverSegment(ns, false, -1, -1)
	if err != nil {
		return nil, nil, err
	}
	if err := syncDir(l.fs, l.dir); err != nil {
		nf.close(ns.size.Load(), true)
		return nil, nil, err
	}
	ns.activate(nf)
	return ns, nf, nil
}

// truncateIndexFiles cuts seg's index files on disk to the entries below
// pos (offset index) and below newEnd (time index).
func truncateIndexFiles(seg *segment, pos, newEnd int64) error {
	ix, err := openIndexFile(seg.cfg.fs, seg.indexPath(), offsetIndexEntrySize, 0, true)
	if err != nil {
		return err
	}
	oi := &offsetIndex{ix}
	oi.truncateToPosition(pos)
	err = oi.close(true)
	tx, terr := openIndexFile(seg.cfg.fs, seg.timeIndexPath(), timeIndexEntrySize, 0, true)
	if terr != nil {
		return errors.Join(err, terr)
	}
	ti := &timeIndex{tx}
	ti.truncateToOffset(uint32(max(newEnd-seg.base, 0)))
	return errors.Join(err, ti.close(true))
}

// truncateFullyLocked removes every segment and restarts the log at offset.
func (l *Log) truncateFullyLocked(offset int64) error {
	var all []*segment
	l.mu.tree.Ascend(func(e segEntry) bool {
		all = append(all, e.seg)
		return true
	})
	if err := l.sealActiveLocked(); err != nil {
		l.mu.err = err
		return err
	}
	l.mu.tree.Clear(false)
	for _, s := range all {
		s.retireAndRemove()
	}
	s, f, err := l.createSegmentLocked(offset, true)
	if err != nil {
		l.mu.err = err
		return fmt.Errorf("%w: %w", ErrLogFailed, err)
	}
	l.mu.active, l.mu.files = s, f
	l.publishLocked()
	if err := l.setStartOffsetLocked(offset); err != nil {
		l.mu.err = err
		return fmt.Errorf("%w: %w", ErrLogFailed, err)
	}
	l.nextOffset.Store(offset)
	l.highWatermark.Store(offset)
	l.recoveryPoint.Store(offset)
	l.clampCleanPointLocked()
	if err := l.epochs.clear(); err != nil {
		l.mu.err = err
		return fmt.Errorf("%w: %w", ErrLogFailed, err)
	}
	if err := l.loadStateLocked(); err != nil {
		l.mu.err = err
		return fmt.Errorf("%w: %w", ErrLogFailed, err)
	}
	return nil
}

// renameForRemoval renames the segment's files to "<name>.deleted" so a new
// segment of the same base can be created while readers finish with these;
// it returns the new paths (log, index, time index, transaction index).
func (s *segment) renameForRemoval() []string {
	var out []string
	for i, p := range []string{s.logPath(), s.indexPath(), s.timeIndexPath(), s.txnIndexPath()} {
		d := p + deletedSuffix
		if err := s.cfg.fs.Rename(p, d); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.cfg.logger.Warn("renaming segment file for removal", "file", p, "err", err)
			d = p
		}
		if i == 0 {
			s.renamedLog(d) // a view's reopen finds it there
		}
		out = append(out, d)
	}
	return out
}

// retireAndRemove takes the segment out of the log and removes its files
// once no reader holds them. It retires first: no reader may reopen a
// closed file by a name the renames take away.
func (s *segment) retireAndRemove() {
	s.retire()
	s.retire(s.renameForRemoval()...)
}

// sealActiveLocked seals the active segment, holding its log's descriptor
// open for the trim.
func (l *Log) sealActiveLocked() error {
	s := l.mu.active
	if _, err := s.hold(); err != nil {
		return err
	}
	defer s.release()
	return s.sealLocked(l.mu.files)
}

// copyPrefix copies the first n bytes of src (all when n < 0) to a new dst.
func copyPrefix(fs FS, src, dst string, n int64) error {
	in, err := fs.OpenFile(src, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("engine: open %s: %w", src, err)
	}
	defer in.Close()
	out, err := fs.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("engine: create %s: %w", dst, err)
	}
	var r io.Reader = io.NewSectionReader(in, 0, 1<<62)
	if n >= 0 {
		r = io.NewSectionReader(in, 0, n)
	}
	_, err = io.Copy(out, r)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("engine: copy %s to %s: %w", src, dst, err)
	}
	return nil
}

// truncatePath cuts the file at path to size and syncs it.
func truncatePath(fs FS, path string, size int64) error {
	f, err := fs.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
