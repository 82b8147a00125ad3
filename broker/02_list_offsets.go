package broker

// ListOffsets (key 2), versions 0-9.
//
// Behavior:
//   - Timestamp -2 (earliest) answers the log start offset; -1 (latest)
//     the high watermark (the last stable offset for read_committed, the
//     same here: no transactions yet).
//   - A lookup by timestamp (>= 0) and by max timestamp (-3, v7+) needs
//     the engine's record-level time lookup, which comes with the broker
//     completeness work: until then they get INVALID_REQUEST, never a
//     wrong offset. -4/-5 (tiered storage) are earliest and latest.
//   - Unknown topics and partitions get UNKNOWN_TOPIC_OR_PARTITION; a
//     current leader epoch other than 0 FENCED/UNKNOWN_LEADER_EPOCH.
//
// Version notes: v0 answers in OldStyleOffsets (one offset); v1+ in Offset
// with Timestamp -1; v4+ carries the leader epoch (0).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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
			p := c.b.partition(rt.Topic, rp.Partition)
			var off int64 = -1
			switch {
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case req.Version >= 4 && rp.CurrentLeaderEpoch > 0:
				sp.ErrorCode = kerr.UnknownLeaderEpoch.Code
			case rp.Timestamp == -2 || rp.Timestamp == -4:
				off = p.log.StartOffset()
			case rp.Timestamp == -1 || rp.Timestamp == -5:
				off = p.highWatermark()
			default:
				sp.ErrorCode = kerr.InvalidRequest.Code
			}
			if sp.ErrorCode == 0 {
				sp.Offset, sp.LeaderEpoch = off, 0
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
