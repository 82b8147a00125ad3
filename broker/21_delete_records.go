package broker

// DeleteRecords (key 21), versions 0-2.
//
// Behavior:
//   - Moves a partition's log start offset up to the requested offset
//     (-1: the high watermark), durably, and deletes the segments wholly
//     below it; records below it are no longer readable. The answer's low
//     watermark is the new log start offset. An offset at or below the
//     current start changes nothing and answers the current start.
//   - An offset past the high watermark, or negative other than -1, gets
//     OFFSET_OUT_OF_RANGE, as Kafka's UnifiedLog.maybeIncrementLogStartOffset;
//     unknown topics and partitions UNKNOWN_TOPIC_OR_PARTITION.
//   - Needs Delete on the topic (TOPIC_AUTHORIZATION_FAILED).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(21, 0, 2, handleDeleteRecords) }

func handleDeleteRecords(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		allowed := c.authorized(acl.OpDelete, acl.ResourceTopic, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			if allowed {
				sp.LowWatermark, sp.ErrorCode = c.b.deleteRecords(rt.Topic, rp.Partition, rp.Offset)
			} else {
				sp.LowWatermark, sp.ErrorCode = -1, kerr.TopicAuthorizationFailed.Code
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// deleteRecords moves a partition's log start as its leader
// (replication/host/offsets.go).
func (b *Broker) deleteRecords(topic string, index int32, offset int64) (int64, int16) {
	p, code := b.leaderPartition(topic, index)
	if p == nil {
		return -1, code
	}
	return p.DeleteRecords(offset)
}
