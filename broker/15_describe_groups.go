package broker

// DescribeGroups (key 15), versions 0-5, answered by coordinator/group;
// v3+: each group's authorized operations when asked (authorizedops.go).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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
	if req.Version >= 3 && req.IncludeAuthorizedOperations {
		for i := range resp.Groups {
			resp.Groups[i].AuthorizedOperations = groupOperations
		}
	}
	return resp, nil
}
