package main

// Partition reassignment on broker processes: the controller SIGKILLed in
// the middle of a move (held back by a follower throttle on its target, so
// that it cannot finish before), and the new controller finishing it from
// the topic znode's adding and removing replicas once the throttle is
// lifted; then a move asked through the legacy /admin/reassign_partitions
// znode, which the controller removes once done.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// wantReplicas is a waitAgree condition: topic's partition p has replicas
// (in order) and all of them in its ISR.
func wantReplicas(topic string, p int32, replicas ...int32) func(*kmsg.MetadataResponse) error {
	return func(m *kmsg.MetadataResponse) error {
		for _, tp := range m.Topics {
			if *tp.Topic != topic {
				continue
			}
			for _, mp := range tp.Partitions {
				if mp.Partition != p {
					continue
				}
				isr := slices.Sorted(slices.Values(mp.ISR))
				if !slices.Equal(mp.Replicas, replicas) || !slices.Equal(isr, slices.Sorted(slices.Values(replicas))) {
					return fmt.Errorf("%s-%d: replicas %v ISR %v, want %v", topic, p, mp.Replicas, mp.ISR, replicas)
				}
				return nil
			}
		}
		return fmt.Errorf("no %s-%d", topic, p)
	}
}

func TestClusterReassignSurvivesTheController(t *testing.T) {
	// 1 KiB fetches: the throttle below lets one through a second.
	c := startClusterWith(t, 4, "replica.fetch.max.bytes=1024\n")
	ctx, cancel := context.WithTimeout(context.Background(), 4*testWait)
	defer cancel()
	c.waitAgree("every broker registered", func(m *kmsg.MetadataResponse) error { return c.wantBrokers(m, c.ids()...) })
	ctl := c.waitController(-1)
	var others []int32
	for _, id := range c.ids() {
		if id != ctl {
			others = append(others, id)
		}
	}
	a, b, target := others[0], others[1], others[2]
	adm := kadm.NewClient(c.client())
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "moving", -1, -1
	for p, rs := range [][]int32{{a, b}, {b, a}} {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(p), rs
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	req.Topics = append(req.Topics, rt)
	if resp, err := req.RequestWith(ctx, c.client()); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v %+v", err, resp)
	}
	c.waitAgree("moving is replicated", wantReplicas("moving", 0, a, b))
	// One record per batch (a fetch takes at least one whole batch), 512
	// bytes each: 100 KiB to copy at 1 KiB/s.
	prod := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const n = 400
	pad := make([]byte, 500)
	for i := range n {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "moving", Partition: int32(i % 2), Value: fmt.Appendf(nil, "%d-%s", i, pad)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	// The target's copy of moving-0 throttled to 1 KiB/s: the move is
	// accepted and cannot complete.
	throttle := func(rate *string) {
		t.Helper()
		op := kadm.SetConfig
		if rate == nil {
			op = kadm.DeleteConfig
		}
		if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: op, Name: "follower.replication.throttled.rate", Value: rate}}, target); err != nil {
			t.Fatal(err)
		}
	}
	replicas := fmt.Sprintf("0:%d", target)
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "follower.replication.throttled.replicas", Value: &replicas}}, "moving"); err != nil {
		t.Fatal(err)
	}
	throttle(kadm.StringPtr("1024"))
	var move kadm.AlterPartitionAssignmentsReq
	move.Assign("moving", 0, []int32{target, a})
	res, err := adm.AlterPartitionAssignments(ctx, move)
	if err != nil || res["moving"][0].Err != nil {
		t.Fatalf("reassign moving-0: %v %+v", err, res)
	}
	data, _ := c.znode("/brokers/topics/moving")
	type topicZnode struct {
		Partitions map[string][]int32 `json:"partitions"`
		Adding     map[string][]int32 `json:"adding_replicas"`
		Removing   map[string][]int32 `json:"removing_replicas"`
	}
	var znode topicZnode
	if err := json.Unmarshal(data, &znode); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(znode.Partitions["0"], []int32{target, a, b}) || !slices.Equal(znode.Adding["0"], []int32{target}) || !slices.Equal(znode.Removing["0"], []int32{b}) {
		t.Fatalf("topic znode during the move: %s", data)
	}

	var set kadm.TopicsSet
	set.Add("moving", 0)
	if ongoing, err := adm.ListPartitionReassignments(ctx, set); err != nil || len(ongoing["moving"]) != 1 {
		t.Fatalf("moving-0 not moving when the controller is killed: %v %+v", err, ongoing)
	}
	c.kill(ctl)
	throttle(nil) // the copy goes at full speed: the new controller completes the move
	next := c.waitController(ctl)
	t.Logf("controller %d killed mid-move, %d took over", ctl, next)
	c.waitAgree("moving-0 on the target and a", wantReplicas("moving", 0, target, a))
	poll(t, "the topic znode without adding and removing replicas", func() error {
		data, _ := c.znode("/brokers/topics/moving")
		var znode topicZnode
		if err := json.Unmarshal(data, &znode); err != nil {
			return err
		}
		if len(znode.Adding)+len(znode.Removing) > 0 || !slices.Equal(znode.Partitions["0"], []int32{target, a}) {
			return fmt.Errorf("%s", data)
		}
		return nil
	})

	// The legacy znode: moving-1 to the target alone.
	if c.zkConn == nil {
		c.znode("/") // opens the connection
	}
	if _, err := c.zkConn.Create(c.chroot+"/admin/reassign_partitions",
		fmt.Appendf(nil, `{"version":1,"partitions":[{"topic":"moving","partition":1,"replicas":[%d]}]}`, target), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	c.waitAgree("moving-1 on the target alone", wantReplicas("moving", 1, target))
	poll(t, "/admin/reassign_partitions removed once done", func() error {
		if data, stat := c.znode("/admin/reassign_partitions"); stat != nil {
			return fmt.Errorf("still there: %s", data)
		}
		return nil
	})
	got := readToEnds(ctx, t, c, "moving", map[int32]int64{0: n / 2, 1: n / 2})
	if len(got) != n {
		t.Fatalf("read %d records after the moves, want %d", len(got), n)
	}
}
