package broker

// DescribeLogDirs (key 35), versions 0-4.
//
// Behavior:
//   - One log directory, the broker's data directory (absolute path), with
//     the requested partitions (all for a null list; unknown topics and
//     partitions are left out, as Kafka does) and each one's size in bytes
//     on disk. The offset lag is 0 and no replica is a future one: sluice
//     does not move replicas between directories.
//   - v4: the file system's total and usable bytes (statfs), -1 if they
//     cannot be read.
//
// Authorization: Describe on the cluster; without it no directories and, in
// v3+, CLUSTER_AUTHORIZATION_FAILED.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(35, 0, 4, handleDescribeLogDirs) }

func handleDescribeLogDirs(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !c.authorizedCluster(acl.OpDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	resp.Dirs = append(resp.Dirs, c.b.replicas.DescribeLogDir(c.b.cfg.DataDir, req.Topics)) // replication/host/logdirs.go
	return resp, nil
}
