package broker

// CreateAcls (key 30), versions 0-3.
//
// Behavior:
//   - Needs Alter on the cluster: every creation fails
//     CLUSTER_AUTHORIZATION_FAILED otherwise.
//   - The rest is acl.Service.Create (security/acl/admin.go): with no
//     authorizer, SECURITY_DISABLED for every creation; each creation is
//     checked alone (INVALID_REQUEST: unknown or ANY elements, an empty
//     name, a cluster not named kafka-cluster, a principal not
//     Type:name); the valid ones are added to their resource pattern's
//     ACLs in the store (a set: an existing ACL is no change) and then to
//     the authorizer.
//
// Version notes:
//   - v0 creates LITERAL patterns only; v2 is flexible.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(30, 0, 3, handleCreateAcls) }

func handleCreateAcls(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	if !c.authorizedCluster(acl.OpAlter) {
		msg := "Cluster authorization failed."
		resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
		for i := range resp.Results {
			resp.Results[i] = kmsg.NewCreateACLsResponseResult()
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.ClusterAuthorizationFailed.Code, &msg
		}
		return resp, nil
	}
	// Strings are copied: the request's memory is reused.
	creations := make([]acl.Creation, len(req.Creations))
	for i, cr := range req.Creations {
		pattern := acl.PatternType(cr.ResourcePatternType)
		if req.Version == 0 {
			pattern = acl.PatternLiteral
		}
		creations[i] = acl.Creation{
			Resource:  acl.Resource{Type: acl.ResourceType(cr.ResourceType), Name: string([]byte(cr.ResourceName)), Pattern: pattern},
			Principal: string([]byte(cr.Principal)), Host: string([]byte(cr.Host)),
			Operation: acl.Operation(cr.Operation), Permission: acl.Permission(cr.PermissionType),
		}
	}
	statuses := c.b.sec.acls.Create(c.Principal, creations) // security/acl/admin.go
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(statuses))
	for i, st := range statuses {
		resp.Results[i] = kmsg.NewCreateACLsResponseResult()
		if !st.OK() {
			msg := st.Message
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = st.Code, &msg
		}
	}
	return resp, nil
}
