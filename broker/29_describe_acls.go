package broker

// DescribeAcls (key 29), versions 0-3.
//
// Behavior:
//   - Needs Describe on the cluster (CLUSTER_AUTHORIZATION_FAILED).
//   - The rest is acl.Service.Describe (security/acl/admin.go): with no
//     authorizer, SECURITY_DISABLED, as Kafka answers; the filter follows
//     Kafka's AclBindingFilter (MATCH included), and a filter with an
//     unknown element is INVALID_REQUEST.
//
// Version notes:
//   - v0 has no pattern type: the filter is LITERAL, as Kafka's default.
//   - v1 adds pattern types; v2 is flexible; v3 adds USER resources.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(29, 0, 3, handleDescribeAcls) }

func handleDescribeAcls(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	fail := func(code int16, msg string) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return resp, nil
	}
	if !c.authorizedCluster(acl.OpDescribe) {
		return fail(kerr.ClusterAuthorizationFailed.Code, "Cluster authorization failed.")
	}
	f := aclFilter(req.Version, int8(req.ResourceType), req.ResourceName, int8(req.ResourcePatternType),
		req.Principal, req.Host, int8(req.Operation), int8(req.PermissionType))
	bindings, st := c.b.sec.acls.Describe(f) // security/acl/admin.go
	if !st.OK() {
		return fail(st.Code, st.Message)
	}
	var cur *kmsg.DescribeACLsResponseResource
	for _, b := range bindings {
		if cur == nil || cur.ResourceName != b.Resource.Name || int8(cur.ResourceType) != int8(b.Resource.Type) ||
			int8(cur.ResourcePatternType) != int8(b.Resource.Pattern) {
			resp.Resources = append(resp.Resources, kmsg.NewDescribeACLsResponseResource())
			cur = &resp.Resources[len(resp.Resources)-1]
			cur.ResourceType = kmsg.ACLResourceType(b.Resource.Type)
			cur.ResourceName = b.Resource.Name
			cur.ResourcePatternType = kmsg.ACLResourcePatternType(b.Resource.Pattern)
		}
		ra := kmsg.NewDescribeACLsResponseResourceACL()
		ra.Principal, ra.Host = b.Entry.Principal.String(), b.Entry.Host
		ra.Operation, ra.PermissionType = kmsg.ACLOperation(b.Entry.Operation), kmsg.ACLPermissionType(b.Entry.Permission)
		cur.ACLs = append(cur.ACLs, ra)
	}
	return resp, nil
}
