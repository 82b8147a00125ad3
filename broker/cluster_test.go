package broker

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterClient is a franz-go client seeded with the given brokers only.
func clusterClient(t testing.TB, seeds []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ProducerLinger(0), kgo.RetryTimeout(30 * time.Second)}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// leadersPerBroker counts the partitions of a topic each broker leads.
func leadersPerBroker(t *kmsg.MetadataResponseTopic) map[int32]int {
	out := map[int32]int{}
	for _, p := range t.Partitions {
		out[p.Leader]++
	}
	return out
}

func TestClusterSpreadsTopicsAndServesClients(t *testing.T) {
	c := startCluster(t, 3, nil)
	adm := kadm.NewClient(clusterClient(t, c.bootstrap()[:1]))
	ctx := ctxTimeout(t, 60*time.Second)
	for _, tc := range []struct {
		name string
		rf   int16
	}{{"rf1", 1}, {"rf3", 3}} {
		resp, err := adm.CreateTopic(ctx, 12, tc.rf, nil, tc.name)
		if err != nil || resp.Err != nil {
			t.Fatalf("create %s: %v %v", tc.name, err, resp.Err)
		}
	}
	for _, name := range []string{"rf1", "rf3"} {
		c.waitAgree(name+" created", topicReady(name, 12))
	}
	// Every broker answers the same spread: each leads 4 of each topic, no
	// broker holds two replicas of a partition.
	for _, b := range c.live() {
		md := metadataOf(t, b)
		for _, tc := range []struct {
			name string
			rf   int
		}{{"rf1", 1}, {"rf3", 3}} {
			tp := topicOf(md, tc.name)
			if got := leadersPerBroker(tp); got[0] != 4 || got[1] != 4 || got[2] != 4 {
				t.Errorf("broker %d: %s leaders per broker %v, want 4 each", b.cfg.ID, tc.name, got)
			}
			for _, p := range tp.Partitions {
				r := slices.Clone(p.Replicas)
				slices.Sort(r)
				if len(r) != tc.rf || len(slices.Compact(r)) != tc.rf {
					t.Errorf("broker %d: %s-%d replicas %v", b.cfg.ID, tc.name, p.Partition, p.Replicas)
				}
				if !slices.Contains(p.ISR, p.Leader) || p.Replicas[0] != p.Leader || len(p.ISR) > len(p.Replicas) {
					t.Errorf("broker %d: %s-%d leader %d ISR %v replicas %v: want the first replica leading, in the ISR", b.cfg.ID, tc.name, p.Partition, p.Leader, p.ISR, p.Replicas)
				}
			}
		}
	}

	// Produce through one broker, read back through another: the client
	// finds every partition's leader from either.
	const n = 100_000
	prod := clusterClient(t, c.bootstrap()[1:2], kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	for _, topic := range []string{"rf1", "rf3"} {
		errs := make(chan error, 1)
		for i := range n {
			r := &kgo.Record{Topic: topic, Key: []byte("k" + strconv.Itoa(i%1000)), Value: []byte(strconv.Itoa(i))}
			prod.Produce(ctx, r, func(_ *kgo.Record, err error) {
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			})
		}
		if err := prod.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-errs:
			t.Fatalf("produce to %s: %v", topic, err)
		default:
		}
	}
	cons := clusterClient(t, c.bootstrap()[2:3], kgo.ConsumeTopics("rf1", "rf3"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]map[string]int32{"rf1": {}, "rf3": {}} // key -> partition
	count := map[string]int{}
	for count["rf1"]+count["rf3"] < 2*n {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %v of %d per topic: %v", count, n, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			count[r.Topic]++
			if p, ok := seen[r.Topic][string(r.Key)]; ok && p != r.Partition {
				t.Fatalf("%s: key %s in partitions %d and %d", r.Topic, r.Key, p, r.Partition)
			}
			seen[r.Topic][string(r.Key)] = r.Partition
		})
	}
	if count["rf1"] != n || count["rf3"] != n {
		t.Fatalf("consumed %v, want %d per topic", count, n)
	}
}

func TestClusterMetadataAgreesAfterChanges(t *testing.T) {
	c := startCluster(t, 3, nil)
	adm := kadm.NewClient(clusterClient(t, c.bootstrap()[2:3]))
	ctx := ctxTimeout(t, 60*time.Second)

	// Every broker agrees with DescribeCluster and FindCoordinator too.
	agreeCluster := func(what string, brokers int) {
		t.Helper()
		c.waitAgree(what, func(md *kmsg.MetadataResponse) bool { return len(md.Brokers) == brokers })
		var ctl int32 = -2
		for _, b := range c.live() {
			rc := dialRaw(t, b.addr)
			dc := rc.roundTrip(kmsg.NewPtrDescribeClusterRequest(), 0).(*kmsg.DescribeClusterResponse)
			if len(dc.Brokers) != brokers || ctl != -2 && dc.ControllerID != ctl {
				t.Fatalf("%s: broker %d DescribeCluster: %d brokers, controller %d (another said %d)", what, b.cfg.ID, len(dc.Brokers), dc.ControllerID, ctl)
			}
			ctl = dc.ControllerID
		}
	}
	// Group coordinators: every broker names the same, the leader of the
	// group's partition of __consumer_offsets.
	coordinators := func() map[int32]bool {
		out := map[int32]bool{}
		for _, b := range c.live() {
			rc := dialRaw(t, b.addr)
			deadline := time.Now().Add(30 * time.Second)
			for {
				req := kmsg.NewPtrFindCoordinatorRequest()
				req.CoordinatorKeys = []string{"g1"}
				resp := rc.roundTrip(req, 4).(*kmsg.FindCoordinatorResponse)
				co := resp.Coordinators[0]
				if co.ErrorCode == 0 {
					out[co.NodeID] = true
					break
				}
				if co.ErrorCode != kerr.CoordinatorNotAvailable.Code || time.Now().After(deadline) {
					t.Fatalf("broker %d FindCoordinator: %v", b.cfg.ID, kerr.ErrorForCode(co.ErrorCode))
				}
				time.Sleep(50 * time.Millisecond) // __consumer_offsets being created
			}
		}
		return out
	}
	// After each change, every broker agrees on Metadata's brokers,
	// DescribeCluster and FindCoordinator.
	agreeAll := func(what string, brokers int) {
		t.Helper()
		agreeCluster(what, brokers)
		if got := coordinators(); len(got) != 1 {
			t.Fatalf("%s: brokers name different coordinators for one group: %v", what, got)
		}
	}
	agreeAll("start", 3)

	created, err := adm.CreateTopic(ctx, 3, 2, nil, "orders")
	if err != nil || created.Err != nil {
		t.Fatalf("create: %v %v", err, created.Err)
	}
	// CreateTopics answers once the controller applied it: the broker that
	// answered (clients send CreateTopics to the controller) already
	// serves the topic's metadata.
	ctl := c.broker(metadataOf(t, c.broker(2)).ControllerID)
	if md := metadataOf(t, ctl); !topicReady("orders", 3)(md) {
		t.Fatalf("CreateTopics answered before its broker's metadata had the topic: %s", describeMetadata(md))
	}
	c.waitAgree("created", topicReady("orders", 3))
	agreeAll("created", 3)
	if _, err := adm.UpdatePartitions(ctx, 5, "orders"); err != nil {
		t.Fatal(err)
	}
	c.waitAgree("grown", topicReady("orders", 5))
	agreeAll("grown", 3)

	dr, err := adm.DeleteTopics(ctx, "orders")
	if err != nil || dr["orders"].Err != nil {
		t.Fatalf("delete: %v %v", err, dr["orders"].Err)
	}
	c.waitAgree("deleted", func(md *kmsg.MetadataResponse) bool { return topicOf(md, "orders") == nil })
	agreeAll("deleted", 3)

	// A fourth broker joins: every broker lists it, and a topic created
	// now places replicas on it.
	c.start(3)
	agreeAll("joined", 4)
	c.createTopic(ctx, "later", 8, 2)
	tp := topicOf(metadataOf(t, c.broker(3)), "later")
	on3 := 0
	for _, p := range tp.Partitions {
		if slices.Contains(p.Replicas, 3) {
			on3++
		}
	}
	if on3 != 4 {
		t.Fatalf("the new broker holds %d of 16 replicas of a topic created after it joined, want 4", on3)
	}
}

func TestClusterRefusesStaleAndForeignControlRequests(t *testing.T) {
	c := startCluster(t, 2, nil)
	md := metadataOf(t, c.broker(0))
	ctl := md.ControllerID
	other := 1 - ctl
	epoch := c.broker(other).plane.state.ControllerEpoch()
	if epoch < 1 {
		t.Fatalf("broker %d accepted no controller request (epoch %d)", other, epoch)
	}
	rc := dialRaw(t, c.broker(other).addr)
	for _, tc := range []struct {
		what       string
		controller int32
		epoch      int32
	}{
		{"an older controller epoch", ctl, epoch - 1},
		{"a broker that is not the controller", other, epoch},
		{"a newer epoch from a broker that is not the controller", other, epoch + 1},
	} {
		um := kmsg.NewPtrUpdateMetadataRequest()
		um.ControllerID, um.ControllerEpoch, um.BrokerEpoch = tc.controller, tc.epoch, -1
		resp := rc.roundTrip(um, 8).(*kmsg.UpdateMetadataResponse)
		wantCode(t, "UpdateMetadata from "+tc.what, resp.ErrorCode, kerr.StaleControllerEpoch)
		li := kmsg.NewPtrLeaderAndISRRequest()
		li.ControllerID, li.ControllerEpoch, li.BrokerEpoch = tc.controller, tc.epoch, -1
		lr := rc.roundTrip(li, 7).(*kmsg.LeaderAndISRResponse)
		wantCode(t, "LeaderAndIsr from "+tc.what, lr.ErrorCode, kerr.StaleControllerEpoch)
	}
	// An older broker epoch is refused whoever sends it.
	li := kmsg.NewPtrLeaderAndISRRequest()
	li.ControllerID, li.ControllerEpoch, li.BrokerEpoch = ctl, epoch, c.broker(other).plane.zk.BrokerEpoch()-1
	lr := rc.roundTrip(li, 7).(*kmsg.LeaderAndISRResponse)
	wantCode(t, "LeaderAndIsr for an older broker epoch", lr.ErrorCode, kerr.StaleBrokerEpoch)
	// The cluster still works: nothing above changed its metadata.
	if got := metadataOf(t, c.broker(other)); len(got.Brokers) != 2 || got.ControllerID != ctl {
		t.Fatalf("after refused requests: %s", describeMetadata(got))
	}
}

func TestClusterGroupResumesAfterEveryBrokerRestarts(t *testing.T) {
	c := startCluster(t, 3, nil)
	ctx := ctxTimeout(t, 90*time.Second)
	c.createTopic(ctx, "events", 6, 1)
	prod := clusterClient(t, c.bootstrap())
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "events", Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(0, 300)
	consume := func(want int) map[string]bool {
		t.Helper()
		cl := clusterClient(t, c.bootstrap(), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("events"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
		got := map[string]bool{}
		for len(got) < want {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("consumed %d of %d", len(got), want)
			}
			fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s-%d: %v", topic, p, err) })
			fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = true })
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("commit: %v", err)
		}
		cl.Close()
		return got
	}
	if got := consume(300); len(got) != 300 {
		t.Fatalf("first member read %d records, want 300", len(got))
	}
	for _, id := range []int32{0, 1, 2} {
		c.stopBroker(id)
		c.start(id)
	}
	c.waitAgree("restarted", func(md *kmsg.MetadataResponse) bool { return len(md.Brokers) == 3 && topicReady("events", 6)(md) })
	produce(300, 400)
	got := consume(100)
	for v := range got {
		if n, _ := strconv.Atoi(v); n < 300 {
			t.Fatalf("after the restarts the group read %s again: it did not resume at its committed offsets", v)
		}
	}
	if len(got) != 100 {
		t.Fatalf("after the restarts the group read %d new records, want 100", len(got))
	}
}

func TestClusterDeleteWaitsForAReplicaDownAndRecreateGetsNewID(t *testing.T) {
	c := startCluster(t, 3, nil)
	ctx := ctxTimeout(t, 60*time.Second)
	adm := kadm.NewClient(clusterClient(t, c.bootstrap()[:1]))
	// Every partition on every broker.
	c.createTopic(ctx, "doomed", 3, 3)
	oldID := topicOf(metadataOf(t, c.broker(0)), "doomed").TopicID
	prod := clusterClient(t, c.bootstrap())
	for p := range int32(3) {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "doomed", Partition: p, Value: []byte("old")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	dir2 := c.dirs[2]
	c.stopBroker(2)
	c.waitAgree("broker 2 gone", func(md *kmsg.MetadataResponse) bool { return len(md.Brokers) == 2 })
	req := kmsg.NewPtrDeleteTopicsRequest()
	name := "doomed"
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.Topic = &name
	req.Topics, req.TimeoutMillis = []kmsg.DeleteTopicsRequestTopic{rt}, 30000
	if _, err := req.RequestWith(ctx, clusterClient(t, c.bootstrap()[:1])); err != nil {
		t.Fatal(err)
	}
	c.waitAgree("deleted from metadata", func(md *kmsg.MetadataResponse) bool { return topicOf(md, "doomed") == nil })
	if !logExists(dir2, "doomed-0") {
		t.Fatal("the stopped broker's log is gone before it returned")
	}
	// Re-created at once under the same name (a new id): the returning
	// broker deletes the old topic's logs and serves the new topic.
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := adm.CreateTopic(ctx, 3, 2, nil, "doomed")
		if err == nil && r.Err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("re-create: %v %v", err, r.Err)
		}
		time.Sleep(100 * time.Millisecond) // the deletion finishes when broker 2 returns
		if c.broker(2) == nil {
			c.start(2)
		}
	}
	if c.broker(2) == nil {
		c.start(2)
	}
	c.waitAgree("re-created", func(md *kmsg.MetadataResponse) bool {
		tp := topicOf(md, "doomed")
		return len(md.Brokers) == 3 && topicReady("doomed", 3)(md) && tp.TopicID != oldID
	})
	cons := clusterClient(t, c.bootstrap(), kgo.ConsumeTopics("doomed"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond))
	prod = clusterClient(t, c.bootstrap()) // one that never knew the old topic id
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "doomed", Partition: 0, Value: []byte("new")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("the re-created topic's record was not read")
		}
		var vals []string
		fs.EachRecord(func(r *kgo.Record) { vals = append(vals, string(r.Value)) })
		if slices.Contains(vals, "old") {
			t.Fatalf("read a record of the deleted topic from the re-created one: %v", vals)
		}
		if slices.Contains(vals, "new") {
			break
		}
	}
}

// logExists reports whether a data directory holds a partition's log.
func logExists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}
