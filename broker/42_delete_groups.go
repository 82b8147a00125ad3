package broker

// DeleteGroups (key 42), versions 0-2, answered by coordinator/group: only
// Empty groups are deleted (NON_EMPTY_GROUP otherwise).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/wire"
)

func init() { register(42, 0, 2, handleDeleteGroups) }

func handleDeleteGroups(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DeleteGroupsRequest)
	g, err := c.b.groupCoordinator()
	if err != nil {
		resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
		for _, id := range req.Groups {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = id, kerr.CoordinatorNotAvailable.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil
	}
	return g.DeleteGroups(req), nil
}
