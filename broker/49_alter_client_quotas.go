package broker

// AlterClientQuotas (key 49), versions 0-1: AlterConfigs on the cluster,
// else every entry is CLUSTER_AUTHORIZATION_FAILED; then security/quota's
// Admin.Alter (its admin.go has the behaviour, as Kafka 3.9's
// ZkAdminManager.alterClientQuotas), which also applies the change to this
// broker's quotas; the other brokers apply it from its notification
// (clientquotas.go).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/security/quota"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(49, 0, 1, handleAlterClientQuotas) }

func handleAlterClientQuotas(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.AlterClientQuotasRequest)
	if c.authorizedCluster(acl.OpAlterConfigs) {
		return c.b.quotas.admin.Alter(req), nil
	}
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	for _, entry := range req.Entries {
		out := quota.AlterEntryResponse(entry)
		msg := kerr.ClusterAuthorizationFailed.Message
		out.ErrorCode, out.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, &msg
		resp.Entries = append(resp.Entries, out)
	}
	return resp, nil
}
