package host

// A leader's answers about its offsets: ListOffsets, DeleteRecords and
// OffsetForLeaderEpoch, per partition (the rules are written in
// broker/02_list_offsets.go, broker/21_delete_records.go and
// broker/23_offset_for_leader_epoch.go, whose handlers check the client
// and find the partition).

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/engine"
)

// ListOffset answers one partition of a ListOffsets of version: the
// offset and timestamp for timestamp (-2/-4 earliest, -1/-5 latest, -3
// the max timestamp, else the first record at or after it) and its leader
// epoch, or the code refusing it. replica is a follower's request (not
// bounded by the high watermark); readCommitted (v2+) bounds the answer
// by the last stable offset.
func (p *Partition) ListOffset(version int16, timestamp int64, currentEpoch int32, replica, readCommitted bool) (offset, ts int64, epoch int32, code int16) {
	offset, ts = -1, -1
	switch {
	case version >= 4 && p.CheckLeaderEpoch(currentEpoch) != 0:
		return -1, -1, -1, p.CheckLeaderEpoch(currentEpoch)
	case !replica && !p.OffsetsAvailable():
		return -1, -1, -1, kerr.OffsetNotAvailable.Code
	case timestamp == -2 || timestamp == -4:
		offset = p.Log.StartOffset()
	case (timestamp == -1 || timestamp == -5) && replica:
		offset = p.Log.EndOffset()
	case timestamp == -1 || timestamp == -5:
		offset = p.lastFetchable(version, readCommitted)
	case timestamp >= 0 || timestamp == -3 && version >= 7:
		if offset, ts, code = p.lookupTimestamp(timestamp, replica, p.lastFetchable(version, readCommitted)); code != 0 {
			return -1, -1, -1, code
		}
	default:
		return -1, -1, -1, kerr.InvalidRequest.Code
	}
	epoch = p.Epoch()
	if timestamp != -1 && timestamp != -5 && offset >= 0 {
		// The found record's epoch, as Kafka answers all but latest
		// (which is the current leader epoch).
		epoch = p.Log.EpochAt(offset)
	}
	return offset, ts, epoch, 0
}

// lastFetchable is the offset a client's ListOffsets is bounded by: the
// high watermark, or the last stable offset for read_committed (v2+).
func (p *Partition) lastFetchable(version int16, readCommitted bool) int64 {
	hw := p.HighWatermark()
	if version >= 2 && readCommitted {
		return p.LastStableOffset(hw)
	}
	return hw
}

// lookupTimestamp answers a timestamp or max-timestamp (-3) lookup, bounded
// by limit (lastFetchable) unless a replica asks.
func (p *Partition) lookupTimestamp(target int64, replica bool, limit int64) (offset, timestamp int64, code int16) {
	var err error
	if target == -3 {
		offset, timestamp, err = p.Log.MaxTimestampOffset()
	} else {
		offset, timestamp, err = p.Log.OffsetForTimestamp(target)
	}
	switch {
	case errors.Is(err, engine.ErrClosed):
		return -1, -1, kerr.NotLeaderForPartition.Code
	case err != nil:
		p.m.o.Logger.Error("timestamp lookup failed", "topic", p.Topic, "partition", p.Index, "err", err)
		return -1, -1, kerr.KafkaStorageError.Code
	case offset < 0 || !replica && offset >= limit:
		return -1, -1, 0
	}
	return offset, timestamp, 0
}

// DeleteRecords moves the log start offset up to offset (-1: the high
// watermark) as leader, and returns the new low watermark, or the code
// refusing it.
func (p *Partition) DeleteRecords(offset int64) (int64, int16) {
	hw := p.HighWatermark()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return -1, kerr.OffsetOutOfRange.Code
	}
	low, err := p.DeleteRecordsAsLeader(offset)
	switch {
	case errors.Is(err, kerr.NotLeaderForPartition):
		return -1, kerr.NotLeaderForPartition.Code
	case errors.Is(err, engine.ErrOffsetOutOfRange):
		return -1, kerr.OffsetOutOfRange.Code
	case errors.Is(err, engine.ErrClosed):
		return -1, kerr.NotLeaderForPartition.Code
	case err != nil:
		p.m.o.Logger.Error("delete records failed", "topic", p.Topic, "partition", p.Index, "err", err)
		return -1, kerr.KafkaStorageError.Code
	}
	return low, 0
}

// OffsetForLeaderEpoch answers the end offset of leader epoch epoch
// (KIP-320): the log end for the current epoch, else the epoch cache's;
// from version 2 the client's current leader epoch is checked.
func (p *Partition) OffsetForLeaderEpoch(version int16, currentEpoch, epoch int32) (int32, int64, int16) {
	leaderEpoch := p.Epoch()
	switch {
	case version >= 2 && p.CheckLeaderEpoch(currentEpoch) != 0:
		return -1, -1, p.CheckLeaderEpoch(currentEpoch)
	case epoch == leaderEpoch:
		return leaderEpoch, p.Log.EndOffset(), 0
	}
	e, end := p.Log.EndOffsetForEpoch(epoch)
	return e, end, 0
}
