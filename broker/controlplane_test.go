package broker

// The controller's requests (LeaderAndIsr, StopReplica, UpdateMetadata) as
// raw requests: the single node's refusal, and with a fake control plane
// the fencing by broker and controller epochs and by the controller's
// identity, the metadata cache and the role table they fill.

import (
	"fmt"
	"sync"
	"testing"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/config"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakePlane names controller as the active controller from epoch on.
type fakePlane struct {
	mu          sync.Mutex
	brokerEpoch int64
	controller  int32
	epoch       int32
}

func (f *fakePlane) BrokerEpoch() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.brokerEpoch
}

func (f *fakePlane) IsActiveController(id, epoch int32) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return id == f.controller && epoch >= f.epoch
}

var topicA = [16]byte{0xa}

// leaderAndIsr is a request from controller at epoch; each part is
// partition, leader, leader epoch, replicas..., all of topic "t" (id topicA).
func leaderAndIsr(controller, epoch int32, brokerEpoch int64, parts ...[]int32) *kmsg.LeaderAndISRRequest {
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = controller, epoch, brokerEpoch
	ts := kmsg.NewLeaderAndISRRequestTopicState()
	ts.Topic, ts.TopicID = "t", topicA
	for _, p := range parts {
		ps := kmsg.NewLeaderAndISRRequestTopicPartition()
		ps.Topic, ps.Partition, ps.ControllerEpoch, ps.Leader, ps.LeaderEpoch = "t", p[0], epoch, p[1], p[2]
		ps.Replicas, ps.ISR = p[3:], p[1:2]
		ts.PartitionStates = append(ts.PartitionStates, ps)
		req.PartitionStates = append(req.PartitionStates, ps) // read in v0-v1 only
	}
	req.TopicStates = append(req.TopicStates, ts)
	return req
}

// lisrCodes sends req at v and returns the top-level code and the
// partitions' codes in order.
func lisrCodes(rc *rawConn, req *kmsg.LeaderAndISRRequest, v int16) (int16, []int16) {
	resp := rc.roundTrip(req, v).(*kmsg.LeaderAndISRResponse)
	var codes []int16
	for _, p := range resp.Partitions {
		codes = append(codes, p.ErrorCode)
	}
	for _, t := range resp.Topics {
		if t.TopicID != topicA {
			rc.t.Errorf("response topic id %x, want %x", t.TopicID, topicA)
		}
		for _, p := range t.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	return resp.ErrorCode, codes
}

// updateMetadata is a request from controller at epoch listing brokers
// live; each part is partition, leader, leader epoch of topic "t".
func updateMetadata(controller, epoch int32, brokerEpoch int64, brokers []int32, parts ...[3]int32) *kmsg.UpdateMetadataRequest {
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = controller, epoch, brokerEpoch
	for _, id := range brokers {
		lb := kmsg.NewUpdateMetadataRequestLiveBroker()
		lb.ID, lb.Rack = id, kmsg.StringPtr(fmt.Sprintf("rack%d", id))
		ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
		ep.Host, ep.Port, ep.ListenerName = fmt.Sprintf("b%d", id), 9092, "PLAINTEXT"
		lb.Endpoints = append(lb.Endpoints, ep)
		req.LiveBrokers = append(req.LiveBrokers, lb)
	}
	ts := kmsg.NewUpdateMetadataRequestTopicState()
	ts.Topic, ts.TopicID = "t", topicA
	for _, p := range parts {
		ps := kmsg.NewUpdateMetadataRequestTopicPartition()
		ps.Partition, ps.Leader, ps.LeaderEpoch = p[0], p[1], p[2]
		ps.ISR, ps.Replicas, ps.OfflineReplicas = []int32{p[1]}, []int32{p[1], 3}, []int32{3}
		ts.PartitionStates = append(ts.PartitionStates, ps)
	}
	req.TopicStates = append(req.TopicStates, ts)
	return req
}

func umCode(rc *rawConn, req *kmsg.UpdateMetadataRequest, v int16) int16 {
	return rc.roundTrip(req, v).(*kmsg.UpdateMetadataResponse).ErrorCode
}

func stopReplica(controller, epoch int32, brokerEpoch int64, del bool, parts ...[2]int32) *kmsg.StopReplicaRequest {
	req := kmsg.NewPtrStopReplicaRequest()
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch, req.DeletePartitions = controller, epoch, brokerEpoch, del
	rt := kmsg.NewStopReplicaRequestTopic()
	rt.Topic = "t"
	for _, p := range parts {
		ps := kmsg.NewStopReplicaRequestTopicPartitionState()
		ps.Partition, ps.LeaderEpoch, ps.Delete = p[0], p[1], del
		rt.PartitionStates = append(rt.PartitionStates, ps)
		rt.Partitions = append(rt.Partitions, p[0]) // v1-v2
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func wantCodes(t *testing.T, what string, got []int16, want ...*kerr.Error) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d partition answers, want %d", what, len(got), len(want))
	}
	for i := range want {
		wantCode(t, fmt.Sprintf("%s partition %d", what, i), got[i], want[i])
	}
}

func TestControlRequestsSingleNode(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	tb.createTopic(t, "t", 1)
	rc := dialRaw(t, tb.addr)
	roles, cache := tb.plane.state.Roles.Load(), tb.plane.state.Cache.Load()
	stale := kerr.StaleControllerEpoch
	for _, v := range []int16{0, 1, 2, 5, 7} {
		top, codes := lisrCodes(rc, leaderAndIsr(0, 1, -1, []int32{0, 0, 1, 0}), v)
		wantCode(t, fmt.Sprintf("LeaderAndIsr v%d", v), top, stale)
		wantCodes(t, fmt.Sprintf("LeaderAndIsr v%d", v), codes, stale)
	}
	for _, v := range []int16{0, 3, 5, 8} {
		wantCode(t, fmt.Sprintf("UpdateMetadata v%d", v), umCode(rc, updateMetadata(0, 1, -1, []int32{0, 7}, [3]int32{0, 7, 1}), v), stale)
	}
	for _, v := range []int16{0, 1, 3, 4} {
		resp := rc.roundTrip(stopReplica(0, 1, -1, true, [2]int32{0, -2}), v).(*kmsg.StopReplicaResponse)
		wantCode(t, fmt.Sprintf("StopReplica v%d", v), resp.ErrorCode, stale)
		if len(resp.Partitions) != 0 {
			t.Errorf("StopReplica v%d: %d partitions answered, want none", v, len(resp.Partitions))
		}
	}
	// Nothing changed: the role table and the metadata cache are those the
	// single node's own controller made, and it still answers as before.
	if tb.plane.state.Roles.Load() != roles || tb.plane.state.Roles.PendingDelete("t", 0) {
		t.Error("a refused request changed the role table")
	}
	if tb.plane.state.Cache.Load() != cache {
		t.Error("a refused UpdateMetadata changed the metadata cache")
	}
	md := rc.roundTrip(metadataReq(false, "t"), 12).(*kmsg.MetadataResponse)
	if len(md.Brokers) != 1 || len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 1 || md.Topics[0].Partitions[0].Leader != tb.cfg.ID {
		t.Errorf("Metadata after refused control requests: %+v", md)
	}
}

func TestControlRequestsFencing(t *testing.T) {
	plane := &fakePlane{brokerEpoch: 100, controller: 2, epoch: 3}
	tb := startBroker(t, t.TempDir(), func(c *config.Config) { c.ID, c.ControlPlane = 1, plane })
	rc := dialRaw(t, tb.addr)
	staleCtl, staleBroker := kerr.StaleControllerEpoch, kerr.StaleBrokerEpoch

	// UpdateMetadata: accepted at epoch 5 from the controller, at the
	// broker's epoch, a newer one or none.
	for _, be := range []int64{100, 101, -1} {
		wantCode(t, fmt.Sprintf("UpdateMetadata broker epoch %d", be),
			umCode(rc, updateMetadata(2, 5, be, []int32{3, 1, 2}, [3]int32{0, 1, 0}, [3]int32{1, 2, 0}), 8), nil)
	}
	s := tb.plane.state.Cache.Load()
	if s.ControllerID != 2 || len(s.Brokers) != 3 || s.Brokers[0].ID != 1 || *s.Brokers[2].Rack != "rack3" ||
		s.Brokers[1].Endpoints[0].Host != "b2" || s.Topics["t"].ID != topicA || s.Topics["t"].Partitions[1].Leader != 2 ||
		fmt.Sprint(s.Topics["t"].Partitions[0].Offline) != "[3]" {
		t.Fatalf("cache after UpdateMetadata: %+v", s)
	}
	// Refused, changing nothing: an older broker epoch, a controller epoch
	// below the highest seen (4 < 5, though the plane would accept 4), a
	// sender that is not the controller, a KRaft controller.
	wantCode(t, "UpdateMetadata broker epoch 99", umCode(rc, updateMetadata(2, 6, 99, []int32{1}), 8), staleBroker)
	wantCode(t, "UpdateMetadata controller epoch 4", umCode(rc, updateMetadata(2, 4, 100, []int32{1}), 8), staleCtl)
	wantCode(t, "UpdateMetadata from broker 3", umCode(rc, updateMetadata(3, 6, 100, []int32{1}), 8), staleCtl)
	kraft := updateMetadata(2, 6, 100, []int32{1})
	kraft.IsKRaftController = true
	wantCode(t, "UpdateMetadata from a KRaft controller", umCode(rc, kraft, 8), staleCtl)
	if tb.plane.state.Cache.Load() != s {
		t.Fatal("a refused UpdateMetadata changed the cache")
	}
	// A newer epoch replaces the live brokers; partition 1 is deleted,
	// partition 0 kept as it was.
	wantCode(t, "UpdateMetadata epoch 6", umCode(rc, updateMetadata(2, 6, 100, []int32{3, 1}, [3]int32{1, -2, 0}), 8), nil)
	prev, s := s, tb.plane.state.Cache.Load()
	if len(prev.Brokers) != 3 || len(prev.Topics["t"].Partitions) != 2 {
		t.Errorf("the update changed the snapshot before it: %+v", prev)
	}
	if len(s.Brokers) != 2 || s.Brokers[0].ID != 1 || s.Brokers[1].ID != 3 || len(s.Topics["t"].Partitions) != 1 || s.Topics["t"].Partitions[0].Leader != 1 {
		t.Fatalf("cache after the second UpdateMetadata: %+v", s)
	}
	// v0: brokers with one host and port.
	plane.mu.Lock()
	plane.epoch = 6
	plane.mu.Unlock()
	um0 := updateMetadata(2, 6, 0, []int32{4})
	um0.LiveBrokers[0].Host, um0.LiveBrokers[0].Port = "h4", 9094
	wantCode(t, "UpdateMetadata v0", umCode(rc, um0, 0), nil)
	if s = tb.plane.state.Cache.Load(); len(s.Brokers) != 1 || s.Brokers[0].Endpoints[0] != (cluster.Endpoint{Listener: "PLAINTEXT", Host: "h4", Port: 9094}) {
		t.Fatalf("cache after UpdateMetadata v0: %+v", s.Brokers)
	}

	// LeaderAndIsr at the highest epoch: leader of 0, follower of 1, not a
	// replica of 2.
	top, codes := lisrCodes(rc, leaderAndIsr(2, 6, 100, []int32{0, 1, 0, 1, 2}, []int32{1, 2, 0, 2, 1}, []int32{2, 2, 0, 2, 3}), 7)
	wantCode(t, "LeaderAndIsr", top, nil)
	wantCodes(t, "LeaderAndIsr", codes, nil, nil, kerr.UnknownTopicOrPartition)
	if r, ok := tb.plane.state.Roles.Role("t", 0); !ok || !r.IsLeader || r.LeaderEpoch != 0 || r.TopicID != topicA {
		t.Errorf("t-0 role %+v, %v; want leader at epoch 0", r, ok)
	}
	if r, ok := tb.plane.state.Roles.Role("t", 1); !ok || r.IsLeader || r.Leader != 2 {
		t.Errorf("t-1 role %+v, %v; want follower of 2", r, ok)
	}
	if _, ok := tb.plane.state.Roles.Role("t", 2); ok {
		t.Error("t-2 recorded though this broker is not a replica")
	}
	// The same leader epoch again is stale; a newer one makes t-0 a follower.
	_, codes = lisrCodes(rc, leaderAndIsr(2, 6, 100, []int32{0, 1, 0, 1, 2}), 7)
	wantCodes(t, "LeaderAndIsr same leader epoch", codes, staleCtl)
	_, codes = lisrCodes(rc, leaderAndIsr(2, 6, 100, []int32{0, 2, 1, 2, 1}), 7)
	wantCodes(t, "LeaderAndIsr leader epoch 1", codes, nil)
	if r, _ := tb.plane.state.Roles.Role("t", 0); r.IsLeader || r.LeaderEpoch != 1 {
		t.Errorf("t-0 role %+v; want follower at epoch 1", r)
	}
	// Refused whole: every partition answered with the top-level code.
	before := tb.plane.state.Roles.Load()
	for _, c := range []struct {
		what string
		req  *kmsg.LeaderAndISRRequest
		v    int16
		want *kerr.Error
	}{
		{"controller epoch 5", leaderAndIsr(2, 5, 100, []int32{0, 1, 9, 1}, []int32{1, 1, 9, 1}), 7, staleCtl},
		{"broker epoch 99", leaderAndIsr(2, 6, 99, []int32{0, 1, 9, 1}), 7, staleBroker},
		{"broker epoch 99 v2", leaderAndIsr(2, 6, 99, []int32{0, 1, 9, 1}), 2, staleBroker},
		{"not the controller", leaderAndIsr(1, 6, 100, []int32{0, 1, 9, 1}), 7, staleCtl},
		{"v1, not the controller", leaderAndIsr(1, 6, 0, []int32{0, 1, 9, 1}), 1, staleCtl},
	} {
		top, codes := lisrCodes(rc, c.req, c.v)
		wantCode(t, "LeaderAndIsr "+c.what, top, c.want)
		want := make([]*kerr.Error, len(codes))
		for i := range want {
			want[i] = c.want
		}
		wantCodes(t, "LeaderAndIsr "+c.what, codes, want...)
	}
	if tb.plane.state.Roles.Load() != before {
		t.Fatal("a refused LeaderAndIsr changed the role table")
	}
	// Another topic id for the topic.
	other := leaderAndIsr(2, 6, 100, []int32{0, 1, 5, 1})
	other.TopicStates[0].TopicID = [16]byte{0xb}
	resp := rc.roundTrip(other, 7).(*kmsg.LeaderAndISRResponse)
	wantCode(t, "LeaderAndIsr other topic id", resp.Topics[0].Partitions[0].ErrorCode, kerr.InconsistentTopicID)

	// StopReplica: t-0 at an older leader epoch is fenced; t-1 stopped.
	sr := rc.roundTrip(stopReplica(2, 6, 100, false, [2]int32{0, 0}, [2]int32{1, 0}), 4).(*kmsg.StopReplicaResponse)
	if sr.ErrorCode != 0 || len(sr.Partitions) != 2 {
		t.Fatalf("StopReplica: %+v", sr)
	}
	wantCode(t, "StopReplica t-0 epoch 0", sr.Partitions[0].ErrorCode, kerr.FencedLeaderEpoch)
	wantCode(t, "StopReplica t-1", sr.Partitions[1].ErrorCode, nil)
	if r, ok := tb.plane.state.Roles.Role("t", 1); !ok || !r.Stopped {
		t.Errorf("t-1 role %+v after StopReplica; want stopped", r)
	}
	// Deletion (the topic's deletion epoch -2), and a partition not hosted.
	sr = rc.roundTrip(stopReplica(2, 6, 100, true, [2]int32{0, -2}, [2]int32{7, -2}), 4).(*kmsg.StopReplicaResponse)
	wantCodes(t, "StopReplica delete", []int16{sr.ErrorCode, sr.Partitions[0].ErrorCode, sr.Partitions[1].ErrorCode}, nil, nil, nil)
	if _, ok := tb.plane.state.Roles.Role("t", 0); ok || !tb.plane.state.Roles.PendingDelete("t", 0) || !tb.plane.state.Roles.PendingDelete("t", 7) {
		t.Error("StopReplica delete: t-0 still hosted or deletions not recorded")
	}
	// Refused: top level only, no partitions.
	for _, c := range []struct {
		what string
		req  *kmsg.StopReplicaRequest
		v    int16
		want *kerr.Error
	}{
		{"broker epoch 99", stopReplica(2, 6, 99, true, [2]int32{1, -2}), 4, staleBroker},
		{"controller epoch 5 v1", stopReplica(2, 5, 100, true, [2]int32{1, -2}), 1, staleCtl},
	} {
		sr = rc.roundTrip(c.req, c.v).(*kmsg.StopReplicaResponse)
		wantCode(t, "StopReplica "+c.what, sr.ErrorCode, c.want)
		if len(sr.Partitions) != 0 {
			t.Errorf("StopReplica %s: %d partitions answered", c.what, len(sr.Partitions))
		}
	}
	// Hosting t-0 again takes it out of the pending deletions.
	_, codes = lisrCodes(rc, leaderAndIsr(2, 7, 100, []int32{0, 1, 0, 1}), 5)
	wantCodes(t, "LeaderAndIsr after deletion", codes, nil)
	if !tb.plane.state.Roles.PendingDelete("t", 7) || tb.plane.state.Roles.PendingDelete("t", 0) {
		t.Error("pending deletions after t-0 was hosted again")
	}
	if tb.plane.state.ControllerEpoch() != 7 {
		t.Errorf("highest controller epoch %d, want 7", tb.plane.state.ControllerEpoch())
	}
}
