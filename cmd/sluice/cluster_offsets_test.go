package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Committed offsets survive the death of their group's coordinator: the
// commit is written to __consumer_offsets (RF 3) through the replicated
// path and acknowledged once the ISR has it, so when the coordinator's
// broker is SIGKILLed the new leader of that partition serves the same
// offsets, and a consumer joining the group resumes from them.
func TestClusterCommittedOffsetsSurviveTheCoordinator(t *testing.T) {
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*testWait)
	defer cancel()
	adm := kadm.NewClient(c.client())
	if r, err := adm.CreateTopic(ctx, 3, 3, nil, "orders"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	prod := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 60 {
		r := &kgo.Record{Topic: "orders", Partition: int32(i % 3), Value: fmt.Appendf(nil, "%d", i)}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// The group's offsets partition exists once a coordinator was asked.
	if _, err := adm.FetchOffsets(ctx, "billing"); err != nil {
		t.Fatal(err)
	}
	c.waitAgree("every offsets partition and orders partition fully in sync", func(m *kmsg.MetadataResponse) error {
		if err := c.wantTopic(m, "orders", 3, 3); err != nil {
			return err
		}
		if err := c.wantTopic(m, "__consumer_offsets", 6, 3); err != nil {
			return err
		}
		for _, tp := range m.Topics {
			for _, p := range tp.Partitions {
				if len(p.ISR) != 3 {
					return fmt.Errorf("%s-%d: ISR %v", *tp.Topic, p.Partition, p.ISR)
				}
			}
		}
		return nil
	})
	want := kadm.Offsets{}
	for p, at := range []int64{7, 13, 19} {
		want.Add(kadm.Offset{Topic: "orders", Partition: int32(p), At: at, LeaderEpoch: -1})
	}
	if r, err := adm.CommitOffsets(ctx, "billing", want); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}
	coord := adm.FindGroupCoordinators(ctx, "billing")["billing"]
	if coord.Err != nil {
		t.Fatalf("FindCoordinator: %v", coord.Err)
	}
	dead := coord.NodeID
	c.kill(dead)
	poll(t, "another broker coordinating the group", func() error {
		cl := kadm.NewClient(c.client())
		defer cl.Close()
		co := cl.FindGroupCoordinators(ctx, "billing")["billing"]
		switch {
		case co.Err != nil:
			return co.Err
		case co.NodeID == dead:
			return fmt.Errorf("coordinator still %d", dead)
		}
		return nil
	})
	poll(t, "the committed offsets from the new coordinator", func() error {
		cl := kadm.NewClient(c.client())
		defer cl.Close()
		got, err := cl.FetchOffsets(ctx, "billing")
		if err != nil {
			return err
		}
		if err := got.Error(); err != nil {
			return err
		}
		for p, o := range want["orders"] {
			if g, ok := got.Lookup("orders", p); !ok || g.At != o.At {
				return fmt.Errorf("orders-%d: committed %d (found %v), want %d", p, g.At, ok, o.At)
			}
		}
		return nil
	})
	cons := c.client(kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	first := map[int32]int64{}
	var errs []error
	for len(first) < 3 && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		fs.EachError(func(topic string, p int32, err error) { errs = append(errs, fmt.Errorf("%s-%d: %w", topic, p, err)) })
		fs.EachRecord(func(r *kgo.Record) {
			if _, ok := first[r.Partition]; !ok {
				first[r.Partition] = r.Offset
			}
		})
	}
	for p, o := range want["orders"] {
		if at, ok := first[p]; !ok || at != o.At {
			t.Errorf("orders-%d: the group member started at %d (read anything: %v), want the committed %d; fetch errors: %v", p, at, ok, o.At, errs)
		}
	}
}
