package engine

// Timestamp lookups: what Kafka's ListOffsets answers for a timestamp and
// for MAX_TIMESTAMP (-3, KIP-734). The broker maps the other special
// timestamps (-1 latest, -2 earliest) to EndOffset and StartOffset itself,
// and bounds every answer by the high watermark, as Kafka's Partition does.
//
// Both follow Kafka 3.9 (UnifiedLog.fetchOffsetByTimestamp,
// LogSegment.findOffsetByTimestamp, FileRecords.searchForTimestamp,
// RecordBatch.offsetOfMaxTimestamp):
//
//   - a segment's largest timestamp decides whether it is searched; the first
//     segment whose largest timestamp is >= the target is searched from the
//     position its time index gives for the target (the floor entry, then the
//     offset index for that entry's offset);
//   - batches whose max timestamp is below the target are skipped by header;
//     the records of the first batch reaching it (decompressed if need be,
//     control batches included, as Kafka iterates them) are read for the
//     first record, in offset order, with timestamp >= target and offset >=
//     the log start offset. In a LogAppendTime batch every record's timestamp
//     is the batch's max timestamp.
//
// A segment's largest timestamp is its time index's last entry combined with
// the headers of the batches after the last offset-index entry (fewer than
// IndexIntervalBytes of log, one read): every batch up to and including the
// one at the last offset-index entry is covered by the time index, since
// both entries are written together, and the tail is read, so the answer is
// exact for the active segment too without taking the log's lock, and for a
// segment sealed with a full time index or with rebuilt indexes (which carry
// no final entry).
//
// Lookups take no lock of the log: like Read, they load the log end offset
// and the published segment view and hold a reference on each segment they
// read, so appends, rolls and retention never wait for them.

import (
	"fmt"
	"slices"
	"sync"
)

// OffsetForTimestamp returns the offset and timestamp of the first record,
// in offset order, whose timestamp is >= ts, among the records at or after
// the log start offset: what Kafka's ListOffsets returns for a timestamp.
// When every record is older than ts, or the log is empty, it returns offset
// -1 and timestamp -1 and no error. The timestamp returned is the record's
// (the batch's max timestamp for a LogAppendTime batch).
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, err error) {
	sc := timeScans.Get().(*timeScan)
	defer sc.put()
	for {
		if l.closed.Load() {
			return -1, -1, ErrClosed
		}
		// As in Read: the end offset before the view, so every segment
		// holding an offset below end is in the view.
		end := l.nextOffset.Load()
		start := l.startOffset.Load()
		v := l.view.Load()
		retry := false
		for s := firstSegmentAt(v, start); s != nil && s.base < end; s = v.after(s.base) {
			f, err := s.acquire()
			if err != nil {
				return -1, -1, err
			}
			if f == nil {
				retry = true // retired under us: reload the view
				break
			}
			off, t, found, err := s.findTimestamp(f, sc, ts, start, end)
			s.release()
			if err != nil || found {
				return off, t, err
			}
		}
		if !retry {
			return -1, -1, nil
		}
	}
}

// MaxTimestampOffset returns the offset and timestamp of the record with the
// largest timestamp: ListOffsets' MAX_TIMESTAMP (-3). On ties the earliest
// offset wins, as in Kafka: the first segment with the largest max
// timestamp, its first batch reaching it, that batch's first record whose
// timestamp equals the batch's max timestamp (the first record of a
// LogAppendTime batch). An empty log gives -1, -1. As in Kafka, a segment's
// records below the log start offset still count toward its largest
// timestamp; segments wholly below it do not.
func (l *Log) MaxTimestampOffset() (offset int64, timestamp int64, err error) {
	sc := timeScans.Get().(*timeScan)
	defer sc.put()
	for {
		if l.closed.Load() {
			return -1, -1, ErrClosed
		}
		end := l.nextOffset.Load()
		v := l.view.Load()
		var (
			best      *segment // holds a reference while set
			bestFiles *segmentFiles
			bestMax   int64
			retry     bool
		)
		for s := firstSegmentAt(v, l.startOffset.Load()); s != nil && s.base < end; s = v.after(s.base) {
			f, err := s.acquire()
			if err != nil {
				if best != nil {
					best.release()
				}
				return -1, -1, err
			}
			if f == nil {
				retry = true
				break
			}
			m, has, err := s.largestTimestamp(f, s.size.Load(), end)
			if err != nil {
				s.release()
				if best != nil {
					best.release()
				}
				return -1, -1, err
			}
			if !has || (best != nil && m <= bestMax) {
				s.release()
				continue
			}
			if best != nil {
				best.release()
			}
			best, bestFiles, bestMax = s, f, m
		}
		if retry {
			if best != nil {
				best.release()
			}
			continue
		}
		if best == nil {
			return -1, -1, nil
		}
		off, t, found, err := best.findMaxTimestamp(bestFiles, sc, bestMax, end)
		best.release()
		if err != nil || !found {
			return -1, -1, err
		}
		return off, t, nil
	}
}

// firstSegmentAt returns the segment holding offset, or the first segment
// when offset is below them all.
func firstSegmentAt(v *segmentView, offset int64) *segment {
	if s := v.floor(offset); s != nil {
		return s
	}
	return v.after(-1)
}

// timeScan is the scratch of a lookup: the bytes of one batch and an
// iterator over its records (its decompression buffer included). Pooled, so
// reading a batch's records allocates nothing once the pool is warm.
type timeScan struct {
	buf []byte // one batch, read from the segment
	it  RecordIterator
}

var timeScans = sync.Pool{New: func() any {
	sc := new(timeScan)
	sc.it.control = true // Kafka's lookups iterate control records too
	return sc
}}

// maxPooledScanBytes bounds the buffers a pooled timeScan keeps: one huge
// batch should not pin its size in the pool.
const maxPooledScanBytes = 4 << 20

func (sc *timeScan) put() {
	sc.it.reset(nil)
	if cap(sc.buf) > maxPooledScanBytes {
		sc.buf = nil
	}
	if cap(sc.it.buf) > maxPooledScanBytes {
		sc.it.buf = nil
	}
	timeScans.Put(sc)
}

// largestTimestamp returns the largest max timestamp of the segment's
// batches in [0, size) with base offset below end, and whether there is any
// such batch (see the top of the file for why the time index alone is not
// enough). Index entries of a batch being appended (at or past size, or at
// or past end) are passed over: the appender writes them before it
// publishes the batch.
func (s *segment) largestTimestamp(f *segmentFiles, size, end int64) (int64, bool, error) {
	if size == 0 {
		return -1, false, nil
	}
	m := int64(-1)
	for i := f.timeIndex.count() - 1; i >= 0; i-- {
		if s.base+int64(f.timeIndex.relOffset(i)) < end {
			m = f.timeIndex.timestamp(i)
			break
		}
	}
	hr := newHeaderReader(f.log)
	defer hr.close()
	from := int64(0)
	for i := f.index.count() - 1; i >= 0; i-- {
		pos, base := int64(f.index.position(i)), s.base+int64(f.index.relOffset(i))
		if pos >= size || base >= end {
			continue
		}
		// The entry must name the batch found there (see positionOf); if
		// not, the indexes cannot be trusted: read every header.
		if h, err := hr.header(pos, size); err != nil || h.BaseOffset != base {
			s.cfg.logger.Warn("index entry does not match the log; scanning the segment for its largest timestamp", "segment", s.logPath(), "position", pos)
			m = -1
		} else {
			from = pos
		}
		break
	}
	has := from > 0
	for pos := from; pos < size; {
		h, err := hr.header(pos, size)
		if err != nil {
			return -1, false, fmt.Errorf("engine: largest timestamp of %s: %w", s.logPath(), err)
		}
		if h.BaseOffset >= end {
			break
		}
		m = max(m, h.MaxTimestamp)
		has = true
		pos += h.Size()
	}
	return m, has, nil
}

// startFor returns where a search for timestamp ts among offsets >= from
// starts in the segment: the batch holding the offset of the time index's
// floor entry for ts (every batch before it has a max timestamp below ts),
// or the batch holding from if that is later.
func (s *segment) startFor(f *segmentFiles, hr *headerReader, size, ts, from int64) (int64, error) {
	target := s.base
	if _, rel, ok := f.timeIndex.lookup(ts); ok {
		target += int64(rel)
	}
	pos, _, _, err := s.positionOf(f, hr, size, max(target, from))
	return pos, err
}

// findTimestamp searches the segment for the first record with timestamp
// >= ts and offset in [from, end). It skips the segment when its largest
// timestamp is below ts.
func (s *segment) findTimestamp(f *segmentFiles, sc *timeScan, ts, from, end int64) (int64, int64, bool, error) {
	size := s.size.Load()
	m, has, err := s.largestTimestamp(f, size, end)
	if err != nil || !has || m < ts {
		return -1, -1, false, err
	}
	hr := newHeaderReader(f.log)
	defer hr.close()
	pos, err := s.startFor(f, &hr, size, ts, from)
	if err != nil {
		return -1, -1, false, err
	}
	for pos < size {
		h, err := hr.header(pos, size)
		if err != nil {
			return -1, -1, false, fmt.Errorf("engine: timestamp lookup in %s: %w", s.logPath(), err)
		}
		if h.BaseOffset >= end {
			break
		}
		if h.MaxTimestamp >= ts && h.LastOffset() >= from {
			it, err := sc.records(s, f, pos, &h)
			if err != nil {
				return -1, -1, false, err
			}
			for it.Next() {
				r := &it.rec
				if r.Timestamp >= ts && r.Offset >= from && r.Offset < end {
					return r.Offset, r.Timestamp, true, nil
				}
			}
			if err := it.Err(); err != nil {
				return -1, -1, false, fmt.Errorf("engine: timestamp lookup in %s, batch at position %d: %w", s.logPath(), pos, err)
			}
		}
		pos += h.Size()
	}
	return -1, -1, false, nil
}

// findMaxTimestamp returns the record Kafka answers MAX_TIMESTAMP with, in
// the segment whose largest timestamp is maxTs: in the first batch (below
// end) whose max timestamp is maxTs, the first record whose timestamp equals
// the batch's max timestamp. found is false when there is none (a batch
// whose header claims a timestamp none of its records has, or a batch not
// yet below end).
func (s *segment) findMaxTimestamp(f *segmentFiles, sc *timeScan, maxTs, end int64) (int64, int64, bool, error) {
	size := s.size.Load()
	hr := newHeaderReader(f.log)
	defer hr.close()
	pos, err := s.startFor(f, &hr, size, maxTs, s.base)
	if err != nil {
		return -1, -1, false, err
	}
	for pos < size {
		h, err := hr.header(pos, size)
		if err != nil {
			return -1, -1, false, fmt.Errorf("engine: max timestamp lookup in %s: %w", s.logPath(), err)
		}
		if h.BaseOffset >= end {
			break
		}
		if h.MaxTimestamp == maxTs {
			it, err := sc.records(s, f, pos, &h)
			if err != nil {
				return -1, -1, false, err
			}
			for it.Next() {
				if it.rec.Timestamp == h.MaxTimestamp {
					return it.rec.Offset, it.rec.Timestamp, true, nil
				}
			}
			if err := it.Err(); err != nil {
				return -1, -1, false, fmt.Errorf("engine: max timestamp lookup in %s, batch at position %d: %w", s.logPath(), pos, err)
			}
			return -1, -1, false, nil // as Kafka: only the first such batch
		}
		pos += h.Size()
	}
	return -1, -1, false, nil
}

// records reads the batch at pos, described by h, and returns an iterator
// over its records (control records included).
func (sc *timeScan) records(s *segment, f *segmentFiles, pos int64, h *BatchHeader) (*RecordIterator, error) {
	n := int(h.Size())
	sc.buf = slices.Grow(sc.buf[:0], n)[:n]
	if _, err := f.log.ReadAt(sc.buf, pos); err != nil {
		return nil, fmt.Errorf("engine: read batch of %d bytes in %s at position %d: %w", n, s.logPath(), pos, err)
	}
	sc.it.reset(sc.buf)
	return &sc.it, nil
}
