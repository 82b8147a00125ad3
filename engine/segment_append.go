package engine

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// errSticky marks an append failure after bytes may have reached the file:
// the log must refuse further appends until reopened.
type stickyError struct{ err error }

func (e *stickyError) Error() string { return e.err.Error() }
func (e *stickyError) Unwrap() error { return e.err }

// needsRoll reports why a batch of n bytes whose last offset is last and
// max timestamp ts cannot go into the active segment, or "" when it can.
func (s *segment) needsRoll(f *segmentFiles, n int64, last, ts int64, segBytes int64, segAge time.Duration, now time.Time) string {
	size := s.size.Load()
	switch {
	case last-s.base > math.MaxInt32:
		return "offset overflow" // relative offsets are int32 in Kafka's format
	case size == 0:
		return "" // an empty segment takes any batch
	case size+n > segBytes:
		return "size"
	case s.age(ts, now) > segAge:
		return "age"
	case f.index.full() || f.timeIndex.full():
		return "index full"
	}
	return ""
}

// age is how long the segment has been filling, for segment.ms. As Kafka,
// it compares the incoming batch's timestamp with the first batch's, so
// producer clocks that disagree with the broker's neither roll every batch
// nor never; without timestamps it is the time since the segment began.
func (s *segment) age(ts int64, now time.Time) time.Duration {
	if s.w.firstTimestamp >= 0 && ts >= 0 {
		return time.Duration(ts-s.w.firstTimestamp) * time.Millisecond
	}
	return now.Sub(s.w.created)
}

// appendLocked writes b, a batch whose offsets are assigned and described by
// h, at the segment's end, and indexes it. The log's lock is held. An error
// before any byte is written (no disk space for the reservation) leaves the
// segment as it was; an error from the write itself is a *stickyError.
func (s *segment) appendLocked(f *segmentFiles, b []byte, h *BatchHeader, now time.Time) error {
	pos := s.size.Load()
	end := pos + int64(len(b))
	if end > s.w.allocated {
		if err := s.growLocked(f, end, now); err != nil {
			return err
		}
	}
	indexDue := s.w.bytesSinceIndex >= s.cfg.indexInterval.Load()
	if indexDue {
		if err := f.index.reserve(); err != nil {
			return err
		}
		if err := f.timeIndex.reserve(); err != nil {
			return err
		}
	}
	if n, err := f.log.WriteAt(b, pos); err != nil {
		return &stickyError{fmt.Errorf("engine: write %s at position %d (%d of %d bytes written): %w", f.log.Name(), pos, n, len(b), err)}
	}
	if pos == 0 {
		s.w.firstTimestamp, s.w.created = h.MaxTimestamp, now
	}
	if h.MaxTimestamp > s.w.maxTimestamp {
		s.w.maxTimestamp, s.w.offsetOfMaxTs = h.MaxTimestamp, h.LastOffset()
	}
	if indexDue {
		// Both entries have room reserved: they cannot fail.
		f.index.append(uint32(h.BaseOffset-s.base), pos)
		f.timeIndex.maybeAppend(s.w.maxTimestamp, uint32(s.w.offsetOfMaxTs-s.base))
		s.w.bytesSinceIndex = 0
	}
	s.w.bytesSinceIndex += int64(len(b))
	s.w.nextOffset = h.LastOffset() + 1
	s.size.Store(end)
	return nil
}

// growLocked reserves disk up to at least end. The step adapts to the write
// rate: it doubles (up to preallocMax) when the last reservation was used up
// within a second and halves (down to preallocMin) when it took over ten, so
// a quiet partition holds at most a few MiB it does not use.
func (s *segment) growLocked(f *segmentFiles, end int64, now time.Time) error {
	if !s.w.chunkAt.IsZero() {
		switch d := now.Sub(s.w.chunkAt); {
		case d < time.Second:
			s.w.chunk = min(s.w.chunk*2, preallocMax)
		case d > 10*time.Second:
			s.w.chunk = max(s.w.chunk/2, preallocMin)
		}
	}
	grow := max(s.w.chunk, end-s.w.allocated)
	if err := allocate(f.log, s.w.allocated, grow); err != nil {
		return err
	}
	s.w.allocated += grow
	s.w.chunkAt = now
	return nil
}

// sealLocked ends the segment's active life: the last time-index entry is
// written, and the log and indexes are trimmed to their data. The files stay
// open (readers may hold them); they become read-only in use.
func (s *segment) sealLocked(f *segmentFiles) error {
	var errs []error
	if s.w.maxTimestamp > f.timeIndex.lastTimestamp() && !f.timeIndex.full() {
		if err := f.timeIndex.reserve(); err == nil {
			f.timeIndex.maybeAppend(s.w.maxTimestamp, uint32(s.w.offsetOfMaxTs-s.base))
		} else {
			errs = append(errs, err)
		}
	}
	_, err := s.trimLocked(f)
	errs = append(errs, err, f.index.materialize(), f.timeIndex.materialize())
	return errors.Join(errs...)
}

// trimLocked cuts the log and the indexes to their data, giving back the
// preallocated tails, as a log closes (the segment stays active: its last
// time-index entry is not written, since the next open rescans its tail for
// the newest timestamp anyway, so an index never written stays unmapped).
// trimmed reports whether the log's size changed.
func (s *segment) trimLocked(f *segmentFiles) (trimmed bool, err error) {
	var errs []error
	if size := s.size.Load(); s.w.allocated != size {
		if err := f.log.Truncate(size); err != nil {
			errs = append(errs, &stickyError{fmt.Errorf("engine: trim %s to %d: %w", f.log.Name(), size, err)})
		}
		s.w.allocated, trimmed = size, true
	}
	errs = append(errs, f.index.trim(), f.timeIndex.trim())
	return trimmed, errors.Join(errs...)
}
