package engine

// Retention and the log start offset. Records are kept until retention
// removes them, whether consumed or not: by age (a segment whose newest
// timestamp is older than Retention), by size (the oldest segments while the
// rest exceed RetentionBytes), and below the log start offset that
// DeleteRecordsBefore advances. Whole segments are deleted, never parts; an
// expired active segment is rolled first, so an idle partition's data does
// expire, as in Kafka. Only segments wholly below the high watermark go
// (Kafka's deletableSegments), so retention never moves the log start past
// records not yet replicated: a follower could not fetch them. Deleted
// segments stay readable by views that hold them until released.
//
// The log start offset is checkpointed in the log directory, in the format
// of checkpoint.go, as log-start-offset-checkpoint:
//
//	0
//	1
//	<directory name> <log start offset>

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

const logStartOffsetFile = "log-start-offset-checkpoint"

// readStartOffset reads the log's checkpointed start offset (-1 if none).
func (l *Log) readStartOffset() (int64, error) {
	cp, err := readCheckpoint(l.fs, filepath.Join(l.dir, logStartOffsetFile))
	if err != nil {
		return -1, err
	}
	if off, ok := cp[l.name]; ok {
		return off, nil
	}
	return -1, nil
}

// setStartOffsetLocked durably moves the log start offset to off.
func (l *Log) setStartOffsetLocked(off int64) error {
	if off == l.startOffset.Load() {
		return nil
	}
	if err := writeCheckpoint(l.fs, filepath.Join(l.dir, logStartOffsetFile), map[string]int64{l.name: off}); err != nil {
		return err
	}
	l.startOffset.Store(off)
	if l.highWatermark.Load() < off {
		l.highWatermark.Store(off) // as Kafka's updateLogStartOffset
	}
	if l.epochs != nil {
		return l.epochs.truncateFromStart(off)
	}
	return nil
}

// DeleteRecordsBefore makes offset the log start offset (Kafka's
// DeleteRecords): records below it are no longer readable and the segments
// wholly below it are deleted. It never moves the start backwards; offset
// must not pass the log end offset. It returns the new log start offset.
func (l *Log) DeleteRecordsBefore(offset int64) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return l.startOffset.Load(), err
	}
	if end := l.nextOffset.Load(); offset > end || offset < 0 {
		return l.startOffset.Load(), fmt.Errorf("%w: delete records before %d, log %s ends at %d", ErrOffsetOutOfRange, offset, l.name, end)
	}
	if offset <= l.startOffset.Load() {
		return l.startOffset.Load(), nil
	}
	err := l.advanceStartLocked(offset)
	return l.startOffset.Load(), err
}

// ApplyRetention deletes the segments that retention by time, by size or
// the log start offset no longer keeps, and returns how many it deleted.
// It also forgets the producers idle for ProducerIDExpiration (state.go).
// The Store runs it in the background.
func (l *Log) ApplyRetention() (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return 0, err
	}
	l.expireProducersLocked()
	total := 0
	start := l.startOffset.Load()
	n, err := l.deleteSegmentsLocked(func(s, next *segment) bool { return next != nil && next.base <= start }, "log start offset")
	total += n
	if err != nil {
		return total, err
	}
	o := l.opts.Load()
	if !o.Compaction.Policy.deletes() {
		return total, nil // cleanup.policy=compact: kept until compacted away
	}
	if r := o.Retention; r > 0 {
		limit := o.Now().Add(-r).UnixMilli()
		n, err := l.deleteSegmentsLocked(func(s, next *segment) bool {
			if s.size.Load() == 0 {
				return next != nil // emptied by the cleaner: nothing to keep
			}
			return l.segmentMaxTimestamp(s) < limit
		}, "retention.ms")
		total += n
		if err != nil {
			return total, err
		}
	}
	if rb := o.RetentionBytes; rb > 0 {
		excess := l.sizeLocked() - rb
		n, err := l.deleteSegmentsLocked(func(s, next *segment) bool {
			if size := s.size.Load(); excess-size >= 0 && size > 0 {
				excess -= size
				return true
			}
			return false
		}, "retention.bytes")
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (l *Log) sizeLocked() int64 {
	var n int64
	l.mu.tree.Ascend(func(e segEntry) bool {
		n += e.seg.size.Load()
		return true
	})
	return n
}

// deleteSegmentsLocked deletes segments from the oldest on while del holds
// (s is the segment, next the one after it or nil for the active one). If
// the active segment must go too, the log rolls first so a new empty active
// segment remains. The log start offset moves to the first kept segment.
func (l *Log) deleteSegmentsLocked(del func(s, next *segment) bool, reason string) (int, error) {
	var doomed []*segment
	var prev *segment
	hw := l.highWatermark.Load()
	l.mu.tree.Ascend(func(e segEntry) bool {
		if prev != nil {
			if e.seg.base > hw || !del(prev, e.seg) {
				prev = nil
				return false
			}
			doomed = append(doomed, prev)
		}
		prev = e.seg
		return true
	})
	if prev != nil && prev == l.mu.active && l.nextOffset.Load() <= hw && del(prev, nil) {
		if err := l.rollLocked(l.nextOffset.Load(), "expired by "+reason); err != nil {
			return 0, err
		}
		doomed = append(doomed, prev)
	}
	if len(doomed) == 0 {
		return 0, nil
	}
	for _, s := range doomed {
		l.mu.tree.Delete(segEntry{base: s.base})
	}
	first, _ := l.mu.tree.Min()
	l.dropAbortedBelowLocked(first.base)
	newStart := max(l.startOffset.Load(), first.base)
	var err error
	if newStart > l.startOffset.Load() {
		err = l.setStartOffsetLocked(newStart)
	}
	l.publishLocked()
	for _, s := range doomed {
		l.cfg.logger.Info("deleting segment", "reason", reason, "segment", s.base, "bytes", s.size.Load())
		s.retireAndRemove()
	}
	if serr := syncDir(l.fs, l.dir); err == nil {
		err = serr
	}
	return len(doomed), err
}

// segmentMaxTimestamp is the newest timestamp in s: the active segment's
// appender state, a sealed segment's last time-index entry, or, for a
// segment without timestamps, its file's modification time (as Kafka).
func (l *Log) segmentMaxTimestamp(s *segment) int64 {
	if s == l.mu.active {
		if s.w.maxTimestamp >= 0 {
			return s.w.maxTimestamp
		}
	} else if f, err := s.acquire(); err == nil && f != nil {
		ts := f.timeIndex.lastTimestamp()
		s.release()
		if ts >= 0 {
			return ts
		}
	}
	fi, err := l.fs.Stat(s.logPath())
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			l.cfg.logger.Warn("stat for retention", "segment", s.logPath(), "err", err)
		}
		return time.Now().UnixMilli() // unknown: keep it
	}
	return fi.ModTime().UnixMilli()
}
