package broker

// DescribeUserScramCredentials (key 50), version 0: security/scram's
// Admin answers (security/scram/admin.go has the behavior, Kafka's
// ZkAdminManager's). Describe on the cluster is needed, else
// CLUSTER_AUTHORIZATION_FAILED for the whole response.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(50, 0, 0, handleDescribeUserScramCredentials) }

func handleDescribeUserScramCredentials(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	if !c.authorizedCluster(acl.OpDescribe) {
		resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
		msg := kerr.ClusterAuthorizationFailed.Message
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, &msg
		return resp, nil
	}
	return c.b.sec.scramAdmin.Describe(req), nil
}
