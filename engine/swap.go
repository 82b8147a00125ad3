package engine

// Swapping cleaned segments in, crash-safe, as Kafka's
// LocalLog.replaceSegments and LogLoader (removeTempFilesAndCollectSwapFiles
// and the swap recovery after it).
//
// A cleaned segment is written as <base>.log.cleaned, <base>.index.cleaned
// and <base>.timeindex.cleaned (cleaner.go), and <base>.txnindex.cleaned
// when the group held an abort marker (the entries kept, maybe none), all
// fsynced. Then:
//
//  1. They are renamed to .swap (the indexes first, the log last) and
//     the directory is fsynced: from here on the swap is decided, and a
//     crash completes it at the next open.
//  2. Under the log's lock, each old segment of the group is taken out of
//     service (new readers retry on the new view), its files (.txnindex
//     too) are renamed to .deleted, the .swap files are renamed to their
//     live names (the log last), the segment tree gets the new segment in
//     place of the old ones and is published, the log's aborted
//     transactions of the group's range become the entries kept (an empty
//     .txnindex is removed), and the directory is fsynced. Readers still
//     holding an old segment keep reading its open files; the .deleted
//     files are removed when the last of them releases it.
//
// So the aborted transaction index changes with the segments, never
// before or after them: a crash leaves either the old segments with their
// entries or the new one with its own, and no entry of a marker the
// cleaner removed.
//
// A group whose records all go and which is not the log's first segment
// gets no new segment: steps 1 and the swap renames are skipped, and its
// segments are removed (each held only records that later ones
// supersede, so a crash that removes some of them and not others leaves a
// consistent log). The log's first segment is always replaced, by an empty
// segment if need be, so the log start offset does not move.
//
// At open (recoverSwaps), before segments are listed: .cleaned files are
// removed (a swap not decided); for each <base>.log.swap, the live segments
// whose base offset lies in [base, the swap's next offset) — the ones it
// replaces — are removed and the .swap files renamed to their live names;
// index .swap files without their log are removed; .deleted files are
// removed as always. A live <base>.txnindex stays when there is no
// <base>.txnindex.swap: the old ones were all renamed away before any
// .swap became live, so it is the new segment's, already renamed (a group
// that had aborted transactions always writes the file). Old segments of the group past the swap's last batch
// may survive such a crash; they hold offsets after the swap's and are
// cleaned again by the next pass, which starts from the clean point of the
// pass that crashed.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// replaceSegments swaps the cleaned segment at base, size bytes of log
// whose files are at cleaned (log, index, time index: cleanedPaths, then
// the transaction index when the group had aborted transactions), in for
// olds, which cover [base, next); kept are the aborted transactions whose
// markers it keeps. It returns errCleanAborted when olds are no longer all
// the log's.
func (l *Log) replaceSegments(olds []*segment, base, next, size int64, cleaned []string, kept []AbortedTxn) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed || l.mu.err != nil {
		return errCleanAborted
	}
	for _, s := range olds {
		if e, ok := l.mu.tree.Get(segEntry{base: s.base}); !ok || e.seg != s || s == l.mu.active {
			return errCleanAborted
		}
	}
	first, _ := l.mu.tree.Min()
	replace := size > 0 || first.seg == olds[0]
	// A group without aborted transactions has no transaction index (and
	// its segments none): no call is made for one.
	txn := len(cleaned) > 3
	swap := cleanedPaths(l.dir, base, swapSuffix)
	order := []int{1, 2, 0} // the log last: its .swap decides
	if txn {
		swap = append(swap, segmentName(l.dir, base, txnIndexSuffix)+swapSuffix)
		order = []int{3, 1, 2, 0}
	}
	if replace {
		for _, i := range order {
			if err := l.fs.Rename(cleaned[i], swap[i]); err != nil {
				// Not decided: the log .swap, renamed last, does not exist.
				removePaths(l.fs, swap...)
				return fmt.Errorf("engine: rename %s: %w", cleaned[i], err)
			}
		}
		if err := syncDir(l.fs, l.dir); err != nil {
			// The swap may or may not be decided on disk: only a reopen
			// knows which.
			l.mu.err = err
			return fmt.Errorf("%w: %w", ErrLogFailed, err)
		}
	} else {
		removePaths(l.fs, cleaned...)
	}

	for _, s := range olds {
		s.mu.Lock()
		s.mu.retired = true
		s.mu.Unlock()
		l.cache.forget(s)
	}
	deleted := make([][]string, len(olds))
	var errs []error
	for i, s := range olds {
		files := append(make([]string, 0, 4), s.logPath(), s.indexPath(), s.timeIndexPath())
		if txn {
			files = append(files, s.txnIndexPath())
		}
		for j, p := range files {
			err := l.fs.Rename(p, p+deletedSuffix)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("engine: rename %s for removal: %w", p, err))
				continue
			}
			if j == 0 {
				s.renamedLog(p + deletedSuffix)
			}
			deleted[i] = append(deleted[i], p+deletedSuffix)
		}
	}
	if replace && len(errs) == 0 {
		live := cleanedPaths(l.dir, base, "")
		if txn {
			live = append(live, segmentName(l.dir, base, txnIndexSuffix))
		}
		for _, i := range order {
			if err := l.fs.Rename(swap[i], live[i]); err != nil {
				// The log's .swap stays: the reopen completes the swap
				// from it, the files not yet renamed included.
				errs = append(errs, fmt.Errorf("engine: rename %s: %w", swap[i], err))
				break
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		// The files are half swapped; a reopen completes the swap (the
		// .swap is durable). Until then the log refuses writes, and the old
		// segments serve reads from the files they have open.
		for _, s := range olds {
			s.mu.Lock()
			s.mu.retired = false
			s.mu.Unlock()
		}
		l.mu.err = err
		return fmt.Errorf("%w: %w", ErrLogFailed, err)
	}
	for _, s := range olds {
		l.mu.tree.Delete(segEntry{base: s.base})
	}
	var ns *segment
	if replace {
		ns = newSegment(l.dir, base, l.cache, l.cfg)
		ns.size.Store(size)
		l.mu.tree.ReplaceOrInsert(segEntry{base: base, seg: ns})
	}
	l.publishLocked()
	for i, s := range olds {
		s.retire(deleted[i]...)
	}
	// A new array, never the old one changed in place: AbortedTxns' readers
	// may hold it (txnindex.go's publishAbortedLocked).
	lo, hi := abortedFrom(l.aborted, base), abortedFrom(l.aborted, next)
	na := make([]AbortedTxn, 0, len(l.aborted)-(hi-lo)+len(kept))
	na = append(append(append(na, l.aborted[:lo]...), kept...), l.aborted[hi:]...)
	l.aborted = na
	l.publishAbortedLocked()
	if ns != nil && len(kept) == 0 {
		if err := l.writeTxnIndexLocked(ns); err != nil { // removes an empty one
			l.mu.err = err
			return fmt.Errorf("%w: %w", ErrLogFailed, err)
		}
	}
	if err := syncDir(l.fs, l.dir); err != nil {
		l.mu.err = err
		return fmt.Errorf("%w: %w", ErrLogFailed, err)
	}
	return nil
}

// recoverSwaps completes the swaps a crash interrupted and removes the
// files of undecided ones (see the top of the file). It reports whether it
// changed the directory.
func (l *Log) recoverSwaps(entries []os.DirEntry) (bool, error) {
	type seg struct {
		base int64
		name string
	}
	var live []seg
	swaps := map[int64]bool{}
	var swapIndexes []string
	changed := false
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, cleanedSuffix):
			l.removeFile(name)
			changed = true
		case strings.HasSuffix(name, swapSuffix):
			stem := strings.TrimSuffix(name, swapSuffix)
			if base, ok := parseSegmentName(stem, logSuffix); ok {
				swaps[base] = true
			} else {
				swapIndexes = append(swapIndexes, stem)
			}
		default:
			for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
				if base, ok := parseSegmentName(name, suf); ok {
					live = append(live, seg{base, name})
				}
			}
		}
	}
	txnSwaps := map[int64]bool{}
	for _, stem := range swapIndexes {
		base, ok := parseSegmentName(stem, indexSuffix)
		if !ok {
			base, ok = parseSegmentName(stem, timeIndexSuffix)
		}
		if !ok {
			if base, ok = parseSegmentName(stem, txnIndexSuffix); ok {
				txnSwaps[base] = true
			}
		}
		if !ok || !swaps[base] {
			l.removeFile(stem + swapSuffix)
			changed = true
		}
	}
	for base := range swaps {
		changed = true
		next, err := swapNextOffset(l.fs, segmentName(l.dir, base, logSuffix)+swapSuffix, base)
		if err != nil {
			return changed, err
		}
		hi := max(next, base+1)
		for _, s := range live {
			if s.base == base && !txnSwaps[base] && strings.HasSuffix(s.name, txnIndexSuffix) {
				continue // the new segment's (see the top of the file)
			}
			if s.base >= base && s.base < hi {
				l.cfg.logger.Info("removing a segment file a cleaned segment replaces", "file", s.name, "swap", base)
				l.removeFile(s.name)
			}
		}
		live := append(cleanedPaths(l.dir, base, ""), segmentName(l.dir, base, txnIndexSuffix))
		for _, i := range []int{3, 1, 2, 0} { // the log last: a crash here redoes it all
			p := live[i]
			if err := l.fs.Rename(p+swapSuffix, p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return changed, fmt.Errorf("engine: complete the swap of %s: %w", p, err)
			}
		}
		l.cfg.logger.Info("completed an interrupted segment swap", "segment", base, "next_offset", next)
	}
	if changed {
		return true, syncDir(l.fs, l.dir)
	}
	return false, nil
}

// swapNextOffset is the offset after the last batch of the segment file at
// path (base when it is empty). The file was fsynced before it was named
// .swap: a batch that does not read is corruption.
func swapNextOffset(fs FS, path string, base int64) (int64, error) {
	f, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return 0, fmt.Errorf("engine: open %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("engine: stat %s: %w", path, err)
	}
	hr := newHeaderReader(f)
	defer hr.close()
	next := base
	for pos := int64(0); pos < fi.Size(); {
		h, err := hr.header(pos, fi.Size())
		if err != nil {
			return 0, fmt.Errorf("%w: swap file %s at position %d: %v", ErrCorrupt, filepath.Base(path), pos, err)
		}
		next = h.LastOffset() + 1
		pos += h.Size()
	}
	return next, nil
}

func appendOffsetEntry(dst []byte, rel uint32, pos int64) []byte {
	dst = binary.BigEndian.AppendUint32(dst, rel)
	return binary.BigEndian.AppendUint32(dst, uint32(pos))
}

func appendTimeEntry(dst []byte, ts int64, rel uint32) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(ts))
	return binary.BigEndian.AppendUint32(dst, rel)
}

func beUint64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }
