package main

// Cluster mode as a crash or a frozen machine tests it: brokers of the
// built binary on a real ZooKeeper, SIGKILLed, SIGSTOPped and restarted
// (cluster_harness_test.go).

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The controller SIGKILLed: a survivor becomes controller once the dead
// one's session expires, and topics can be created; the old controller
// restarted with its id and data rejoins as a plain broker (no election:
// /controller and /controller_epoch are as the new controller left them),
// and the cluster still creates topics.
func TestClusterControllerKilled(t *testing.T) {
	c := startCluster(t, 3)
	old := c.waitController(-1)

	killed := time.Now()
	c.kill(old)
	c.waitAgree(fmt.Sprintf("broker %d is gone", old), func(m *kmsg.MetadataResponse) error {
		return c.wantBrokers(m, c.live()...)
	})
	ctrl := c.waitController(old)
	t.Logf("broker %d took over from broker %d %v after the SIGKILL (session timeout %v)", ctrl, old, time.Since(killed).Round(time.Millisecond), testSessionTimeout)
	if got := controllerInZK(t, c); got != ctrl {
		t.Fatalf("/controller names broker %d, Metadata %d", got, ctrl)
	}
	createAndProduce(t, c, "after-failover", 4, 2)

	_, epochStat := c.znode("/controller_epoch")
	c.restart(old)
	c.waitAgree(fmt.Sprintf("broker %d is back and broker %d is still controller", old, ctrl), func(m *kmsg.MetadataResponse) error {
		if err := c.wantBrokers(m, c.ids()...); err != nil {
			return err
		}
		if m.ControllerID != ctrl {
			return fmt.Errorf("controller %d, want %d", m.ControllerID, ctrl)
		}
		return nil
	})
	createAndProduce(t, c, "after-restart", 3, 3)
	if got := controllerInZK(t, c); got != ctrl {
		t.Fatalf("after broker %d's restart /controller names broker %d, want %d", old, got, ctrl)
	}
	if _, st := c.znode("/controller_epoch"); st == nil || st.Version != epochStat.Version {
		t.Fatalf("/controller_epoch changed when broker %d restarted: version %v, was %d", old, st, epochStat.Version)
	}
}

// A broker SIGSTOPped past its session timeout loses its registration: the
// others drop it from Metadata and its partitions go offline. SIGCONTed, it
// registers again with a new broker epoch (a higher czxid of
// /brokers/ids/N), every broker lists it, and it leads and serves its
// partitions again.
func TestClusterBrokerSessionExpires(t *testing.T) {
	c := startCluster(t, 3)
	const topic = "frozen"
	ms := createTopic(t, c, topic, 6, 1)
	ctrl := c.waitController(-1)
	var victim int32 = -1
	for _, id := range c.ids() {
		if id != ctrl {
			victim = id
			break
		}
	}
	owned := partitionsLedBy(ms[ctrl], topic, victim)
	if len(owned) == 0 {
		t.Fatalf("broker %d leads no partition of %s: the check below would prove nothing", victim, topic)
	}
	reg := fmt.Sprintf("/brokers/ids/%d", victim)
	_, before := c.znode(reg)
	if before == nil {
		t.Fatalf("%s is missing while broker %d runs", reg, victim)
	}

	c.pause(victim)
	waitZnode(t, c, reg, "is deleted", func(st *zk.Stat) bool { return st == nil })
	c.waitAgree(fmt.Sprintf("broker %d is gone and its partitions offline", victim), func(m *kmsg.MetadataResponse) error {
		if err := c.wantBrokers(m, c.live()...); err != nil {
			return err
		}
		if led := partitionsLedBy(m, topic, victim); len(led) > 0 {
			return fmt.Errorf("%s partitions %v still led by the stopped broker %d", topic, led, victim)
		}
		return nil
	})

	c.resume(victim)
	after := waitZnode(t, c, reg, "is created again", func(st *zk.Stat) bool { return st != nil })
	if after.Czxid <= before.Czxid {
		t.Fatalf("%s re-created with czxid %d, not above the first registration's %d", reg, after.Czxid, before.Czxid)
	}
	c.waitAgree(fmt.Sprintf("broker %d is back and leads its partitions", victim), func(m *kmsg.MetadataResponse) error {
		if err := c.wantBrokers(m, c.ids()...); err != nil {
			return err
		}
		if got := partitionsLedBy(m, topic, victim); !slices.Equal(got, owned) {
			return fmt.Errorf("broker %d leads %s partitions %v, want %v", victim, topic, got, owned)
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	cl := c.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, p := range owned {
		r := &kgo.Record{Topic: topic, Partition: p, Value: []byte("after the freeze")}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce to %s-%d on broker %d after its return: %v", topic, p, victim, err)
		}
		got := fetchOne(t, c, topic, p, r.Offset)
		if string(got) != "after the freeze" {
			t.Fatalf("%s-%d at %d: %q", topic, p, r.Offset, got)
		}
	}
}

// createTopic creates topic through the live brokers and waits until every
// live broker lists it with a live leader per partition; it returns their
// Metadata, by broker id.
func createTopic(t *testing.T, c *testCluster, topic string, partitions int32, rf int16) map[int32]*kmsg.MetadataResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	resp, err := kadm.NewClient(c.client()).CreateTopic(ctx, partitions, rf, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	return c.waitAgree("topic "+topic+" exists", func(m *kmsg.MetadataResponse) error {
		return c.wantTopic(m, topic, int(partitions), int(rf))
	})
}

// createAndProduce creates topic (createTopic) and produces one record to
// each partition.
func createAndProduce(t *testing.T, c *testCluster, topic string, partitions int32, rf int16) {
	t.Helper()
	createTopic(t, c, topic, partitions, rf)
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	cl := c.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range partitions {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("produce to %s-%d: %v", topic, p, err)
		}
	}
}

// controllerInZK returns the broker id /controller names.
func controllerInZK(t *testing.T, c *testCluster) int32 {
	t.Helper()
	data, st := c.znode("/controller")
	if st == nil {
		t.Fatal("/controller is missing")
	}
	var v struct {
		BrokerID int32 `json:"brokerid"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("/controller: %v: %s", err, data)
	}
	return v.BrokerID
}

// partitionsLedBy returns the partitions of topic that m says id leads,
// sorted.
func partitionsLedBy(m *kmsg.MetadataResponse, topic string, id int32) []int32 {
	var out []int32
	for _, tp := range m.Topics {
		if tp.Topic != nil && *tp.Topic == topic {
			for _, p := range tp.Partitions {
				if p.Leader == id {
					out = append(out, p.Partition)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// waitZnode polls path's stat (nil when missing) until ok holds, and
// returns it.
func waitZnode(t *testing.T, c *testCluster, path, what string, ok func(*zk.Stat) bool) *zk.Stat {
	t.Helper()
	var st *zk.Stat
	poll(t, path+" "+what, func() error {
		if _, st = c.znode(path); !ok(st) {
			return fmt.Errorf("stat %+v", st)
		}
		return nil
	})
	return st
}

// fetchOne reads the record of topic/partition at offset.
func fetchOne(t *testing.T, c *testCluster, topic string, partition int32, offset int64) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	cl := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {partition: kgo.NewOffset().At(offset)},
	}))
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("fetch %s-%d at %d: %v", topic, partition, offset, err)
		}
		var got []byte
		fs.EachRecord(func(r *kgo.Record) {
			if got == nil && r.Offset == offset {
				got = r.Value
			}
		})
		if got != nil {
			return got
		}
	}
}
