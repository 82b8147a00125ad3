package broker

// Partition reassignment on an in-process cluster (the core's rules are
// the controller simulator's; these are what a user sees): replicas moved
// to another broker with their records, the replication factor changed,
// a move cancelled back to the original replicas, and bad plans refused
// with Kafka's errors and no change.

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/engine"
)

// createAssigned creates a topic with explicit replica assignments.
func createAssigned(t *testing.T, ctx context.Context, cl *kgo.Client, name string, replicas ...[]int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
	for p, rs := range replicas {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(p), rs
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
}

// ongoingReassignments lists every ongoing reassignment (a null topic
// list), as the controller answers it.
func ongoingReassignments(t *testing.T, ctx context.Context, cl *kgo.Client) map[string][]int32 {
	t.Helper()
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("ListPartitionReassignments: %v", err)
	}
	out := map[string][]int32{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			out[rt.Topic+"-"+strconv.Itoa(int(rp.Partition))] = rp.Replicas
		}
	}
	return out
}

// replicasAre waits for every broker's metadata to show the partitions'
// replicas (in order) and an ISR of all of them.
func replicasAre(topic string, want ...[]int32) func(*kmsg.MetadataResponse) bool {
	return func(md *kmsg.MetadataResponse) bool {
		tp := topicOf(md, topic)
		if tp == nil || len(tp.Partitions) != len(want) {
			return false
		}
		for _, p := range tp.Partitions {
			isr := slices.Clone(p.ISR)
			slices.Sort(isr)
			rs := slices.Sorted(slices.Values(want[p.Partition]))
			if !slices.Equal(p.Replicas, want[p.Partition]) || !slices.Equal(isr, rs) {
				return false
			}
		}
		return true
	}
}

func produceNumbered(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, n int) {
	t.Helper()
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i % 5)), Value: []byte(strconv.Itoa(i))}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// A partition moved from brokers 0 and 1 to 2 and 1, and another from
// 1 and 0 to 2 alone: the new replicas hold the same log as the old
// leader, broker 0 no longer has either, and a consumer reads every
// record from the new leaders.
func TestClusterReassignMovesReplicas(t *testing.T) {
	c := startCluster(t, 3, nil)
	ctx := ctxTimeout(t, 90*time.Second)
	cl := clusterClient(t, c.bootstrap(), kgo.RequiredAcks(kgo.AllISRAcks()))
	createAssigned(t, ctx, cl, "moved", []int32{0, 1}, []int32{1, 0})
	c.waitAgree("moved is replicated", replicasAre("moved", []int32{0, 1}, []int32{1, 0}))
	produceNumbered(t, ctx, cl, "moved", 500)
	before := [2][]byte{logBytes(t, c.broker(0), "moved", 0), logBytes(t, c.broker(1), "moved", 1)}

	adm := kadm.NewClient(cl)
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("moved", 0, []int32{2, 1})
	req.Assign("moved", 1, []int32{2})
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Sorted() {
		if r.Err != nil {
			t.Fatalf("moved-%d: %v %s", r.Partition, r.Err, r.ErrMessage)
		}
	}
	c.waitAgree("moved-0 on 2 and 1, moved-1 on 2", replicasAre("moved", []int32{2, 1}, []int32{2}))
	if left := ongoingReassignments(t, ctx, cl); len(left) > 0 {
		t.Fatalf("reassignments left once done: %v", left)
	}
	for p, brokers := range map[int32][]int32{0: {2, 1}, 1: {2}} {
		for _, b := range brokers {
			deadline := time.Now().Add(30 * time.Second)
			for !slices.Equal(logBytes(t, c.broker(b), "moved", p), before[p]) {
				if time.Now().After(deadline) {
					t.Fatalf("moved-%d on broker %d: not the old leader's log", p, b)
				}
				time.Sleep(20 * time.Millisecond) // followers fetch on their own schedule
			}
		}
	}
	for _, p := range []int32{0, 1} {
		deadline := time.Now().Add(10 * time.Second)
		for hasLog(c.broker(0), "moved", p) {
			if time.Now().After(deadline) {
				t.Fatalf("broker 0 still hosts moved-%d", p)
			}
			time.Sleep(20 * time.Millisecond) // StopReplica reaches it after the metadata
		}
	}
	consumeAll(t, ctx, c, "moved", 500)
}

// hasLog reports whether a broker's store has a log of the partition (on
// disk, served or not).
func hasLog(tb *testBroker, topic string, partition int32) bool {
	_, _, ok := tb.store.Log(engine.Partition{Topic: topic, Partition: partition})
	return ok
}

// consumeAll reads n records of topic from the start and checks each
// value once.
func consumeAll(t *testing.T, ctx context.Context, c *testCluster, topic string, n int) {
	t.Helper()
	cons := clusterClient(t, c.bootstrap(), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for len(seen) < n {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records", len(seen), n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if seen[string(r.Value)] {
				t.Errorf("record %s twice", r.Value)
			}
			seen[string(r.Value)] = true
		})
	}
}

// A move held back by a throttle (the new replica copies 1 KiB/s of a
// 64 KiB log of 128 batches, in 1 KiB fetches) is in progress, its copy
// begun on the new broker; cancelled, the partition returns to its
// original replicas, the started copy is deleted, and the records are all
// there. (A fetch returns at least one whole batch: the records go one per
// batch, or the producer's one large batch would go in one fetch.)
func TestClusterReassignCancelled(t *testing.T) {
	c := startCluster(t, 3, func(cfg *config.Config) { cfg.Cluster.Fetch.MaxBytes = 1 << 10 })
	ctx := ctxTimeout(t, 90*time.Second)
	cl := clusterClient(t, c.bootstrap(), kgo.RequiredAcks(kgo.AllISRAcks()))
	createAssigned(t, ctx, cl, "stay", []int32{0, 1})
	c.waitAgree("stay is replicated", replicasAre("stay", []int32{0, 1}))
	value := make([]byte, 512)
	for i := range 128 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "stay", Value: append(strconv.AppendInt(nil, int64(i), 10), value...)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(cl)
	mustAlter(t)(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("follower.replication.throttled.replicas", "0:2")}, "stay"))
	mustAlter(t)(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("follower.replication.throttled.rate", "1024")}, 2))

	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("stay", 0, []int32{2, 0})
	if res, err := adm.AlterPartitionAssignments(ctx, req); err != nil || res["stay"][0].Err != nil {
		t.Fatalf("reassign stay-0: %v %+v", err, res)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !hasLog(c.broker(2), "stay", 0) {
		if time.Now().After(deadline) {
			t.Fatal("broker 2 never began copying stay-0")
		}
		time.Sleep(10 * time.Millisecond) // the LeaderAndIsr reaches it after the answer
	}
	if got := ongoingReassignments(t, ctx, cl)["stay-0"]; !slices.Equal(got, []int32{2, 0, 1}) {
		t.Fatalf("stay-0 while moving: replicas %v, want [2 0 1]", got)
	}
	var cancel kadm.AlterPartitionAssignmentsReq
	cancel.CancelAssign("stay", 0)
	res, err := adm.AlterPartitionAssignments(ctx, cancel)
	if err != nil || res["stay"][0].Err != nil {
		t.Fatalf("cancel: %v %+v", err, res)
	}
	c.waitAgree("stay-0 back on 0 and 1", replicasAre("stay", []int32{0, 1}))
	if left := ongoingReassignments(t, ctx, cl); len(left) > 0 {
		t.Fatalf("reassignments left after the cancel: %v", left)
	}
	deadline = time.Now().Add(20 * time.Second)
	for hasLog(c.broker(2), "stay", 0) {
		if time.Now().After(deadline) {
			t.Fatal("broker 2 keeps the cancelled copy of stay-0")
		}
		time.Sleep(10 * time.Millisecond) // StopReplica follows the metadata
	}
	consumeAll(t, ctx, c, "stay", 128)
}

// Bad plans get Kafka's errors and change nothing.
func TestClusterReassignRefusesBadPlans(t *testing.T) {
	c := startCluster(t, 3, nil)
	ctx := ctxTimeout(t, 60*time.Second)
	cl := clusterClient(t, c.bootstrap())
	createAssigned(t, ctx, cl, "fixed", []int32{0, 1}, []int32{1, 2})
	c.waitAgree("fixed is replicated", replicasAre("fixed", []int32{0, 1}, []int32{1, 2}))
	adm := kadm.NewClient(cl)
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("fixed", 0, []int32{0, 7})    // no broker 7
	req.Assign("fixed", 1, []int32{2, 2})    // twice
	req.Assign("fixed", 5, []int32{0, 1})    // no partition 5
	req.Assign("nosuchtopic", 0, []int32{0}) // no topic
	req.Assign("fixed", 2, nil)              // cancel of nothing (and no partition)
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		topic string
		p     int32
		err   error
	}{
		{"fixed", 0, kerr.InvalidReplicaAssignment},
		{"fixed", 1, kerr.InvalidReplicaAssignment},
		{"fixed", 5, kerr.UnknownTopicOrPartition},
		{"nosuchtopic", 0, kerr.UnknownTopicOrPartition},
		{"fixed", 2, kerr.NoReassignmentInProgress},
	} {
		if got := res[w.topic][w.p]; !errors.Is(got.Err, w.err) {
			t.Errorf("%s-%d: %v (%s), want %v", w.topic, w.p, got.Err, got.ErrMessage, w.err)
		}
	}
	if left := ongoingReassignments(t, ctx, cl); len(left) > 0 {
		t.Fatalf("reassignments after refused plans: %v", left)
	}
	if !replicasAre("fixed", []int32{0, 1}, []int32{1, 2})(metadataOf(t, c.broker(0))) {
		t.Fatalf("refused plans changed the assignment: %s", describeMetadata(metadataOf(t, c.broker(0))))
	}
	// A broker other than the controller answers NOT_CONTROLLER.
	ctl := metadataOf(t, c.broker(0)).ControllerID
	other := (ctl + 1) % 3
	raw := kmsg.NewPtrListPartitionReassignmentsRequest()
	if resp := dialRaw(t, c.broker(other).addr).roundTrip(raw, 0).(*kmsg.ListPartitionReassignmentsResponse); resp.ErrorCode != kerr.NotController.Code {
		t.Fatalf("ListPartitionReassignments to broker %d, not the controller: %+v", other, resp)
	}
}
