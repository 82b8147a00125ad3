package engine

// The log's part of replication, as Kafka's UnifiedLog and Partition keep
// it: the epoch a new leader records at its log end (BecomeLeader), the
// high watermark (checkpointed by the Store in replication-offset-checkpoint,
// hwcheckpoint.go), and a follower's log start offset following its
// leader's (IncrementStartOffset). The replication logic itself (who leads,
// where the high watermark is) lives above the engine; the log keeps what
// must survive a restart and stay consistent with its offsets.
//
// The high watermark kept here always lies in [StartOffset, EndOffset], as
// Kafka's updateHighWatermark clamps it: a truncation below it pulls it down
// to the new log end, a log start offset passing it pushes it up, and at
// open the checkpointed value is clamped to what recovery kept.

import "fmt"

// BecomeLeader makes this replica the leader of epoch, as Kafka's
// Partition.makeLeader does for a new leader epoch: the epoch is assigned in
// the leader-epoch cache at the log end offset at once (durably: the cache
// writes its checkpoint before this returns), so OffsetForLeaderEpoch
// answers followers correctly before the first append of the epoch, and it
// becomes the epoch stamped into appended batches (SetLeaderEpoch).
//
// The assignment follows the cache's rules (epochcache.go): an entry of an
// earlier epoch that starts at the log end too (an epoch that wrote nothing)
// is replaced. Calling it again with the same epoch changes nothing. An
// epoch below the latest in the cache or the one stamped is refused with an
// error wrapping ErrStaleLeaderEpoch, and nothing changes; so is a negative
// epoch. If the checkpoint cannot be written the error is returned and the
// stamped epoch stays as it was.
//
// As in Kafka, an epoch entry at the log end that no batch follows is
// dropped when the log is opened again (LogLoader's truncateFromEnd of the
// log end offset): a restarted broker calls BecomeLeader again when it is
// told it leads.
func (l *Log) BecomeLeader(epoch int32) error {
	if epoch < 0 {
		return fmt.Errorf("%w: log %s asked to lead epoch %d", ErrStaleLeaderEpoch, l.name, epoch)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	latest, _, _ := l.epochs.latest()
	if stamped := l.leaderEpoch.Load(); epoch < latest || epoch < stamped {
		return fmt.Errorf("%w: log %s asked to lead epoch %d; it has seen epoch %d and stamps %d", ErrStaleLeaderEpoch, l.name, epoch, latest, stamped)
	}
	if err := l.epochs.assign(epoch, l.nextOffset.Load()); err != nil {
		return err
	}
	l.lastEpoch = epoch
	l.leaderEpoch.Store(epoch)
	return nil
}

// SetHighWatermark records the partition's high watermark, the offset below
// which every record is replicated to the in-sync replicas, as the
// replication layer computes it (a leader from its followers' positions, a
// follower from its leader's fetch responses). It is kept in [StartOffset,
// EndOffset] (Kafka's updateHighWatermark), and the value kept is returned.
// The Store writes it to replication-offset-checkpoint with its checkpoints
// and at Close. Whether it may move backwards is the caller's rule: the log
// keeps what it is given.
func (l *Log) SetHighWatermark(hw int64) int64 {
	if hw == l.highWatermark.Load() {
		return hw // the common call: nothing moved
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	hw = min(max(hw, l.startOffset.Load()), l.nextOffset.Load())
	l.highWatermark.Store(hw)
	return hw
}

// HighWatermark is the high watermark last set, or, until one is set after
// the log was opened by a Store, the one checkpointed in its data
// directory's replication-offset-checkpoint (clamped to the log the
// recovery kept; the log start offset when there is none).
func (l *Log) HighWatermark() int64 { return l.highWatermark.Load() }

// clampHighWatermarkLocked pulls the high watermark into [StartOffset,
// EndOffset] after either moved.
func (l *Log) clampHighWatermarkLocked() {
	hw := l.highWatermark.Load()
	if c := min(max(hw, l.startOffset.Load()), l.nextOffset.Load()); c != hw {
		l.highWatermark.Store(c)
	}
}

// IncrementStartOffset moves the log start offset up to offset, as a
// follower follows its leader's (Kafka's maybeIncrementLogStartOffset with
// the leader's log start offset from a fetch response), and returns the new
// log start offset. An offset at or below the current start changes
// nothing. Up to the log end offset it is DeleteRecordsBefore: the records
// below offset are no longer readable and the segments wholly below it are
// deleted. Past the log end (the leader deleted everything this replica
// holds and more) the log is emptied and restarts at offset, as Kafka's
// truncateFullyAndStartAt: the epoch cache and producer state are cleared
// and the log end, recovery point and high watermark become offset.
func (l *Log) IncrementStartOffset(offset int64) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return l.startOffset.Load(), err
	}
	if offset <= l.startOffset.Load() {
		return l.startOffset.Load(), nil
	}
	if end := l.nextOffset.Load(); offset > end {
		l.cfg.logger.Info("log start offset past the log end: truncating fully", "end", end, "start", offset)
		err := l.truncateFullyLocked(offset)
		return l.startOffset.Load(), err
	}
	err := l.advanceStartLocked(offset)
	return l.startOffset.Load(), err
}

// advanceStartLocked makes offset, above the log start offset and at most
// the log end offset, the log start offset, and deletes the segments wholly
// below it.
func (l *Log) advanceStartLocked(offset int64) error {
	if err := l.setStartOffsetLocked(offset); err != nil {
		return err
	}
	_, err := l.deleteSegmentsLocked(func(s, next *segment) bool { return next != nil && next.base <= offset }, "log start offset")
	return err
}

// EpochStart is an entry of the leader-epoch cache: the first offset
// written at a leader epoch.
type EpochStart struct {
	Epoch       int32
	StartOffset int64
}

// Epochs returns the leader-epoch cache, ascending: what a replica's
// state machine takes at a role change.
func (l *Log) Epochs() []EpochStart {
	all := l.epochs.all()
	out := make([]EpochStart, len(all))
	for i, e := range all {
		out[i] = EpochStart{Epoch: e.epoch, StartOffset: e.start}
	}
	return out
}
