package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Unclean leader election on broker processes: a topic with
// unclean.leader.election.enable, its follower killed (it leaves the ISR),
// a record acknowledged by the two left, then both of them killed: the
// partition has no live ISR member, and when the lagging replica comes
// back it is elected although out of sync. The record only the old ISR had
// is gone, the one it had is there, and the controller logs the election
// as a loss.
func TestClusterUncleanElectionOnProcesses(t *testing.T) {
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*testWait)
	defer cancel()
	on := "true"
	if r, err := kadm.NewClient(c.client()).CreateTopic(ctx, 1, 3, map[string]*string{"unclean.leader.election.enable": &on}, "unclean"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	leader, _ := c.waitISR("unclean", 0, c.ids()...)
	others := c.others(leader)
	lagging, other := others[0], others[1]
	produce := func(v string) {
		t.Helper()
		cl := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite())
		defer cl.Close()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "unclean", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	produce("kept")
	c.waitLogsEqual("unclean", 0, c.ids(), wantEnd(1))
	c.kill(lagging)
	c.waitISR("unclean", 0, leader, other)
	produce("lost") // acknowledged by the ISR of two
	c.kill(leader)
	c.kill(other)
	c.restart(lagging)
	c.waitAgree("the lagging replica elected, out of sync", func(m *kmsg.MetadataResponse) error {
		for _, tp := range m.Topics {
			if *tp.Topic == "unclean" && (tp.Partitions[0].Leader != lagging || len(tp.Partitions[0].ISR) != 1) {
				return fmt.Errorf("leader %d, ISR %v", tp.Partitions[0].Leader, tp.Partitions[0].ISR)
			}
		}
		return nil
	})
	got := readToEnds(ctx, t, c, "unclean", map[int32]int64{0: 1})
	if len(got) != 1 || got[0].value != "kept" {
		t.Fatalf("after the unclean election the partition holds %v, want only the record the new leader had", got)
	}
	end, err := kadm.NewClient(c.client()).ListEndOffsets(ctx, "unclean")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := end.Lookup("unclean", 0); o.Offset != 1 {
		t.Fatalf("end offset %d after the unclean election, want 1 (the acknowledged record at 1 lost)", o.Offset)
	}
	logged, err := os.ReadFile(filepath.Join(c.dir, fmt.Sprintf("broker-%d.log", lagging)))
	if err != nil || !strings.Contains(string(logged), "unclean leader election") {
		t.Fatalf("the new controller's log does not record the unclean election as a loss (%v)", err)
	}
}
