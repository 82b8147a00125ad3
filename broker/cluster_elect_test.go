package broker

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createAssigned creates a topic of explicit replicas (partition p's at
// index p) with configs, and waits for every broker to serve it.
func (c *testCluster) createAssigned(ctx context.Context, name string, configs map[string]string, replicas ...[]int32) {
	c.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
	for p, rs := range replicas {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), rs
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, &v
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = []kmsg.CreateTopicsRequestTopic{rt}
	resp, err := req.RequestWith(ctx, clusterClient(c.t, c.bootstrap()[:1]))
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		c.t.Fatalf("create %s: %v %+v", name, err, resp)
	}
	c.waitAgree(name+" created", topicReady(name, len(replicas)))
}

// partitionOf is a partition of a Metadata response, nil if absent.
func partitionOf(md *kmsg.MetadataResponse, topic string, partition int32) *kmsg.MetadataResponseTopicPartition {
	t := topicOf(md, topic)
	if t == nil {
		return nil
	}
	for i := range t.Partitions {
		if t.Partitions[i].Partition == partition {
			return &t.Partitions[i]
		}
	}
	return nil
}

// leadsAll: broker leader leads every partition of tps (topic, partition
// pairs) and, with inISR, is in their ISRs.
func leadsAll(leader int32, topic string, partitions ...int32) func(*kmsg.MetadataResponse) bool {
	return func(md *kmsg.MetadataResponse) bool {
		for _, p := range partitions {
			if mp := partitionOf(md, topic, p); mp == nil || mp.Leader != leader {
				return false
			}
		}
		return true
	}
}

// preferredStoppedAndBack stops broker 1, the preferred leader of pref-0
// and pref-1 (pref-2 prefers 0), and starts it again, waiting until it is
// back in both ISRs, led meanwhile by others.
func preferredStoppedAndBack(t *testing.T, c *testCluster, ctx context.Context) {
	t.Helper()
	c.createAssigned(ctx, "pref", nil, []int32{1, 0, 2}, []int32{1, 2, 0}, []int32{0, 1, 2})
	prod := clusterClient(t, c.bootstrap(), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "pref", Partition: 0, Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	c.stopBroker(1)
	c.waitAgree("pref-0 and pref-1 led by others", func(md *kmsg.MetadataResponse) bool {
		for _, p := range []int32{0, 1} {
			if mp := partitionOf(md, "pref", p); mp == nil || mp.Leader < 0 || mp.Leader == 1 {
				return false
			}
		}
		return true
	})
	c.start(1)
	c.waitAgree("broker 1 back in the ISRs", func(md *kmsg.MetadataResponse) bool {
		for _, p := range []int32{0, 1} {
			if mp := partitionOf(md, "pref", p); mp == nil || !slices.Contains(mp.ISR, 1) {
				return false
			}
		}
		return len(md.Brokers) == 3
	})
}

// After the preferred leader of two partitions is stopped and started
// again (automatic rebalance off), others still lead them; kadm's
// ElectLeaders PREFERRED for all partitions moves both back, answered
// once the controller's metadata shows it, and leaves out the partition
// that needed nothing; asked again, none is needed. A broker that is not
// the controller answers NOT_CONTROLLER.
func TestClusterPreferredLeaderElection(t *testing.T) {
	off := false
	c := startCluster(t, 3, func(cfg *config.Config) { cfg.Cluster.Election.AutoLeaderRebalance = &off })
	ctx := ctxTimeout(t, 90*time.Second)
	preferredStoppedAndBack(t, c, ctx)
	md := metadataOf(t, c.broker(0))
	for _, p := range []int32{0, 1} {
		if l := partitionOf(md, "pref", p).Leader; l == 1 {
			t.Fatalf("pref-%d led by its preferred replica without an election", p)
		}
	}

	ctl := md.ControllerID
	other := (ctl + 1) % 3
	req := kmsg.NewPtrElectLeadersRequest()
	req.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "pref", Partitions: []int32{0}}}
	resp := dialRaw(t, c.broker(other).addr).roundTrip(req, 2).(*kmsg.ElectLeadersResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.NotController.Code {
		t.Fatalf("broker %d, not the controller: %+v", other, resp)
	}

	adm := kadm.NewClient(clusterClient(t, c.bootstrap()))
	res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res["pref"]) != 2 || res["pref"][0].Err != nil || res["pref"][1].Err != nil {
		t.Fatalf("ElectLeaders PREFERRED of all partitions: %+v", res)
	}
	if !leadsAll(1, "pref", 0, 1)(metadataOf(t, c.broker(ctl))) {
		t.Fatalf("answered before the controller's metadata shows the leaders: %s", describeMetadata(metadataOf(t, c.broker(ctl))))
	}
	c.waitAgree("broker 1 leads pref-0 and pref-1 again", leadsAll(1, "pref", 0, 1))

	var set kadm.TopicsSet
	set.Add("pref", 0, 1, 2)
	res, err = adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		if !errors.Is(res["pref"][p].Err, kerr.ElectionNotNeeded) {
			t.Errorf("pref-%d again: %+v", p, res["pref"][p])
		}
	}
}

// With auto.leader.rebalance.enable (the default) and a short check
// interval, the controller moves leadership back to the restarted
// preferred replica by itself once it is in the ISR.
func TestClusterAutoLeaderRebalance(t *testing.T) {
	c := startCluster(t, 3, func(cfg *config.Config) { cfg.Cluster.Election.ImbalanceCheckInterval = 200 * time.Millisecond })
	ctx := ctxTimeout(t, 90*time.Second)
	preferredStoppedAndBack(t, c, ctx)
	c.waitAgree("broker 1 leads pref-0 and pref-1 again", leadsAll(1, "pref", 0, 1))
}

// All ISR members of a partition down and an out-of-sync replica live:
// with unclean.leader.election.enable off the partition stays offline
// (leader -1); setting it on the topic lets the lagging replica lead at
// once, and ElectLeaders UNCLEAN does the same for a topic without it
// (Kafka's KIP-460: the request overrides the setting). Either way the
// records only the old ISR had are gone, and the old leader, back,
// truncates to the new leader's log.
func TestClusterUncleanLeaderElection(t *testing.T) {
	off := false
	c := startCluster(t, 3, func(cfg *config.Config) {
		cfg.Cluster.ReplicaLagTimeMax = time.Second
		cfg.Cluster.Fetch.Backoff = 50 * time.Millisecond // below the lag time: a follower's failed first fetch does not cost its place
		cfg.Cluster.Election.AutoLeaderRebalance = &off
	})
	ctx := ctxTimeout(t, 120*time.Second)
	topics := []string{"kept", "lossy"}
	for _, name := range topics {
		c.createAssigned(ctx, name, nil, []int32{1, 2})
	}
	c.waitAgree("both replicas in the ISRs", func(md *kmsg.MetadataResponse) bool {
		return slices.Equal(isrOf(md, "kept", 0), []int32{1, 2}) && slices.Equal(isrOf(md, "lossy", 0), []int32{1, 2})
	})
	prod := clusterClient(t, c.bootstrap(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite())
	produce := func(v string) {
		t.Helper()
		for _, name := range topics {
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: name, Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce("replicated")
	// sameLogs waits until the follower's log of both partitions is the
	// leader's.
	sameLogs := func(leader, follower int32, what string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for _, name := range topics {
			for want := logBytes(t, c.broker(leader), name, 0); !bytes.Equal(logBytes(t, c.broker(follower), name, 0), want); {
				if time.Now().After(deadline) {
					t.Fatalf("%s-0: %s", name, what)
				}
				time.Sleep(50 * time.Millisecond) // the follower fetches (and truncates) on its own schedule
			}
		}
	}
	sameLogs(1, 2, "broker 2 has not copied the replicated record")
	c.stopBroker(2)
	c.waitAgree("broker 2 out of the ISRs", func(md *kmsg.MetadataResponse) bool {
		return slices.Equal(isrOf(md, "kept", 0), []int32{1}) && slices.Equal(isrOf(md, "lossy", 0), []int32{1})
	})
	produce("acknowledged by broker 1 alone")
	c.stopBroker(1)
	c.start(2)
	offline := func(topic string) func(*kmsg.MetadataResponse) bool {
		return func(md *kmsg.MetadataResponse) bool {
			mp := partitionOf(md, topic, 0)
			return len(md.Brokers) == 2 && mp != nil && mp.Leader == -1 && slices.Equal(mp.ISR, []int32{1})
		}
	}
	c.waitAgree("both offline with broker 2 live", func(md *kmsg.MetadataResponse) bool { return offline("kept")(md) && offline("lossy")(md) })
	adm := kadm.NewClient(clusterClient(t, c.bootstrap()))
	// A preferred election is decided after the controller has handled
	// broker 2's return: still offline then.
	stillOffline := func(topic string) {
		t.Helper()
		var set kadm.TopicsSet
		set.Add(topic, 0)
		res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
		if err != nil || !errors.Is(res[topic][0].Err, kerr.PreferredLeaderNotAvailable) {
			t.Fatalf("ElectLeaders PREFERRED %s-0: %+v %v", topic, res, err)
		}
		if md := metadataOf(t, c.broker(0)); !offline(topic)(md) {
			t.Fatalf("%s-0 led with unclean election off: %s", topic, describeMetadata(md))
		}
	}
	stillOffline("kept")
	stillOffline("lossy")

	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "unclean.leader.election.enable", Value: kadm.StringPtr("true")}}, "lossy"); err != nil {
		t.Fatal(err)
	}
	c.waitAgree("lossy-0 led by the lagging replica", leadsAll(2, "lossy", 0))
	stillOffline("kept")
	var set kadm.TopicsSet
	set.Add("kept", 0)
	res, err := adm.ElectLeaders(ctx, kadm.ElectLiveReplica, set)
	if err != nil || res["kept"][0].Err != nil {
		t.Fatalf("ElectLeaders UNCLEAN kept-0: %+v %v", res, err)
	}
	c.waitAgree("kept-0 led by the lagging replica", leadsAll(2, "kept", 0))

	for _, name := range topics {
		cons := clusterClient(t, c.bootstrap(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{name: {0: kgo.NewOffset().AtStart()}}))
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "replicated" {
			t.Fatalf("%s-0 after the unclean election: %d records, want the replicated one alone (the other is lost)", name, len(recs))
		}
	}
	c.start(1)
	sameLogs(2, 1, "the old leader's log is not the new leader's")
	c.waitAgree("broker 1 back in the ISRs", func(md *kmsg.MetadataResponse) bool {
		return slices.Equal(isrOf(md, "kept", 0), []int32{1, 2}) && slices.Equal(isrOf(md, "lossy", 0), []int32{1, 2})
	})
}
