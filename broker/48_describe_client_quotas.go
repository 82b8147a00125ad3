package broker

// DescribeClientQuotas (key 48), versions 0-1: DescribeConfigs on the
// cluster, then security/quota's Admin.Describe (its admin.go has the
// behaviour, as Kafka 3.9's ZkAdminManager.describeClientQuotas).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(48, 0, 1, handleDescribeClientQuotas) }

func handleDescribeClientQuotas(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeClientQuotasRequest)
	if !c.authorizedCluster(acl.OpDescribeConfigs) {
		resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
		msg := kerr.ClusterAuthorizationFailed.Message
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, &msg
		return resp, nil
	}
	return c.b.quotas.admin.Describe(req), nil
}
