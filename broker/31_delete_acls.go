package broker

// DeleteAcls (key 31), versions 0-3.
//
// Behavior:
//   - Needs Alter on the cluster: every filter fails
//     CLUSTER_AUTHORIZATION_FAILED otherwise.
//   - With no authorizer: SECURITY_DISABLED for every filter.
//   - As Kafka's AclAuthorizer.deleteAcls: the resource patterns examined
//     are those with ACLs that a filter matches and those a filter names
//     exactly; each is rewritten in the store without the ACLs the
//     matching filters match, and each deleted ACL is reported under the
//     first filter that matches it. A filter with an unknown element is
//     INVALID_REQUEST.
//
// Version notes:
//   - v0 filters are LITERAL; v2 is flexible.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(31, 0, 3, handleDeleteAcls) }

func handleDeleteAcls(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	for i := range resp.Results {
		resp.Results[i] = kmsg.NewDeleteACLsResponseResult()
	}
	setErr := func(i int, code int16, msg string) {
		resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, &msg
	}
	all := func(code int16, msg string) (kmsg.Response, error) {
		for i := range resp.Results {
			setErr(i, code, msg)
		}
		return resp, nil
	}
	if !c.authorizedCluster(acl.OpAlter) {
		return all(kerr.ClusterAuthorizationFailed.Code, "Cluster authorization failed.")
	}
	a := c.b.authz.authz
	if a == nil {
		return all(kerr.SecurityDisabled.Code, "No Authorizer is configured.")
	}
	var filters []acl.Filter
	var filterIdx []int // filters' indexes in the request
	for i, rf := range req.Filters {
		f := aclFilter(req.Version, int8(rf.ResourceType), rf.ResourceName, int8(rf.ResourcePatternType),
			rf.Principal, rf.Host, int8(rf.Operation), int8(rf.PermissionType))
		if err := f.Validate(); err != nil {
			setErr(i, kerr.InvalidRequest.Code, err.Error())
			continue
		}
		filters, filterIdx = append(filters, f), append(filterIdx, i)
	}
	for _, res := range a.DeleteTargets(filters) {
		var removed []acl.Entry
		var by []int
		stored, err := c.b.authz.store.UpdateACLs(res, func(cur []acl.Entry) ([]acl.Entry, error) {
			var kept []acl.Entry
			kept, removed, by = acl.RemoveEntries(res, cur, filters)
			return kept, nil
		})
		if err != nil {
			c.b.log.Error("DeleteAcls: storing ACLs", "resource", res.String(), "err", err)
			for j, f := range filters {
				if f.MatchesResource(res) {
					setErr(filterIdx[j], kerr.UnknownServerError.Code, "storing the ACLs failed: "+err.Error())
				}
			}
			continue
		}
		a.Set(map[acl.Resource][]acl.Entry{res: stored})
		for k, e := range removed {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName = kmsg.ACLResourceType(res.Type), res.Name
			m.ResourcePatternType = kmsg.ACLResourcePatternType(res.Pattern)
			m.Principal, m.Host = e.Principal.String(), e.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(e.Operation), kmsg.ACLPermissionType(e.Permission)
			rr := &resp.Results[filterIdx[by[k]]]
			rr.MatchingACLs = append(rr.MatchingACLs, m)
		}
		if len(removed) > 0 {
			c.b.log.Info("ACLs deleted", "resource", res.String(), "principal", c.Principal.String(), "deleted", len(removed))
		}
	}
	return resp, nil
}
