package host

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDescribeLogDir: every hosted partition with its log's size, or
// those asked for (named twice, once; unknown ones left out), and the
// directory's space.
func TestDescribeLogDir(t *testing.T) {
	p := leaderPartition(t, nil)
	if _, code, _, _ := p.Produce(Produce{Records: batch("a"), Version: 9, Acks: 1}); code != 0 {
		t.Fatal(code)
	}
	m := p.m
	m.SetTopic(&Topic{Name: "t", Partitions: []*Partition{p}})
	dir := m.DescribeLogDir(t.TempDir(), nil)
	if len(dir.Topics) != 1 || dir.Topics[0].Partitions[0].Size != p.Log.Size() || p.Log.Size() == 0 || dir.TotalBytes <= 0 {
		t.Fatalf("all: %+v", dir)
	}
	rt := kmsg.NewDescribeLogDirsRequestTopic()
	rt.Topic, rt.Partitions = "t", []int32{0, 0, 7}
	other := kmsg.NewDescribeLogDirsRequestTopic()
	other.Topic, other.Partitions = "gone", []int32{0}
	if dir := m.DescribeLogDir(t.TempDir(), []kmsg.DescribeLogDirsRequestTopic{rt, other}); len(dir.Topics) != 1 || len(dir.Topics[0].Partitions) != 1 {
		t.Fatalf("asked: %+v", dir.Topics)
	}
}
