package broker

// OffsetCommit (key 8), versions 0-9, answered by coordinator/group; the
// offsets are appended to __consumer_offsets before the answer.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(8, 0, 9, handleOffsetCommit) }

func handleOffsetCommit(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.OffsetCommitRequest)
	failAll := func(code int16, topics []kmsg.OffsetCommitRequestTopic, resp *kmsg.OffsetCommitResponse) {
		for _, rt := range topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
	}
	if !c.authorized(acl.OpRead, acl.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		failAll(kerr.GroupAuthorizationFailed.Code, req.Topics, resp)
		return resp, nil
	}
	// Topics the principal may not Read fail alone; the rest are committed.
	var denied []kmsg.OffsetCommitRequestTopic
	req.Topics, denied = readableTopics(c, req.Topics, func(t *kmsg.OffsetCommitRequestTopic) string { return t.Topic })
	g, err := c.b.groupCoordinator()
	if err != nil {
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		failAll(kerr.CoordinatorNotAvailable.Code, req.Topics, resp)
		failAll(kerr.TopicAuthorizationFailed.Code, denied, resp)
		return resp, nil
	}
	resp := g.OffsetCommit(req)
	failAll(kerr.TopicAuthorizationFailed.Code, denied, resp)
	return resp, nil
}
