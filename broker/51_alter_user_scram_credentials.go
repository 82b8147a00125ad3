package broker

// AlterUserScramCredentials (key 51), version 0: security/scram's Admin
// validates and writes (security/scram/admin.go has the behavior, Kafka's
// ZkAdminManager's). Alter on the cluster is needed, else
// CLUSTER_AUTHORIZATION_FAILED for every user.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(51, 0, 0, handleAlterUserScramCredentials) }

func handleAlterUserScramCredentials(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.AlterUserSCRAMCredentialsRequest)
	return c.b.sec.scramAdmin.Alter(req, c.authorizedCluster(acl.OpAlter)), nil
}
