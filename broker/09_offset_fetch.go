package broker

// OffsetFetch (key 9), versions 0-9, answered by coordinator/group (v8+
// for several groups).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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
	return g.OffsetFetch(req), nil
}
