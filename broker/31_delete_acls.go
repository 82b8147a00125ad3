package broker

// DeleteAcls (key 31), versions 0-3.
//
// Behavior:
//   - Needs Alter on the cluster: every filter fails
//     CLUSTER_AUTHORIZATION_FAILED otherwise.
//   - The rest is acl.Service.Delete (security/acl/admin.go): with no
//     authorizer, SECURITY_DISABLED for every filter; as Kafka's
//     AclAuthorizer.deleteAcls, the resource patterns examined are those
//     with ACLs that a filter matches and those a filter names exactly;
//     each is rewritten in the store without the ACLs the matching filters
//     match, and each deleted ACL is reported under the first filter that
//     matches it. A filter with an unknown element is INVALID_REQUEST.
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
	if !c.authorizedCluster(acl.OpAlter) {
		msg := "Cluster authorization failed."
		resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
		for i := range resp.Results {
			resp.Results[i] = kmsg.NewDeleteACLsResponseResult()
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.ClusterAuthorizationFailed.Code, &msg
		}
		return resp, nil
	}
	filters := make([]acl.Filter, len(req.Filters))
	for i, rf := range req.Filters {
		filters[i] = aclFilter(req.Version, int8(rf.ResourceType), rf.ResourceName, int8(rf.ResourcePatternType),
			rf.Principal, rf.Host, int8(rf.Operation), int8(rf.PermissionType))
	}
	deletions := c.b.sec.acls.Delete(c.Principal, filters) // security/acl/admin.go
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(deletions))
	for i, d := range deletions {
		rr := &resp.Results[i]
		*rr = kmsg.NewDeleteACLsResponseResult()
		if !d.OK() {
			msg := d.Message
			rr.ErrorCode, rr.ErrorMessage = d.Code, &msg
		}
		for _, b := range d.Deleted {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName = kmsg.ACLResourceType(b.Resource.Type), b.Resource.Name
			m.ResourcePatternType = kmsg.ACLResourcePatternType(b.Resource.Pattern)
			m.Principal, m.Host = b.Entry.Principal.String(), b.Entry.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(b.Entry.Operation), kmsg.ACLPermissionType(b.Entry.Permission)
			rr.MatchingACLs = append(rr.MatchingACLs, m)
		}
	}
	return resp, nil
}
