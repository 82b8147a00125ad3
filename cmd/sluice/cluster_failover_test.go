package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The leader of an RF 3 partition SIGKILLed while an idempotent acks=all
// producer runs: a follower from the ISR is elected and no acknowledged
// record is lost; the old leader, restarted, follows.
func TestClusterLeaderKilledLosesNothingAcknowledged(t *testing.T) {
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*testWait)
	defer cancel()
	two := "2"
	if r, err := kadm.NewClient(c.client()).CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &two}, "durable"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	inSync := func(n int) func(m *kmsg.MetadataResponse) error {
		return func(m *kmsg.MetadataResponse) error {
			if err := c.wantTopic(m, "durable", 1, 3); err != nil {
				return err
			}
			for _, tp := range m.Topics {
				if *tp.Topic == "durable" && len(tp.Partitions[0].ISR) < n {
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
			if *tp.Topic == "durable" {
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
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "durable", Value: []byte(v)}).FirstErr(); err == nil {
				acked[v] = true
			}
		}
	}
	produce(0, 500)
	c.kill(leader)
	c.waitAgree("a new leader from the ISR", func(m *kmsg.MetadataResponse) error {
		if err := c.wantBrokers(m, c.live()...); err != nil {
			return err
		}
		for _, tp := range m.Topics {
			if *tp.Topic == "durable" && (tp.Partitions[0].Leader == leader || tp.Partitions[0].Leader < 0) {
				return fmt.Errorf("leader %d", tp.Partitions[0].Leader)
			}
		}
		return nil
	})
	produce(500, 1000)
	if len(acked) < 900 {
		t.Fatalf("only %d of 1000 records acknowledged across the failover", len(acked))
	}
	c.restart(leader)
	c.waitAgree("the old leader back in the ISR", inSync(3))
	cons := c.client(kgo.ConsumeTopics("durable"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
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
