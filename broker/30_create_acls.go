package broker

// CreateAcls (key 30), versions 0-3.
//
// Behavior:
//   - Needs Alter on the cluster: every creation fails
//     CLUSTER_AUTHORIZATION_FAILED otherwise.
//   - With no authorizer: SECURITY_DISABLED for every creation.
//   - Each creation is checked alone (INVALID_REQUEST: unknown or ANY
//     elements, an empty name, a cluster not named kafka-cluster, a
//     principal not Type:name); the valid ones are added to their resource
//     pattern's ACLs in the store (a set: an existing ACL is no change)
//     and then to the authorizer.
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
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	setErr := func(i int, code int16, msg string) {
		resp.Results[i] = kmsg.NewCreateACLsResponseResult()
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
	if c.b.authz.authz == nil {
		return all(kerr.SecurityDisabled.Code, "No Authorizer is configured.")
	}
	byResource := map[acl.Resource][]int{} // creations' indexes
	var order []acl.Resource
	bindings := make([]acl.Binding, len(req.Creations))
	for i, cr := range req.Creations {
		resp.Results[i] = kmsg.NewCreateACLsResponseResult()
		pattern := acl.PatternType(cr.ResourcePatternType)
		if req.Version == 0 {
			pattern = acl.PatternLiteral
		}
		p, err := acl.ParsePrincipal(cr.Principal)
		if err != nil {
			setErr(i, kerr.InvalidRequest.Code, err.Error())
			continue
		}
		b := acl.Binding{
			Resource: acl.Resource{Type: acl.ResourceType(cr.ResourceType), Name: string([]byte(cr.ResourceName)), Pattern: pattern},
			Entry: acl.Entry{Principal: acl.Principal{Type: string([]byte(p.Type)), Name: string([]byte(p.Name))}, Host: string([]byte(cr.Host)),
				Operation: acl.Operation(cr.Operation), Permission: acl.Permission(cr.PermissionType)},
		}
		if err := b.Validate(); err != nil {
			setErr(i, kerr.InvalidRequest.Code, err.Error())
			continue
		}
		bindings[i] = b
		if byResource[b.Resource] == nil {
			order = append(order, b.Resource)
		}
		byResource[b.Resource] = append(byResource[b.Resource], i)
	}
	for _, res := range order {
		idx := byResource[res]
		add := make([]acl.Entry, len(idx))
		for j, i := range idx {
			add[j] = bindings[i].Entry
		}
		stored, err := c.b.authz.store.UpdateACLs(res, func(cur []acl.Entry) ([]acl.Entry, error) {
			return acl.AddEntries(cur, add), nil
		})
		if err != nil {
			c.b.log.Error("CreateAcls: storing ACLs", "resource", res.String(), "err", err)
			for _, i := range idx {
				setErr(i, kerr.UnknownServerError.Code, "storing the ACLs failed: "+err.Error())
			}
			continue
		}
		c.b.authz.authz.Set(map[acl.Resource][]acl.Entry{res: stored})
		c.b.log.Info("ACLs added", "resource", res.String(), "principal", c.Principal.String(), "added", len(add))
	}
	return resp, nil
}
