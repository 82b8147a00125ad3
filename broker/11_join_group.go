package broker

// JoinGroup (key 11), versions 0-9, answered by coordinator/group: the
// request is parked until the group's rebalance completes (the connection
// handles nothing else meanwhile, as Kafka mutes it).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(11, 0, 9, handleJoinGroup) }

func handleJoinGroup(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.JoinGroupRequest)
	if !c.authorized(acl.OpRead, acl.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.Generation, resp.MemberID = kerr.GroupAuthorizationFailed.Code, -1, req.MemberID
		return resp, nil
	}
	g, err := c.b.groupCoordinator()
	if err != nil {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.Generation, resp.MemberID = kerr.CoordinatorNotAvailable.Code, -1, req.MemberID
		return resp, nil
	}
	clientID := ""
	if h.ClientID != nil {
		clientID = *h.ClientID
	}
	return g.JoinGroup(context.Background(), req, clientID, c.clientHost()), nil
}
