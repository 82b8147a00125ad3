package broker

// OffsetDelete (key 47), version 0, answered by coordinator/group. Needs
// Delete on the group (GROUP_AUTHORIZATION_FAILED) and Read on each topic
// (TOPIC_AUTHORIZATION_FAILED for that topic's partitions alone).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(47, 0, 0, handleOffsetDelete) }

func handleOffsetDelete(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.OffsetDeleteRequest)
	if !c.authorized(acl.OpDelete, acl.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	var denied []kmsg.OffsetDeleteRequestTopic
	req.Topics, denied = readableTopics(c, req.Topics, func(t *kmsg.OffsetDeleteRequestTopic) string { return t.Topic })
	g, err := c.b.groupCoordinator()
	if err != nil {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	resp := g.OffsetDelete(req)
	if resp.ErrorCode == 0 {
		for _, rt := range denied {
			st := kmsg.NewOffsetDeleteResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetDeleteResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
	}
	return resp, nil
}
