package broker

// OffsetFetch (key 9), versions 0-9, answered by coordinator/group (v8+
// for several groups).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(9, 0, 9, handleOffsetFetch) }

func handleOffsetFetch(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.OffsetFetchRequest)
	g, err := c.b.groupCoordinator()
	if err != nil {
		resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		for _, rg := range req.Groups {
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group, g.ErrorCode = rg.Group, kerr.CoordinatorNotAvailable.Code
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil
	}
	resp := g.OffsetFetch(req)
	if c.b.sec.acls != nil {
		c.authorizeOffsetFetch(req, resp)
	}
	return resp, nil
}

// authorizeOffsetFetch applies Kafka's checks to an answered OffsetFetch:
// a group the principal may not Describe is GROUP_AUTHORIZATION_FAILED,
// and a topic it may not Describe is TOPIC_AUTHORIZATION_FAILED when
// named, left out when all the group's topics were asked for.
func (c *conn) authorizeOffsetFetch(req *kmsg.OffsetFetchRequest, resp *kmsg.OffsetFetchResponse) {
	filter := func(all bool, topics []kmsg.OffsetFetchResponseTopic) []kmsg.OffsetFetchResponseTopic {
		kept := topics[:0]
		for _, t := range topics {
			if !c.authorized(acl.OpDescribe, acl.ResourceTopic, t.Topic) {
				if all {
					continue
				}
				for i := range t.Partitions {
					p := &t.Partitions[i]
					p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = -1, -1, nil, kerr.TopicAuthorizationFailed.Code
				}
			}
			kept = append(kept, t)
		}
		return kept
	}
	filterGroup := func(all bool, topics []kmsg.OffsetFetchResponseGroupTopic) []kmsg.OffsetFetchResponseGroupTopic {
		kept := topics[:0]
		for _, t := range topics {
			if !c.authorized(acl.OpDescribe, acl.ResourceTopic, t.Topic) {
				if all {
					continue
				}
				for i := range t.Partitions {
					p := &t.Partitions[i]
					p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = -1, -1, nil, kerr.TopicAuthorizationFailed.Code
				}
			}
			kept = append(kept, t)
		}
		return kept
	}
	if req.Version < 8 {
		if !c.authorized(acl.OpDescribe, acl.ResourceGroup, req.Group) {
			resp.ErrorCode, resp.Topics = kerr.GroupAuthorizationFailed.Code, nil
			return
		}
		resp.Topics = filter(req.Topics == nil, resp.Topics)
		return
	}
	for i := range resp.Groups {
		rg := &resp.Groups[i]
		if !c.authorized(acl.OpDescribe, acl.ResourceGroup, rg.Group) {
			rg.ErrorCode, rg.Topics = kerr.GroupAuthorizationFailed.Code, nil
			continue
		}
		all := i < len(req.Groups) && req.Groups[i].Topics == nil
		rg.Topics = filterGroup(all, rg.Topics)
	}
}
