package cluster

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
)

// leaderAndIsr is a v7 request of topic t (id) with one state per epoch:
// partition i led by leaders[i] over replicas {1, 2}.
func leaderAndIsr(id [16]byte, epochs []int32, leaders ...int32) *kmsg.LeaderAndISRRequest {
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.Version = 7
	ts := kmsg.NewLeaderAndISRRequestTopicState()
	ts.Topic, ts.TopicID = "t", id
	for i, e := range epochs {
		ps := kmsg.NewLeaderAndISRRequestTopicPartition()
		ps.Topic, ps.Partition, ps.LeaderEpoch, ps.Leader = "t", int32(i), e, leaders[i]
		ps.ISR, ps.Replicas = []int32{1, 2}, []int32{1, 2}
		ts.PartitionStates = append(ts.PartitionStates, ps)
	}
	req.TopicStates = append(req.TopicStates, ts)
	return req
}

// TestApplyLeaderAndIsr: a newer leader epoch becomes the role (leader or
// follower), one that leaves this broker out of the replicas is
// UNKNOWN_TOPIC_OR_PARTITION, an older or equal epoch
// STALE_CONTROLLER_EPOCH, except that the same epoch records a topic id
// the role had none of and answers a failed follower KAFKA_STORAGE_ERROR;
// another topic id than the one held is INCONSISTENT_TOPIC_ID. The
// fencing's code answers every partition.
func TestApplyLeaderAndIsr(t *testing.T) {
	id := [16]byte{5}
	tab := &RoleTable{Roles: map[engine.Partition]Role{
		{Topic: "t", Partition: 2}: {LeaderEpoch: 4, Leader: 2, ISR: []int32{1, 2}, Replicas: []int32{1, 2}},
		{Topic: "t", Partition: 3}: {TopicID: id, LeaderEpoch: 4, Leader: 2},
		{Topic: "t", Partition: 4}: {TopicID: id, LeaderEpoch: 4, Leader: 2},
	}, Deleted: map[engine.Partition]struct{}{{Topic: "t", Partition: 0}: {}}}
	req := leaderAndIsr(id, []int32{1, 1, 4, 4, 3}, 1, 2, 2, 2, 2)
	states := LeaderAndIsrStates(req)
	h := Hosting{Self: 1, TopicID: func(string) [16]byte { return [16]byte{} },
		Failed: func(_ string, p int32) bool { return p == 3 }}
	tab.ApplyLeaderAndIsr(states, h)
	want := []int16{0, 0, 0, kerr.KafkaStorageError.Code, kerr.StaleControllerEpoch.Code}
	for i, s := range states {
		if s.Code != want[i] || s.Accepted != (i < 2) {
			t.Errorf("partition %d: code %d accepted %v, want code %d", i, s.Code, s.Accepted, want[i])
		}
	}
	if r := tab.Roles[engine.Partition{Topic: "t", Partition: 0}]; !r.IsLeader || r.LeaderEpoch != 1 || r.TopicID != id {
		t.Fatalf("partition 0 leads: %+v", r)
	}
	if _, pending := tab.Deleted[engine.Partition{Topic: "t", Partition: 0}]; pending {
		t.Fatal("a partition hosted again is still pending deletion")
	}
	if r := tab.Roles[engine.Partition{Topic: "t", Partition: 1}]; r.IsLeader || r.Leader != 2 {
		t.Fatalf("partition 1 follows: %+v", r)
	}
	if r := tab.Roles[engine.Partition{Topic: "t", Partition: 2}]; r.TopicID != id || r.LeaderEpoch != 4 {
		t.Fatalf("partition 2 took the topic id at the same epoch: %+v", r)
	}

	other := LeaderAndIsrStates(leaderAndIsr([16]byte{6}, []int32{9}, 1))
	tab.ApplyLeaderAndIsr(other, h)
	if other[0].Code != kerr.InconsistentTopicID.Code {
		t.Fatalf("another topic id: %d", other[0].Code)
	}
	h.Self = 3
	outside := LeaderAndIsrStates(leaderAndIsr(id, []int32{1, 1, 1, 1, 1, 9}, 1, 1, 1, 1, 1, 1))
	tab.ApplyLeaderAndIsr(outside, h)
	if outside[5].Code != kerr.UnknownTopicOrPartition.Code || outside[5].Accepted {
		t.Fatalf("not a replica: %+v", outside[5])
	}

	resp := LeaderAndIsrResponse(req, 0, states)
	if len(resp.Topics) != 1 || resp.Topics[0].TopicID != id || len(resp.Topics[0].Partitions) != 5 || resp.Topics[0].Partitions[3].ErrorCode != kerr.KafkaStorageError.Code {
		t.Fatalf("response: %+v", resp.Topics)
	}
	fenced := LeaderAndIsrResponse(req, kerr.StaleBrokerEpoch.Code, states)
	if fenced.ErrorCode != kerr.StaleBrokerEpoch.Code || fenced.Topics[0].Partitions[0].ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("fenced response: %+v", fenced)
	}
}

// TestApplyStopReplica: a partition stops at an epoch at or above its
// role's (or with no epoch), is removed from the table and pending
// deletion when deleted; an older epoch is FENCED_LEADER_EPOCH; a
// partition not hosted is deleted when asked (a log from before the
// start), and otherwise left alone.
func TestApplyStopReplica(t *testing.T) {
	tab := &RoleTable{Roles: map[engine.Partition]Role{
		{Topic: "t", Partition: 0}: {LeaderEpoch: 4, IsLeader: true},
		{Topic: "t", Partition: 1}: {LeaderEpoch: 4, IsLeader: true},
		{Topic: "t", Partition: 2}: {LeaderEpoch: 4},
	}, Deleted: map[engine.Partition]struct{}{}}
	req := kmsg.NewPtrStopReplicaRequest()
	req.Version = 3
	rt := kmsg.NewStopReplicaRequestTopic()
	rt.Topic = "t"
	for i, e := range []struct {
		epoch  int32
		delete bool
	}{{5, false}, {-1, true}, {3, true}, {1, true}, {1, false}} {
		ps := kmsg.NewStopReplicaRequestTopicPartitionState()
		ps.Partition, ps.LeaderEpoch, ps.Delete = int32(i), e.epoch, e.delete
		rt.PartitionStates = append(rt.PartitionStates, ps)
	}
	req.Topics = append(req.Topics, rt)
	out, stop := tab.ApplyStopReplica(StopReplicaStates(req))
	if out[2].ErrorCode != kerr.FencedLeaderEpoch.Code || out[0].ErrorCode != 0 || len(out) != 5 {
		t.Fatalf("answers: %+v", out)
	}
	if r := tab.Roles[engine.Partition{Topic: "t", Partition: 0}]; !r.Stopped || r.IsLeader {
		t.Fatalf("partition 0 stopped: %+v", r)
	}
	if _, ok := tab.Roles[engine.Partition{Topic: "t", Partition: 1}]; ok || len(tab.Deleted) != 2 {
		t.Fatalf("deleted partitions: roles %+v, pending %+v", tab.Roles, tab.Deleted)
	}
	if len(stop) != 3 || stop[1].LeaderEpoch != 4 || !stop[2].Delete || stop[2].Partition.Partition != 3 {
		t.Fatalf("to stop: %+v", stop)
	}
}
