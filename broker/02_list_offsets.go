package broker

// ListOffsets (key 2), versions 0-9.
//
// Behavior:
//   - Timestamp -2 (earliest) answers the log start offset; -1 (latest)
//     the high watermark, or for isolation level read_committed (v2+) the
//     last stable offset, which also bounds its timestamp lookups, as
//     Kafka's lastFetchableOffset. A request from a replica (replica
//     id other than -1, as a follower asks when its fetch was out of
//     range) gets the log end offset for latest and timestamp lookups not
//     bounded by the high watermark, as Kafka answers isolation "none".
//   - A timestamp >= 0 answers the first record, in offset order, whose
//     timestamp is at or after it, with that record's timestamp; -3 (max
//     timestamp, v7+) the record with the largest timestamp (the earliest
//     on ties). As in Kafka's Partition.fetchOffsetForTimestamp, an answer
//     at or past the high watermark is not readable yet and is returned as
//     offset -1, timestamp -1, as is a timestamp newer than every record.
//     -4/-5 (tiered storage) are earliest and latest. Other negative
//     timestamps get INVALID_REQUEST.
//   - A new leader whose high watermark has not reached the start of its
//     epoch yet answers clients OFFSET_NOT_AVAILABLE (retriable; KIP-207):
//     its high watermark is still the one it learnt as a follower.
//   - Only the leader answers (NOT_LEADER_OR_FOLLOWER elsewhere); unknown
//     topics and partitions get UNKNOWN_TOPIC_OR_PARTITION; a current
//     leader epoch older than the partition's FENCED_LEADER_EPOCH, a newer
//     one UNKNOWN_LEADER_EPOCH.
//
// Version notes: v0 answers in OldStyleOffsets (one offset); v1+ in Offset
// with Timestamp -1; v4+ carries a leader epoch: for latest the partition's
// current one, else the epoch of the record answered (-1 when the epoch
// cache does not reach back that far), as Kafka's fetchOffsetByTimestamp.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/replication/host"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(2, 0, 9, handleListOffsets) }

func handleListOffsets(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			p, code := c.b.leaderPartition(rt.Topic, rp.Partition)
			var off, ts int64 = -1, -1
			replica := req.ReplicaID != -1
			switch {
			case !c.authorized(acl.OpDescribe, acl.ResourceTopic, rt.Topic):
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case p == nil:
				sp.ErrorCode = code
			case req.Version >= 4 && p.CheckLeaderEpoch(rp.CurrentLeaderEpoch) != 0:
				sp.ErrorCode = p.CheckLeaderEpoch(rp.CurrentLeaderEpoch)
			case !replica && !p.OffsetsAvailable():
				sp.ErrorCode = kerr.OffsetNotAvailable.Code
			case rp.Timestamp == -2 || rp.Timestamp == -4:
				off = p.Log.StartOffset()
			case (rp.Timestamp == -1 || rp.Timestamp == -5) && replica:
				off = p.Log.EndOffset()
			case rp.Timestamp == -1 || rp.Timestamp == -5:
				off = lastFetchable(req, p)
			case rp.Timestamp >= 0 || rp.Timestamp == -3 && req.Version >= 7:
				off, ts, sp.ErrorCode = lookupTimestamp(c.b, p, rp.Timestamp, replica, lastFetchable(req, p))
			default:
				sp.ErrorCode = kerr.InvalidRequest.Code
			}
			if sp.ErrorCode == 0 {
				sp.Offset, sp.Timestamp, sp.LeaderEpoch = off, ts, p.Epoch()
				if rp.Timestamp != -1 && rp.Timestamp != -5 && off >= 0 {
					// The found record's epoch, as Kafka answers all but
					// latest (which is the current leader epoch).
					sp.LeaderEpoch = p.Log.EpochAt(off)
				}
				if req.Version == 0 {
					sp.OldStyleOffsets = []int64{off}
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// lastFetchable is the offset a client's ListOffsets is bounded by: the
// high watermark, or the last stable offset for read_committed (v2+).
func lastFetchable(req *kmsg.ListOffsetsRequest, p *host.Partition) int64 {
	hw := p.HighWatermark()
	if req.Version >= 2 && req.IsolationLevel == 1 {
		return p.LastStableOffset(hw)
	}
	return hw
}

// lookupTimestamp answers a timestamp or max-timestamp (-3) lookup, bounded
// by limit (lastFetchable) unless a replica asks.
func lookupTimestamp(b *Broker, p *host.Partition, target int64, replica bool, limit int64) (offset, timestamp int64, code int16) {
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
		b.log.Error("timestamp lookup failed", "topic", p.Topic, "partition", p.Index, "err", err)
		return -1, -1, kerr.KafkaStorageError.Code
	case offset < 0 || !replica && offset >= limit:
		return -1, -1, 0
	}
	return offset, timestamp, 0
}
