package broker

// ListGroups (key 16), versions 0-5, answered by coordinator/group.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(16, 0, 5, handleListGroups) }

func handleListGroups(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.ListGroupsRequest)
	g, err := c.b.groupCoordinator()
	if err != nil {
		resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	resp := g.ListGroups(req)
	if !c.authorizedCluster(acl.OpDescribe) {
		// Without Describe on the cluster, only the groups it may Describe.
		kept := resp.Groups[:0]
		for _, lg := range resp.Groups {
			if c.authorized(acl.OpDescribe, acl.ResourceGroup, lg.Group) {
				kept = append(kept, lg)
			}
		}
		resp.Groups = kept
	}
	return resp, nil
}
