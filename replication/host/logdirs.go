package host

// DescribeLogDirs' answer: the data directory, its space, and the size of
// each hosted partition's log (the rules are written in
// broker/35_describe_log_dirs.go).

import (
	"path/filepath"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"
)

// DescribeLogDir describes dataDir (made absolute, with its total and
// usable bytes, -1 when statfs fails) and the hosted partitions of topics
// (nil: every hosted partition) that it holds.
func (m *Manager) DescribeLogDir(dataDir string, topics []kmsg.DescribeLogDirsRequestTopic) kmsg.DescribeLogDirsResponseDir {
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = dataDir
	if abs, err := filepath.Abs(dir.Dir); err == nil {
		dir.Dir = abs
	}
	dir.TotalBytes, dir.UsableBytes = -1, -1
	var fs unix.Statfs_t
	if err := unix.Statfs(dir.Dir, &fs); err == nil {
		dir.TotalBytes = int64(fs.Blocks) * fs.Bsize
		dir.UsableBytes = int64(fs.Bavail) * fs.Bsize
	}
	add := func(ts *Topic, partitions []int32) {
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
	if topics == nil {
		for _, name := range m.TopicNames() {
			if ts := m.Topic(name); ts != nil {
				all := make([]int32, len(ts.Partitions))
				for i := range all {
					all[i] = int32(i)
				}
				add(ts, all)
			}
		}
		return dir
	}
	for _, rt := range topics {
		if ts := m.Topic(rt.Topic); ts != nil {
			ps := slices.Clone(rt.Partitions)
			slices.Sort(ps)
			add(ts, slices.Compact(ps))
		}
	}
	return dir
}
