package broker

// DescribeGroups (key 15), versions 0-5, answered by coordinator/group;
// v3+: each group's authorized operations when asked (authorizedops.go).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(15, 0, 5, handleDescribeGroups) }

func handleDescribeGroups(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeGroupsRequest)
	g, err := c.b.groupCoordinator()
	if err != nil {
		resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, id := range req.Groups {
			dg := kmsg.NewDescribeGroupsResponseGroup()
			dg.Group, dg.ErrorCode = id, kerr.CoordinatorNotAvailable.Code
			resp.Groups = append(resp.Groups, dg)
		}
		return resp, nil
	}
	resp := g.DescribeGroups(req)
	for i := range resp.Groups {
		dg := &resp.Groups[i]
		if !c.authorized(acl.OpDescribe, acl.ResourceGroup, dg.Group) {
			*dg = kmsg.NewDescribeGroupsResponseGroup()
			dg.Group, dg.ErrorCode = req.Groups[i], kerr.GroupAuthorizationFailed.Code
			continue
		}
		if req.Version >= 3 && req.IncludeAuthorizedOperations {
			dg.AuthorizedOperations = c.authorizedOps(acl.ResourceGroup, dg.Group)
		}
	}
	return resp, nil
}
