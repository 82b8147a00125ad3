package engine

// Per-partition state kept beside the log, as Kafka's log layer keeps it:
// the leader-epoch cache (epochcache.go: which epoch wrote from which offset,
// for OffsetForLeaderEpoch and follower truncation) and the idempotent
// producers' state (producerstate.go: the last batches' sequences, so a
// retried batch is recognised and answered with its original offsets, also
// after a restart, and their open transactions: the first offset of the
// oldest is the log's first unstable offset, which bounds the last stable
// offset). Both are updated under the log's lock with every append and
// truncated with the log. The producer state is snapshotted when a
// segment rolls and when the log closes; opening replays the batch headers
// after the newest snapshot.
//
// A producer idle for Options.ProducerIDExpiration (its last batch's max
// timestamp that long before Options.Now) is forgotten, as Kafka's
// producer.id.expiration.ms: by ApplyRetention, which a Store runs on every
// log, written to or not, each StoreOptions.RetentionCheckInterval (Kafka
// runs its check apart, every producer.id.expiration.check.interval.ms, 10
// minutes by default), and when the snapshot is loaded.

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"
)

// DefaultProducerIDExpiration is Kafka's producer.id.expiration.ms.
const DefaultProducerIDExpiration = 24 * time.Hour

// loadStateLocked opens the epoch cache and rebuilds the producer state from
// the newest snapshot at or below the log end plus a scan of the batches
// after it.
func (l *Log) loadStateLocked() error {
	if l.epochs == nil {
		c, err := openEpochCache(l.fs, l.dir)
		if err != nil {
			return err
		}
		l.epochs = c
	}
	end := l.nextOffset.Load()
	if err := l.epochs.truncateFromEnd(end); err != nil {
		return err
	}
	if err := l.epochs.truncateFromStart(l.startOffset.Load()); err != nil {
		return err
	}
	if err := removeSnapshotsAbove(l.fs, l.dir, end); err != nil {
		return err
	}
	ps, from, err := loadLatestSnapshot(l.fs, l.dir, l.cfg.logger)
	if err != nil {
		return err
	}
	stored, whole, stale, err := l.readTxnIndexesLocked()
	if err != nil {
		return err
	}
	if !whole { // a damaged transaction index: replay the whole log
		ps, from = newProducerState(), -1
	}
	// Producers already expired are not loaded, as in Kafka's
	// ProducerStateManager.loadFromSnapshot; those replayed from the log
	// below expire at the next check.
	o := l.opts.Load()
	ps.expire(o.Now().UnixMilli(), o.ProducerIDExpiration.Milliseconds())
	from = max(from, l.startOffset.Load())
	l.snapshotAt.Store(from)
	l.sinceSnapshot = 0
	var ends []AbortedTxn // transactions ended by the markers replayed
	var markerBuf []byte
	err = l.scanHeaders(from, func(h *BatchHeader, f File, pos int64) error {
		if h.LastOffset() >= from {
			l.sinceSnapshot += h.Size()
		}
		if h.ProducerID >= 0 && h.LastOffset() >= from {
			marker := h.Control() && h.NumRecords > 0
			coordEpoch := int32(-1)
			if marker {
				// The marker's record: its coordinator epoch fences older
				// coordinators' markers.
				if int64(cap(markerBuf)) < h.Size() {
					markerBuf = make([]byte, h.Size())
				}
				mb := markerBuf[:h.Size()]
				if _, err := f.ReadAt(mb, pos); err != nil {
					return fmt.Errorf("read the marker at offset %d (%s position %d): %w", h.BaseOffset, f.Name(), pos, err)
				}
				if cr, err := ParseControlBatch(mb); err == nil && (cr.Type == ControlAbort || cr.Type == ControlCommit) {
					coordEpoch = cr.CoordinatorEpoch
				}
				if first := ps.openTxnFirst(h.ProducerID); first >= 0 {
					ends = append(ends, AbortedTxn{ProducerID: h.ProducerID, FirstOffset: first, LastOffset: h.BaseOffset, LastStableOffset: ps.lastStableAfter(h.ProducerID, h.BaseOffset)})
				}
			}
			ps.update(h, h.BaseOffset, h.MaxTimestamp)
			if coordEpoch >= 0 {
				ps.setCoordinatorEpoch(h.ProducerID, coordEpoch)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("engine: rebuilding producer state of %s: %w", l.name, err)
	}
	if err := l.rebuildAbortedLocked(stored, whole, stale, from, ends); err != nil {
		return err
	}
	if l.producers != nil {
		ps.verifying = l.producers.verifying // in memory only: kept across a rebuild
	}
	l.producers = ps
	l.firstUnstable.Store(ps.firstUnstableOffset())
	l.cacheLastEpochLocked()
	return nil
}

// cacheLastEpochLocked sets lastEpoch from the epoch cache.
func (l *Log) cacheLastEpochLocked() {
	if e, _, ok := l.epochs.latest(); ok {
		l.lastEpoch = e
	} else {
		l.lastEpoch = -1
	}
}

// scanHeaders calls fn with the header of every batch whose last offset is
// at or after from, in offset order, with the segment's .log file and the
// batch's position in it; an error from fn stops the scan.
func (l *Log) scanHeaders(from int64, fn func(h *BatchHeader, f File, pos int64) error) error {
	v := l.view.Load()
	for s := v.floor(from); s != nil; s = v.after(s.base) {
		f, err := s.acquire()
		if err != nil {
			return err
		}
		if f == nil {
			continue
		}
		hr := newHeaderReader(f.log)
		end := s.size.Load()
		start, _, _, err := s.positionOf(f, &hr, end, from)
		var h BatchHeader // one for the scan: fn's pointer would move it to the heap per batch
		for pos := start; err == nil && pos < end; {
			if h, err = hr.header(pos, end); err == nil {
				err = fn(&h, f.log, pos)
				pos += h.Size()
			}
		}
		hr.close()
		s.release()
		if err != nil {
			return err
		}
	}
	return nil
}

// trackAppendLocked records an appended batch in the epoch cache and the
// producer state, and an abort marker in the aborted transaction index. b
// is the batch as written.
func (l *Log) trackAppendLocked(b []byte, h *BatchHeader) error {
	if h.LeaderEpoch >= 0 && h.LeaderEpoch != l.lastEpoch {
		if err := l.epochs.assign(h.LeaderEpoch, h.BaseOffset); err != nil {
			return err
		}
		if e, _, ok := l.epochs.latest(); ok {
			l.lastEpoch = e
		}
	}
	marker := h.Control() && h.ProducerID >= 0 && h.NumRecords > 0
	var cr ControlRecord
	if marker {
		var err error
		if cr, err = ParseControlBatch(b); err != nil {
			return fmt.Errorf("log %s: %w", l.name, err)
		}
		if err := l.trackControlLocked(h, cr); err != nil {
			return err
		}
	}
	if h.ProducerID >= 0 && l.producers.update(h, h.BaseOffset, h.MaxTimestamp) {
		l.firstUnstable.Store(l.producers.firstUnstableOffset())
	}
	if marker && (cr.Type == ControlAbort || cr.Type == ControlCommit) {
		l.producers.setCoordinatorEpoch(h.ProducerID, cr.CoordinatorEpoch)
	}
	return nil
}

// Producers appends to dst the state of every producer the log knows, by
// increasing producer id (DescribeProducers). It takes the log's lock.
func (l *Log) Producers(dst []ProducerInfo) []ProducerInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.producers == nil {
		return dst
	}
	return l.producers.appendInfo(dst)
}

// LastStableOffset is the offset below which every record is committed or
// aborted and replicated, as Kafka's UnifiedLog.lastStableOffset: the first
// unstable offset, if it is below the high watermark, else the high
// watermark. A read_committed consumer reads up to it. It takes no lock.
func (l *Log) LastStableOffset() int64 {
	hw := l.highWatermark.Load()
	if fu := l.FirstUnstableOffset(); fu >= 0 && fu < hw {
		return fu
	}
	return hw
}

// FirstUnstableOffset is the first offset of the oldest transaction still
// open in the log, or -1 with none open; never below the log start offset:
// a transaction whose first records DeleteRecordsBefore or retention
// removed is unstable from the log start (Kafka's
// maybeIncrementFirstUnstableOffset). It takes no lock.
func (l *Log) FirstUnstableOffset() int64 {
	fu := l.firstUnstable.Load()
	if fu < 0 {
		return fu
	}
	return max(fu, l.startOffset.Load())
}

// snapshotLocked encodes the producer state at the log end. An empty state
// is snapshotted too, as Kafka does at shutdown: the next open then replays
// nothing before the snapshot instead of every batch header of the log.
func (l *Log) snapshotLocked() ([]byte, int64) {
	if l.producers == nil {
		return nil, 0
	}
	end := l.nextOffset.Load()
	l.sinceSnapshot = 0
	return l.producers.appendSnapshot(nil, end), end
}

// closeSnapshotMinBytes: at Close, an empty producer state is snapshotted
// only once the log holds this many bytes past the last snapshot. A
// snapshot creates a file and costs two fsyncs, at every shutdown of every
// partition, to spare the next open a replay of the batch headers after
// the last one; below this the replay (a few hundred reads at most) costs
// less. A state with producers is always snapshotted.
const closeSnapshotMinBytes = 1 << 20

// closeSnapshotLocked is the snapshot Close writes, or nil (see
// closeSnapshotMinBytes).
func (l *Log) closeSnapshotLocked() ([]byte, int64) {
	if l.producers != nil && len(l.producers.producers) == 0 && l.sinceSnapshot < closeSnapshotMinBytes {
		return nil, 0
	}
	return l.snapshotLocked()
}

// snapshotsKept is how many producer snapshots stay: the newest, and one
// before it in case the newest is lost or damaged.
const snapshotsKept = 2

// writeSnapshot writes an encoded producer snapshot and removes all but the
// newest snapshotsKept.
// A snapshot of the offset of the one loaded or written last is not
// written again: it describes the same batches (a restart with no append
// between costs no fsync here), nor one of an empty log, as Kafka's
// takeSnapshot skips an offset not past the last snapshot's.
func (l *Log) writeSnapshot(snap []byte, offset int64) error {
	if snap == nil || offset == l.snapshotAt.Load() {
		return nil
	}
	if err := writeFileAtomic(l.fs, snapshotPath(l.dir, offset), snap); err != nil {
		return err
	}
	l.snapshotAt.Store(offset)
	offs, err := snapshotOffsets(l.fs, l.dir)
	if err != nil || len(offs) <= snapshotsKept {
		return err
	}
	slices.Sort(offs)
	keep := offs[len(offs)-snapshotsKept]
	return removeSnapshots(l.fs, l.dir, func(o int64) bool { return o < keep })
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch: the end offset of epoch
// in this log (see epochCache.endOffsetFor) and the epoch it belongs to.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	return l.epochs.endOffsetFor(epoch, l.nextOffset.Load())
}

// EpochAt is the leader epoch of the record at offset, -1 if the epoch
// cache has none that early (ListOffsets answers it with the offset).
func (l *Log) EpochAt(offset int64) int32 { return l.epochs.epochAt(offset) }

// LatestEpoch is the newest leader epoch that wrote to the log, -1 if none.
func (l *Log) LatestEpoch() int32 {
	e, _, ok := l.epochs.latest()
	if !ok {
		return -1
	}
	return e
}

// expireProducersLocked forgets producers idle for the expiration or
// longer (ApplyRetention runs it).
func (l *Log) expireProducersLocked() {
	if l.producers != nil {
		o := l.opts.Load()
		l.producers.expire(o.Now().UnixMilli(), o.ProducerIDExpiration.Milliseconds())
	}
}

// stampLogAppendTime makes b a LogAppendTime batch stamped now: the
// timestamp-type attribute set, the max timestamp now, the CRC recomputed
// (CRC-32C runs at many GB/s: this costs little).
func stampLogAppendTime(b []byte, h *BatchHeader, now int64) {
	h.Attributes |= attrLogAppendTime
	h.MaxTimestamp = now
	binary.BigEndian.PutUint16(b[offAttributes:], uint16(h.Attributes))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(now))
	h.CRC = batchCRC(b)
	binary.BigEndian.PutUint32(b[offCRC:], h.CRC)
}

func logAppendTime(h *BatchHeader) int64 {
	if h.LogAppendTime() {
		return h.MaxTimestamp
	}
	return -1
}
