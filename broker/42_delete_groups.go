package broker

// DeleteGroups (key 42), versions 0-2, answered by coordinator/group: only
// Empty groups are deleted (NON_EMPTY_GROUP otherwise). Each group needs
// Delete (GROUP_AUTHORIZATION_FAILED).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(42, 0, 2, handleDeleteGroups) }

func handleDeleteGroups(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DeleteGroupsRequest)
	failAll := func(code int16, groups []string, resp *kmsg.DeleteGroupsResponse) {
		for _, id := range groups {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = id, code
			resp.Groups = append(resp.Groups, rg)
		}
	}
	var denied []string
	if c.b.sec.acls != nil {
		kept := req.Groups[:0:0]
		for _, id := range req.Groups {
			if c.authorized(acl.OpDelete, acl.ResourceGroup, id) {
				kept = append(kept, id)
			} else if !slices.Contains(denied, id) {
				denied = append(denied, id)
			}
		}
		req.Groups = kept
	}
	g, err := c.b.groupCoordinator()
	var resp *kmsg.DeleteGroupsResponse
	if err != nil {
		resp = req.ResponseKind().(*kmsg.DeleteGroupsResponse)
		failAll(kerr.CoordinatorNotAvailable.Code, req.Groups, resp)
	} else {
		resp = g.DeleteGroups(req)
	}
	failAll(kerr.GroupAuthorizationFailed.Code, denied, resp)
	return resp, nil
}
