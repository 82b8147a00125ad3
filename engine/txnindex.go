package engine

// The aborted transaction index, Kafka's .txnindex: for each transaction
// aborted in a log, the producer, the offset range the transaction spans and
// the last stable offset once it was aborted, so a read_committed fetch can
// tell its client which records to drop (Kafka's collectAbortedTxns). Each
// segment's file holds the entries of the abort markers in that segment,
// in marker order, named by the segment's base offset like its other files
// (00000000000000368769.txnindex); a segment without an abort has none.
// Entries are 34 bytes, big-endian, as Kafka's AbortedTxn:
//
//	offset  size  field
//	     0     2  version             int16  0
//	     2     8  producer id         int64
//	    10     8  first offset        int64  the transaction's first batch
//	    18     8  last offset         int64  the abort marker's offset
//	    26     8  last stable offset  int64  after the abort: the first offset of the
//	                                         oldest transaction still open, else last offset + 1
//	                                         (below first offset when an older one is open)
//
// These constants are part of the file format and must not change.
//
// Unlike Kafka, which appends to the file and rebuilds it when it recovers
// the segment, the engine rewrites a segment's file whole with
// writeFileAtomic at each abort marker (aborts are rare, a segment holds
// few), so the file is always whole and synced once its marker's append
// returns. The log keeps every entry in memory (Log.aborted, guarded by
// Log.mu, and published in Log.abortedView for AbortedTxns, which takes no
// lock). At open (loadStateLocked) the entries of markers below the
// producer snapshot the state is loaded from are read from the files, and
// those from it on come from the replay of the log after it, which rewrites
// the files that differ; a damaged file makes the open replay the whole log
// instead. A segment's file goes with the segment; truncation replays from a
// snapshot at or below the new end, so entries above it go too. The cleaner
// writes a cleaned segment's file with its other files and swaps them in
// together (swap.go), keeping only the entries of abort markers whose
// transactions still have records (cleantxn.go). A file whose segment is
// gone (an orphan) or that is empty is stale, and removed at open.

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
)

const (
	txnIndexSuffix    = ".txnindex"
	txnIndexEntrySize = 34
	txnIndexVersion   = 0
)

// AbortedTxn is an aborted transaction: producer ProducerID's records in
// [FirstOffset, LastOffset) are aborted, LastOffset being its abort marker;
// LastStableOffset is the log's last stable offset once it was aborted.
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

func (s *segment) txnIndexPath() string { return segmentName(s.dir, s.base, txnIndexSuffix) }

// encodeTxnIndex appends the file content of entries to dst.
func encodeTxnIndex(dst []byte, entries []AbortedTxn) []byte {
	be := binary.BigEndian
	for _, e := range entries {
		dst = be.AppendUint16(dst, txnIndexVersion)
		dst = be.AppendUint64(dst, uint64(e.ProducerID))
		dst = be.AppendUint64(dst, uint64(e.FirstOffset))
		dst = be.AppendUint64(dst, uint64(e.LastOffset))
		dst = be.AppendUint64(dst, uint64(e.LastStableOffset))
	}
	return dst
}

// decodeTxnIndex parses the content of the .txnindex of the segment at
// base. Every defect is an error wrapping ErrCorrupt naming path and the
// byte position.
func decodeTxnIndex(path string, base int64, b []byte) ([]AbortedTxn, error) {
	bad := func(pos int, format string, args ...any) error {
		return fmt.Errorf("%w: transaction index %s at position %d: %s", ErrCorrupt, path, pos, fmt.Sprintf(format, args...))
	}
	if len(b)%txnIndexEntrySize != 0 {
		return nil, bad(len(b)/txnIndexEntrySize*txnIndexEntrySize, "%d bytes, not a whole number of %d-byte entries", len(b), txnIndexEntrySize)
	}
	be := binary.BigEndian
	out := make([]AbortedTxn, 0, len(b)/txnIndexEntrySize)
	prev := base - 1
	for p := 0; p < len(b); p += txnIndexEntrySize {
		if v := int16(be.Uint16(b[p:])); v != txnIndexVersion {
			return nil, bad(p, "entry version %d, want %d", v, txnIndexVersion)
		}
		e := AbortedTxn{
			ProducerID:       int64(be.Uint64(b[p+2:])),
			FirstOffset:      int64(be.Uint64(b[p+10:])),
			LastOffset:       int64(be.Uint64(b[p+18:])),
			LastStableOffset: int64(be.Uint64(b[p+26:])),
		}
		if e.ProducerID < 0 || e.FirstOffset < 0 || e.FirstOffset >= e.LastOffset || e.LastOffset <= prev || e.LastStableOffset < 0 || e.LastStableOffset > e.LastOffset+1 {
			return nil, bad(p, "entry %+v after last offset %d", e, prev)
		}
		prev = e.LastOffset
		out = append(out, e)
	}
	return out, nil
}

// AbortedTxns appends to dst the aborted transactions that overlap
// [from, to): whose records a read_committed fetch of that range must drop,
// oldest abort first, as Kafka's collectAbortedTxns: entries whose last
// offset is at or after from and whose first offset is below to, up to the
// first whose last stable offset reaches to (no transaction aborted later
// can start below it). It does not allocate when dst has room, and takes
// no lock (the read_committed fetch path calls it).
func (l *Log) AbortedTxns(dst []AbortedTxn, from, to int64) []AbortedTxn {
	v := l.abortedView.Load()
	if v == nil {
		return dst
	}
	es := *v
	i := abortedFrom(es, from)
	for _, e := range es[i:] {
		if e.FirstOffset < to {
			dst = append(dst, e)
		}
		if e.LastStableOffset >= to {
			break
		}
	}
	return dst
}

// abortedFrom is the index of the first entry of es (by marker offset)
// whose marker is at or after offset.
func abortedFrom(es []AbortedTxn, offset int64) int {
	i, _ := slices.BinarySearchFunc(es, offset, func(e AbortedTxn, off int64) int { return cmp.Compare(e.LastOffset, off) })
	return i
}

// trackControlLocked records a control batch (header h, its record cr)
// about to update the producer state: if it ends its producer's open
// transaction with an abort, the entry is added and its segment's file
// rewritten. It returns the error of the write, which fails the log
// (sticky).
func (l *Log) trackControlLocked(h *BatchHeader, cr ControlRecord) error {
	first := l.producers.openTxnFirst(h.ProducerID)
	if first < 0 {
		return nil
	}
	if cr.Type != ControlAbort {
		return nil
	}
	e := AbortedTxn{ProducerID: h.ProducerID, FirstOffset: first, LastOffset: h.BaseOffset, LastStableOffset: l.producers.lastStableAfter(h.ProducerID, h.BaseOffset)}
	l.aborted = append(l.aborted, e)
	l.publishAbortedLocked()
	if err := l.writeTxnIndexLocked(l.mu.active); err != nil {
		l.mu.err = err
		return fmt.Errorf("%w: %w", ErrLogFailed, err)
	}
	return nil
}

// segmentEntries is the part of l.aborted whose markers lie in s.
func (l *Log) segmentEntries(s *segment) []AbortedTxn {
	es := l.aborted
	lo := abortedFrom(es, s.base)
	n := len(es)
	if hi, ok := l.nextSegmentBase(s.base); ok {
		n = abortedFrom(es, hi)
	}
	return es[lo:n]
}

// writeTxnIndexLocked writes s's .txnindex from l.aborted, or removes it
// when s has no abort.
func (l *Log) writeTxnIndexLocked(s *segment) error {
	es := l.segmentEntries(s)
	if len(es) == 0 {
		if err := l.fs.Remove(s.txnIndexPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("engine: remove %s: %w", s.txnIndexPath(), err)
		} else if err == nil {
			return syncDir(l.fs, l.dir)
		}
		return nil
	}
	return writeFileAtomic(l.fs, s.txnIndexPath(), encodeTxnIndex(nil, es))
}

// readTxnIndexesLocked reads the .txnindex files of the log's segments and
// returns their entries by marker offset, without duplicates. whole is
// false when one is damaged (logged) or two disagree on a marker: the
// caller then rebuilds them all. stale are the files to remove once the
// live ones are written: those whose segment is gone (a segment's file
// goes with it and a cleaned segment's is swapped in with it, so an orphan
// is a leftover whose entries no marker backs) and empty ones (a cleaned
// segment's that kept no entry, whose removal a crash interrupted).
func (l *Log) readTxnIndexesLocked() (entries []AbortedTxn, whole bool, stale []string, err error) {
	ents, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return nil, false, nil, fmt.Errorf("engine: read log dir %s: %w", l.dir, err)
	}
	whole = true
	for _, de := range ents {
		base, ok := parseSegmentName(de.Name(), txnIndexSuffix)
		if !ok {
			continue
		}
		path := segmentName(l.dir, base, txnIndexSuffix)
		if _, live := l.mu.tree.Get(segEntry{base: base}); !live {
			stale = append(stale, path)
			continue
		}
		data, err := readFile(l.fs, path)
		if err != nil {
			return nil, false, nil, fmt.Errorf("engine: read %s: %w", path, err)
		}
		if len(data) == 0 {
			stale = append(stale, path)
			continue
		}
		es, err := decodeTxnIndex(path, base, data)
		if err != nil {
			l.cfg.logger.Warn("rebuilding the transaction indexes: one is damaged", "log", l.name, "err", err)
			whole = false
			continue
		}
		entries = append(entries, es...)
	}
	slices.SortFunc(entries, func(a, b AbortedTxn) int { return cmp.Compare(a.LastOffset, b.LastOffset) })
	entries = slices.Compact(entries)
	for i := 1; i < len(entries); i++ {
		if entries[i].LastOffset == entries[i-1].LastOffset {
			l.cfg.logger.Warn("rebuilding the transaction indexes: two disagree", "log", l.name, "marker", entries[i].LastOffset)
			whole = false
		}
	}
	return entries, whole, stale, nil
}

// removeTxnIndexFiles removes the given .txnindex files durably.
func (l *Log) removeTxnIndexFiles(paths []string) error {
	for _, p := range paths {
		if err := l.fs.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("engine: remove %s: %w", p, err)
		}
	}
	if len(paths) > 0 {
		return syncDir(l.fs, l.dir)
	}
	return nil
}

// rebuildAbortedLocked sets l.aborted at open: the entries stored in the
// files whose markers lie below from (the offset the producer state was
// replayed from), then those of the replayed markers in ends (the
// transactions a control batch ended) that are aborts. Files that differ
// from it are rewritten: all of them if one was damaged (whole false). The
// stale files go last.
func (l *Log) rebuildAbortedLocked(stored []AbortedTxn, whole bool, stale []string, from int64, ends []AbortedTxn) error {
	n := abortedFrom(stored, from)
	aborted := slices.Clip(stored[:n])
	var buf []byte
	for _, e := range ends {
		v, err := l.Read(e.LastOffset, 1, e.LastOffset+1)
		if err == nil {
			buf, err = v.AppendTo(buf[:0])
			v.Release()
		}
		if err != nil {
			return fmt.Errorf("engine: log %s: reading the marker at offset %d: %w", l.name, e.LastOffset, err)
		}
		cr, err := ParseControlBatch(buf)
		if err != nil {
			l.cfg.logger.Warn("skipping a control batch that does not parse", "log", l.name, "offset", e.LastOffset, "err", err)
			continue
		}
		if cr.Type == ControlAbort {
			aborted = append(aborted, e)
		}
	}
	l.aborted = aborted
	l.publishAbortedLocked()
	if whole && slices.Equal(stored[n:], aborted[n:]) {
		return l.removeTxnIndexFiles(stale)
	}
	var err error
	l.mu.tree.Ascend(func(se segEntry) bool {
		if whole && se.base < from {
			if next, ok := l.nextSegmentBase(se.base); ok && next <= from {
				return true // holds no marker at or after from
			}
		}
		err = l.writeTxnIndexLocked(se.seg)
		return err == nil
	})
	if err != nil {
		return err
	}
	return l.removeTxnIndexFiles(stale)
}

// nextSegmentBase is the base of the segment after the one at base.
func (l *Log) nextSegmentBase(base int64) (next int64, ok bool) {
	l.mu.tree.AscendGreaterOrEqual(segEntry{base: base + 1}, func(e segEntry) bool {
		next, ok = e.base, true
		return false
	})
	return next, ok
}

// dropAbortedBelowLocked forgets the entries of markers below offset, the
// base of the log's first segment once older ones are deleted (their files
// go with them).
func (l *Log) dropAbortedBelowLocked(offset int64) {
	n := abortedFrom(l.aborted, offset)
	if n > 0 {
		// A new array: readers may hold the old one.
		l.aborted = slices.Clone(l.aborted[n:])
		l.publishAbortedLocked()
	}
}

// publishAbortedLocked makes l.aborted what AbortedTxns reads.
func (l *Log) publishAbortedLocked() {
	es := l.aborted
	l.abortedView.Store(&es)
}
