package broker

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A topic config altered through one broker reaches the leaders on the
// others (through /config/changes) and every broker describes it.
func TestClusterTopicConfigReachesEveryBroker(t *testing.T) {
	c := startCluster(t, 3, nil)
	ctx := ctxTimeout(t, 60*time.Second)
	adm := kadm.NewClient(clusterClient(t, c.bootstrap()[:1]))
	c.createTopic(ctx, "limits", 3, 1)
	if leaders := leadersPerBroker(topicOf(metadataOf(t, c.broker(0)), "limits")); len(leaders) != 3 {
		t.Fatalf("leaders %v: want one partition on each broker", leaders)
	}
	small := "1000"
	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: &small}}, "limits")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("alter: %v %v", err, rs)
	}
	for _, b := range c.live() {
		deadline := time.Now().Add(30 * time.Second)
		for {
			// Described by every broker, whether it leads the topic or not
			// (kadm sends topic DescribeConfigs to any broker).
			rc := dialRaw(t, b.addr)
			req := kmsg.NewPtrDescribeConfigsRequest()
			res := kmsg.NewDescribeConfigsRequestResource()
			res.ResourceType, res.ResourceName, res.ConfigNames = kmsg.ConfigResourceTypeTopic, "limits", []string{"max.message.bytes"}
			req.Resources = append(req.Resources, res)
			resp := rc.roundTrip(req, 4).(*kmsg.DescribeConfigsResponse)
			rc.nc.Close()
			r := resp.Resources[0]
			if r.ErrorCode == 0 && len(r.Configs) == 1 && r.Configs[0].Value != nil && *r.Configs[0].Value == small {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("broker %d describes limits: error %d, configs %+v", b.cfg.ID, r.ErrorCode, r.Configs)
			}
			time.Sleep(50 * time.Millisecond) // the change notification is on its way
		}
	}
	// Every leader applies it: a record over the limit is refused on each
	// partition, whichever broker leads it.
	prod := clusterClient(t, c.bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchMaxBytes(100000), kgo.ProducerBatchCompression(kgo.NoCompression()))
	big := strings.Repeat("x", 2000)
	refused := func(when string) {
		t.Helper()
		for p := range int32(3) {
			err := prod.ProduceSync(ctx, &kgo.Record{Topic: "limits", Partition: p, Value: []byte(big)}).FirstErr()
			if !errors.Is(err, kerr.MessageTooLarge) {
				t.Errorf("%s: partition %d: a 2000-byte record with max.message.bytes=1000: %v, want MESSAGE_TOO_LARGE", when, p, err)
			}
		}
	}
	refused("altered")
	// A restarted broker opens its logs before it knows their topic; the
	// override still holds once it leads them again.
	c.stopBroker(1)
	c.start(1)
	c.waitAgree("restarted", func(md *kmsg.MetadataResponse) bool { return len(md.Brokers) == 3 && topicReady("limits", 3)(md) })
	refused("after a restart")
}

// Producer ids come from blocks in ZooKeeper: no two brokers hand out the
// same one.
func TestClusterProducerIDsAreUnique(t *testing.T) {
	c := startCluster(t, 3, nil)
	seen := map[int64]int32{}
	for round := range 3 {
		for _, b := range c.live() {
			rc := dialRaw(t, b.addr)
			resp := rc.roundTrip(kmsg.NewPtrInitProducerIDRequest(), 4).(*kmsg.InitProducerIDResponse)
			rc.nc.Close()
			if resp.ErrorCode != 0 {
				t.Fatalf("round %d broker %d: %v", round, b.cfg.ID, kerr.ErrorForCode(resp.ErrorCode))
			}
			if other, dup := seen[resp.ProducerID]; dup {
				t.Fatalf("producer id %d handed out by brokers %d and %d", resp.ProducerID, other, b.cfg.ID)
			}
			seen[resp.ProducerID] = b.cfg.ID
		}
	}
}

// A dead broker's partitions are offline (leader -1, the broker among the
// offline replicas) until it returns, then served again with their data.
func TestClusterPartitionsOfADeadBrokerAreOfflineUntilItReturns(t *testing.T) {
	c := startCluster(t, 3, nil)
	ctx := ctxTimeout(t, 60*time.Second)
	c.createTopic(ctx, "solo", 3, 1)
	onTwo := c.ledBy(2, "solo")
	prod := clusterClient(t, c.bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "solo", Partition: onTwo, Value: []byte("kept")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	c.stopBroker(2)
	c.waitAgree("offline", func(md *kmsg.MetadataResponse) bool {
		tp := topicOf(md, "solo")
		if tp == nil || len(md.Brokers) != 2 {
			return false
		}
		for _, p := range tp.Partitions {
			if p.Partition == onTwo {
				return p.Leader == -1 && p.ErrorCode == kerr.LeaderNotAvailable.Code && slices.Equal(p.OfflineReplicas, []int32{2})
			}
		}
		return false
	})
	// The other partitions are served meanwhile.
	for _, p := range topicOf(metadataOf(t, c.broker(0)), "solo").Partitions {
		if p.Partition != onTwo {
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "solo", Partition: p.Partition, Value: []byte("x")}).FirstErr(); err != nil {
				t.Fatalf("partition %d on a live broker: %v", p.Partition, err)
			}
		}
	}
	c.start(2)
	c.waitAgree("back", topicReady("solo", 3))
	cons := clusterClient(t, c.bootstrap(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"solo": {onTwo: kgo.NewOffset().AtStart()}}))
	fs := cons.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		t.Fatal(err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "kept" {
		t.Fatalf("after its broker returned, partition %d holds %d records, want the one written before", onTwo, len(recs))
	}
}

// kcat (librdkafka) sees the cluster and produces to and consumes from
// partitions led by every broker, seeded with one.
func TestClusterKcat(t *testing.T) {
	requireKcat(t)
	c := startCluster(t, 3, nil)
	ctx := ctxTimeout(t, 60*time.Second)
	c.createTopic(ctx, "kc", 6, 2)
	seed := c.broker(1).addr
	out := kcat(t, "", "-b", seed, "-L")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^ 3 brokers:$`),
		regexp.MustCompile(`(?m)^  topic "kc" with 6 partitions:$`),
	} {
		if !want.MatchString(out) {
			t.Errorf("kcat -L output lacks %q:\n%s", want, out)
		}
	}
	var lines []string
	for i := range 60 {
		lines = append(lines, fmt.Sprintf("key%d:value %d", i, i))
	}
	kcat(t, strings.Join(lines, "\n")+"\n", "-b", seed, "-P", "-t", "kc", "-K:")
	out = kcat(t, "", "-b", c.broker(2).addr, "-C", "-t", "kc", "-o", "beginning", "-e", "-f", `%k:%s\n`)
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	slices.Sort(got)
	slices.Sort(lines)
	if !slices.Equal(got, lines) {
		t.Fatalf("kcat consumed %d records, want the %d produced:\n%s", len(got), len(lines), out)
	}
}

// CreateTopics in a cluster: an explicit assignment is kept exactly, a
// replication factor above the live brokers is refused, and an
// auto-created topic takes default.replication.factor.
func TestClusterCreateTopicsAssignmentsAndFactors(t *testing.T) {
	c := startCluster(t, 3, func(cfg *config.Config) { cfg.DefaultReplicationFactor = 2; cfg.NumPartitions = 4 })
	ctx := ctxTimeout(t, 60*time.Second)
	cl := clusterClient(t, c.bootstrap()[:1])
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	manual := kmsg.NewCreateTopicsRequestTopic()
	manual.Topic, manual.NumPartitions, manual.ReplicationFactor = "manual", -1, -1
	want := [][]int32{{2, 0}, {0, 1}, {1, 2}, {2, 1}}
	for i, r := range want {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(i), r
		manual.ReplicaAssignment = append(manual.ReplicaAssignment, a)
	}
	tooMany := kmsg.NewCreateTopicsRequestTopic()
	tooMany.Topic, tooMany.NumPartitions, tooMany.ReplicationFactor = "too-many", 1, 4
	req.Topics = []kmsg.CreateTopicsRequestTopic{manual, tooMany}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "manual assignment", resp.Topics[0].ErrorCode, nil)
	wantCode(t, "replication factor 4 on 3 brokers", resp.Topics[1].ErrorCode, kerr.InvalidReplicationFactor)
	c.waitAgree("manual created", func(md *kmsg.MetadataResponse) bool {
		tp := topicOf(md, "manual")
		if !topicReady("manual", 4)(md) {
			return false
		}
		for _, p := range tp.Partitions {
			if !slices.Equal(p.Replicas, want[p.Partition]) || p.Leader != want[p.Partition][0] {
				return false
			}
		}
		return true
	})
	// Auto-creation by a producer's metadata request.
	prod := clusterClient(t, c.bootstrap()[2:], kgo.AllowAutoTopicCreation())
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "auto", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	c.waitAgree("auto created", func(md *kmsg.MetadataResponse) bool {
		tp := topicOf(md, "auto")
		return topicReady("auto", 4)(md) && len(tp.Partitions[0].Replicas) == 2
	})
}

// A broker whose ZooKeeper session expires (its link cut past the session
// timeout, the process running on) leaves the cluster, then re-registers
// at a higher broker epoch, refuses requests for its old epoch, and leads
// its partitions again with their data.
func TestClusterBrokerSessionExpiry(t *testing.T) {
	c := startCluster(t, 2, func(cfg *config.Config) { cfg.Cluster.SessionTimeout = 2 * time.Second })
	proxy := c.startBehindProxy(2)
	c.waitAgree("three brokers", func(md *kmsg.MetadataResponse) bool { return len(md.Brokers) == 3 })
	ctx := ctxTimeout(t, 90*time.Second)
	c.createTopic(ctx, "ex", 3, 1)
	onTwo := c.ledBy(2, "ex")
	if onTwo < 0 {
		t.Fatal("broker 2 leads no partition of a topic spread over three brokers")
	}
	prod := clusterClient(t, c.bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(v string) {
		t.Helper()
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "ex", Partition: onTwo, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce("before")
	oldEpoch := c.broker(2).plane.zk.BrokerEpoch()

	proxy.SetCut(true)
	others := []*testBroker{c.broker(0), c.broker(1)}
	c.waitAgreeOn(others, "broker 2's registration expired", func(md *kmsg.MetadataResponse) bool {
		tp := topicOf(md, "ex")
		return len(md.Brokers) == 2 && tp != nil && tp.Partitions[onTwo].Leader == -1
	})
	proxy.SetCut(false)
	c.waitAgree("broker 2 back", func(md *kmsg.MetadataResponse) bool { return len(md.Brokers) == 3 && topicReady("ex", 3)(md) })
	newEpoch := c.broker(2).plane.zk.BrokerEpoch()
	if newEpoch <= oldEpoch {
		t.Fatalf("broker epoch %d after re-registering, was %d", newEpoch, oldEpoch)
	}
	// The controller's requests for the old registration are refused.
	md := metadataOf(t, c.broker(2))
	ctl := c.broker(md.ControllerID)
	rc := dialRaw(t, c.broker(2).addr)
	li := kmsg.NewPtrLeaderAndISRRequest()
	li.ControllerID, li.ControllerEpoch, li.BrokerEpoch = md.ControllerID, ctl.plane.zk.Loop().Epoch(), oldEpoch
	wantCode(t, "LeaderAndIsr for the expired registration", rc.roundTrip(li, 7).(*kmsg.LeaderAndISRResponse).ErrorCode, kerr.StaleBrokerEpoch)

	produce("after")
	cons := clusterClient(t, c.bootstrap(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"ex": {onTwo: kgo.NewOffset().AtStart()}}))
	var got []string
	for len(got) < 2 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, []string{"before", "after"}) {
		t.Fatalf("partition %d holds %q after the expiry, want [before after]", onTwo, got)
	}
}
