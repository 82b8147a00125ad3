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
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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
			switch {
			case !c.authorized(acl.OpDescribe, acl.ResourceTopic, rt.Topic):
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case p == nil:
				sp.ErrorCode = code
			default: // replication/host/offsets.go
				off, ts, epoch, code := p.ListOffset(req.Version, rp.Timestamp, rp.CurrentLeaderEpoch, req.ReplicaID != -1, req.IsolationLevel == 1)
				if sp.ErrorCode = code; code == 0 {
					sp.Offset, sp.Timestamp, sp.LeaderEpoch = off, ts, epoch
					if req.Version == 0 {
						sp.OldStyleOffsets = []int64{off}
					}
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
