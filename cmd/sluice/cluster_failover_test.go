package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The leader of an RF 3 partition SIGKILLed while an idempotent acks=all
// producer runs: a follower from the ISR is elected and no acknowledged
// record is lost; the old leader, restarted, follows.
func TestClusterLeaderKilledLosesNothingAcknowledged(t *testing.T) {
	leaderKilledLosesNothing(t, startCluster(t, 3), "durable", 1000)
}

// leaderKilledLosesNothing creates topic (1 partition, RF 3,
// min.insync.replicas 2) on c, produces n records with acks=all, SIGKILLing
// the leader halfway, and checks that a follower from the ISR took over,
// that at least 90% were acknowledged, and that, with the old leader
// restarted and back in the ISR, every acknowledged record is read.
func leaderKilledLosesNothing(t *testing.T, c *testCluster, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*testWait)
	defer cancel()
	two := "2"
	if r, err := kadm.NewClient(c.client()).CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &two}, topic); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	inSync := func(want int) func(m *kmsg.MetadataResponse) error {
		return func(m *kmsg.MetadataResponse) error {
			if err := c.wantTopic(m, topic, 1, 3); err != nil {
				return err
			}
			for _, tp := range m.Topics {
				if *tp.Topic == topic && len(tp.Partitions[0].ISR) < want {
					return fmt.Errorf("ISR %v", tp.Partitions[0].ISR)
				}
			}
			return nil
		}
	}
	mds := c.waitAgree("every replica in sync", inSync(3))
	var leader int32 = -1
	for _, md := range mds {
		for _, tp := range md.Topics {
			if *tp.Topic == topic {
				leader = tp.Partitions[0].Leader
			}
		}
	}
	prod := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(100))
	acked := map[string]bool{}
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			v := strconv.Itoa(i)
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err == nil {
				acked[v] = true
			}
		}
	}
	produce(0, n/2)
	c.kill(leader)
	c.waitAgree("a new leader from the ISR", func(m *kmsg.MetadataResponse) error {
		if err := c.wantBrokers(m, c.live()...); err != nil {
			return err
		}
		for _, tp := range m.Topics {
			if *tp.Topic == topic && (tp.Partitions[0].Leader == leader || tp.Partitions[0].Leader < 0) {
				return fmt.Errorf("leader %d", tp.Partitions[0].Leader)
			}
		}
		return nil
	})
	produce(n/2, n)
	if len(acked) < n*9/10 {
		t.Fatalf("only %d of %d records acknowledged across the failover", len(acked), n)
	}
	c.restart(leader)
	c.waitAgree("the old leader back in the ISR", inSync(3))
	cons := c.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for len(seen) < len(acked) {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	var lost []string
	for v := range acked {
		if !seen[v] {
			lost = append(lost, v)
		}
	}
	slices.Sort(lost)
	if len(lost) > 0 {
		t.Fatalf("%d acknowledged records lost after the leader's death: %v", len(lost), lost[:min(len(lost), 20)])
	}
}

// Both followers of an RF 3 partition (min.insync.replicas 2) down: acks=all
// produces are refused NOT_ENOUGH_REPLICAS; acks=1 ones are acknowledged
// but stay invisible to consumers (the high watermark holds while the ISR
// is below the minimum), franz-go's ListOffsets and kcat's (librdkafka's)
// reading to the end alike, until a follower is back in the ISR.
func TestClusterBothFollowersDown(t *testing.T) {
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*testWait)
	defer cancel()
	two := "2"
	if r, err := kadm.NewClient(c.client()).CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &two}, "guarded"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	var leader int32 = -1
	c.waitAgree("every replica in sync", func(m *kmsg.MetadataResponse) error {
		if err := c.wantTopic(m, "guarded", 1, 3); err != nil {
			return err
		}
		for _, tp := range m.Topics {
			if *tp.Topic == "guarded" {
				if len(tp.Partitions[0].ISR) < 3 {
					return fmt.Errorf("ISR %v", tp.Partitions[0].ISR)
				}
				leader = tp.Partitions[0].Leader
			}
		}
		return nil
	})
	var followers []int32
	for _, id := range c.ids() {
		if id != leader {
			followers = append(followers, id)
		}
	}
	for _, id := range followers {
		c.kill(id)
	}
	c.waitAgree("the leader alone in the ISR", func(m *kmsg.MetadataResponse) error {
		for _, tp := range m.Topics {
			if *tp.Topic == "guarded" && !slices.Equal(tp.Partitions[0].ISR, []int32{leader}) {
				return fmt.Errorf("ISR %v", tp.Partitions[0].ISR)
			}
		}
		return nil
	})
	all := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1), kgo.ProduceRequestTimeout(2e9))
	err := all.ProduceSync(ctx, &kgo.Record{Topic: "guarded", Value: []byte("refused")}).FirstErr()
	if err == nil || !strings.Contains(err.Error(), "NOT_ENOUGH_REPLICAS") {
		t.Fatalf("acks=all with the leader alone in sync: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	one := c.client(kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err := one.ProduceSync(ctx, &kgo.Record{Topic: "guarded", Value: []byte("held")}).FirstErr(); err != nil {
		t.Fatalf("acks=1: %v", err)
	}
	end, err := kadm.NewClient(c.client()).ListEndOffsets(ctx, "guarded")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := end.Lookup("guarded", 0); o.Offset != 0 {
		t.Fatalf("the high watermark is %d with one replica in sync of a minimum of 2, want 0", o.Offset)
	}
	// kcat (librdkafka) reads the partition from the beginning while the
	// record is held: it has sent four Fetches at offset 0, so had three
	// answers that would have carried the record had the broker sent it
	// above the high watermark, and has printed nothing nor asked for
	// offset 1. (kcat -e would not tell: librdkafka reaches the end at
	// the high watermark an answer names, and exits before printing
	// records a broker sent above it.)
	var kc *kcatConsumer
	if haveKcat(t) {
		kc = startKcatConsumer(t, c.addrs(c.live()...), "guarded", 0, 1)
		poll(t, "kcat has fetched at offset 0 four times", func() error {
			out, n := kc.state(0)
			if _, past := kc.state(1); out != "" || past > 0 {
				t.Fatalf("kcat read %q and fetched at offset 1 %d times with the high watermark at 0", out, past)
			}
			if n < 4 {
				return fmt.Errorf("%d fetches at offset 0", n)
			}
			return nil
		})
	}
	c.restart(followers[0])
	poll(t, "the acks=1 record visible once a follower is back", func() error {
		end, err := kadm.NewClient(c.client()).ListEndOffsets(ctx, "guarded")
		if err != nil {
			return err
		}
		if o, _ := end.Lookup("guarded", 0); o.Offset != 1 {
			return fmt.Errorf("high watermark %d", o.Offset)
		}
		return nil
	})
	if kc != nil {
		select {
		case <-kc.exited:
		case <-time.After(testWait):
			t.Fatalf("kcat has not read the record %v after the high watermark passed it", testWait)
		}
		if out, _ := kc.state(0); kc.err != nil || out != "held\n" {
			t.Fatalf("kcat read %q and exited with %v once the high watermark passed the record, want \"held\\n\" and success", out, kc.err)
		}
	}
}
