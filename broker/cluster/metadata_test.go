package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// update is an UpdateMetadata v8 from controller 1 of live brokers and
// partitions of topic t, each leader (-2: being deleted) by index.
func update(brokers []int32, leaders ...int32) *kmsg.UpdateMetadataRequest {
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.Version, req.ControllerID, req.ControllerEpoch = 8, 1, 5
	for _, id := range brokers {
		lb := kmsg.NewUpdateMetadataRequestLiveBroker()
		lb.ID = id
		ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
		ep.Host, ep.Port, ep.ListenerName = "h", 9092+id, "PLAINTEXT"
		lb.Endpoints = append(lb.Endpoints, ep)
		req.LiveBrokers = append(req.LiveBrokers, lb)
	}
	ts := kmsg.NewUpdateMetadataRequestTopicState()
	ts.Topic, ts.TopicID = "t", [16]byte{7}
	for i, l := range leaders {
		ps := kmsg.NewUpdateMetadataRequestTopicPartition()
		ps.Partition, ps.Leader, ps.ISR, ps.Replicas = int32(i), l, []int32{l}, []int32{l}
		ts.PartitionStates = append(ts.PartitionStates, ps)
	}
	if len(leaders) > 0 {
		req.TopicStates = append(req.TopicStates, ts)
	}
	return req
}

// TestCacheUpdate: live brokers are replaced and sorted, partitions merged
// (one an update does not name keeps its state), a partition being deleted
// goes and is reported, a topic goes with its last partition, a snapshot
// once published never changes, and a waiter wakes at the update that
// satisfies it.
func TestCacheUpdate(t *testing.T) {
	m := NewCache()
	if s := m.Load(); s.ControllerID != -1 || len(s.Topics) != 0 {
		t.Fatalf("new cache: %+v", s)
	}
	m.Update(update([]int32{3, 1, 2}, 1, 2))
	first := m.Load()
	if first.ControllerID != 1 || len(first.Brokers) != 3 || first.Brokers[0].ID != 1 || first.LiveBroker(2) == nil || first.LiveBroker(4) != nil {
		t.Fatalf("brokers: %+v", first.Brokers)
	}
	if tp := first.Topics["t"]; tp == nil || tp.ID != ([16]byte{7}) || tp.Count != 2 || tp.Partitions[1].Leader != 2 || !m.HasPartition("t", 1) || !m.HasTopicID([16]byte{7}) {
		t.Fatalf("topic: %+v", first.Topics["t"])
	}
	done := make(chan bool)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- m.Wait(ctx, func(s *Snapshot) bool { return s.Topics["t"] == nil })
	}()
	req := update([]int32{1}, 3)
	req.TopicStates[0].PartitionStates[0].Partition = 1 // partition 0 not named
	req.TopicStates[0].PartitionStates[0].Leader = LeaderDuringDelete
	if deleted := m.Update(req); len(deleted) != 1 || deleted[0].Topic != "t" || deleted[0].Partition != 1 {
		t.Fatalf("deleted: %v", deleted)
	}
	if s := m.Load(); len(s.Brokers) != 1 || s.Topics["t"].Partitions[0].Leader != 1 || s.Topics["t"].Count != 1 || m.HasPartition("t", 1) {
		t.Fatalf("after a partial update: %+v", s.Topics["t"])
	}
	if len(first.Brokers) != 3 || len(first.Topics["t"].Partitions) != 2 {
		t.Fatal("a published snapshot changed")
	}
	req = update(nil, LeaderDuringDelete)
	m.Update(req)
	if !<-done || m.Load().Topics["t"] != nil {
		t.Fatal("the topic did not go with its last partition, or the waiter did not wake")
	}
}
