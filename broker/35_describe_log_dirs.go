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
	"path/filepath"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/sluice-io/sluice/replication/host"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(35, 0, 4, handleDescribeLogDirs) }

func handleDescribeLogDirs(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	b := c.b
	if !c.authorizedCluster(acl.OpDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = b.cfg.DataDir
	if abs, err := filepath.Abs(dir.Dir); err == nil {
		dir.Dir = abs
	}
	dir.TotalBytes, dir.UsableBytes = -1, -1
	var fs unix.Statfs_t
	if err := unix.Statfs(dir.Dir, &fs); err == nil {
		dir.TotalBytes = int64(fs.Blocks) * fs.Bsize
		dir.UsableBytes = int64(fs.Bavail) * fs.Bsize
	}
	add := func(ts *host.Topic, partitions []int32) {
		dt := kmsg.NewDescribeLogDirsResponseDirTopic()
		dt.Topic = ts.Name
		for _, i := range partitions {
			if i < 0 || int(i) >= len(ts.Partitions) || ts.Partitions[i] == nil {
				continue
			}
			dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			dp.Partition, dp.Size = i, ts.Partitions[i].Log.Size()
			dt.Partitions = append(dt.Partitions, dp)
		}
		if len(dt.Partitions) > 0 {
			dir.Topics = append(dir.Topics, dt)
		}
	}
	if req.Topics == nil {
		for _, name := range b.replicas.TopicNames() {
			if ts := b.topic(name); ts != nil {
				all := make([]int32, len(ts.Partitions))
				for i := range all {
					all[i] = int32(i)
				}
				add(ts, all)
			}
		}
	} else {
		for _, rt := range req.Topics {
			if ts := b.topic(rt.Topic); ts != nil {
				ps := slices.Clone(rt.Partitions)
				slices.Sort(ps)
				add(ts, slices.Compact(ps))
			}
		}
	}
	resp.Dirs = append(resp.Dirs, dir)
	return resp, nil
}
