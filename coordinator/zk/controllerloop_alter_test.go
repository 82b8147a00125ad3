package zk

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/engine"
)

// brokerEpoch reads broker id's registration czxid.
func brokerEpoch(t *testing.T, c *Client, id int32) int64 {
	t.Helper()
	_, st, err := c.Get(BrokerPath(id))
	if err != nil {
		t.Fatal(err)
	}
	return st.Czxid
}

// Three brokers on a real ZooKeeper: the leader of a partition at RF 3
// expands its ISR to every replica, then shrinks it, through the
// controller's AlterPartition; each change is the state znode's payload at
// the next version, answered with it, and every broker gets UpdateMetadata
// with the new ISR. A request at the old partition epoch is answered
// INVALID_UPDATE_VERSION, and a broker that is not the controller answers
// NOT_CONTROLLER.
func TestControllerLoopAlterPartition(t *testing.T) {
	requireZK(t)
	f := newFakeBrokers()
	bs, ctl := startTestCluster(t, 3, f)
	epoch := ctl.loop.Epoch()
	if _, err := ctl.client.CreateTopic("isr", controller.TopicRequest{NumPartitions: 1, ReplicationFactor: 3}, controller.Defaults{}, nil, rand.New(rand.NewPCG(3, 4))); err != nil {
		t.Fatal(err)
	}
	tp := engine.Partition{Topic: "isr", Partition: 0}
	f.waitFor(t, "LeaderAndIsr of isr-0", func(got []delivered) bool {
		_, lisr, _ := views(got, 1, epoch)
		_, ok := lisr[tp]
		return ok
	})
	data, st, err := ctl.client.Get(PartitionStatePath("isr", 0))
	if err != nil {
		t.Fatal(err)
	}
	s0, err := DecodePartitionState("isr", 0, data)
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := ctl.client.Get(TopicPath("isr"))
	if err != nil {
		t.Fatal(err)
	}
	assignment, err := DecodeTopic("isr", a)
	if err != nil {
		t.Fatal(err)
	}
	leader := s0.Leader
	ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
	defer cancel()
	alter := func(via *testBroker, partitionEpoch int32, isr ...int32) *kmsg.AlterPartitionResponse {
		t.Helper()
		req := kmsg.NewPtrAlterPartitionRequest()
		req.Version = 3
		req.BrokerID, req.BrokerEpoch = leader, brokerEpoch(t, ctl.client, leader)
		rp := kmsg.AlterPartitionRequestTopicPartition{Partition: 0, LeaderEpoch: s0.LeaderEpoch, PartitionEpoch: partitionEpoch}
		for _, r := range isr {
			rp.NewEpochISR = append(rp.NewEpochISR, kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{BrokerID: r, BrokerEpoch: brokerEpoch(t, ctl.client, r)})
		}
		req.Topics = []kmsg.AlterPartitionRequestTopic{{TopicID: assignment.ID, Partitions: []kmsg.AlterPartitionRequestTopicPartition{rp}}}
		resp, err := via.loop.AlterPartition(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// check asks for isr at partition epoch from, and checks it written at
	// from+1, answered, and told to every broker.
	check := func(from int32, isr []int32) {
		t.Helper()
		resp := alter(ctl, from, isr...)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].TopidID != assignment.ID || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("answer %+v", resp)
		}
		rp := resp.Topics[0].Partitions[0]
		if rp.ErrorCode != 0 || rp.LeaderID != leader || rp.LeaderEpoch != s0.LeaderEpoch || !slices.Equal(rp.ISR, isr) || rp.PartitionEpoch != from+1 {
			t.Fatalf("answer %+v, asked ISR %v from partition epoch %d", rp, isr, from)
		}
		data, st, err := ctl.client.Get(PartitionStatePath("isr", 0))
		if err != nil {
			t.Fatal(err)
		}
		want := EncodePartitionState(PartitionState{Leader: leader, LeaderEpoch: s0.LeaderEpoch, ISR: isr, ControllerEpoch: epoch})
		if string(data) != string(want) || st.Version != from+1 {
			t.Fatalf("state znode %s at version %d, want %s at %d", data, st.Version, want, from+1)
		}
		f.waitFor(t, "UpdateMetadata with the new ISR to every broker", func(got []delivered) bool {
			for _, b := range []int32{1, 2, 3} {
				um, _, _ := views(got, b, epoch)
				if v := um[tp]; !slices.Equal(v.isr, isr) || v.leaderEpoch != s0.LeaderEpoch {
					return false
				}
			}
			return true
		})
	}
	var all []int32
	all = append(all, leader)
	for _, r := range assignment.Replicas[0] {
		if r != leader {
			all = append(all, r)
		}
	}
	check(st.Version, all[:2]) // shrink (a new partition's ISR is every replica)
	check(st.Version+1, all)   // expand

	resp := alter(ctl, st.Version, all[:1]...)
	if rp := resp.Topics[0].Partitions[0]; resp.ErrorCode != 0 || rp.ErrorCode != kerr.InvalidUpdateVersion.Code {
		t.Fatalf("stale partition epoch answered %+v", resp)
	}
	other := bs[0]
	if other == ctl {
		other = bs[1]
	}
	if resp := alter(other, st.Version+2, all[:1]...); resp.ErrorCode != kerr.NotController.Code {
		t.Fatalf("a broker not the controller answered %+v", resp)
	}
}
