package broker

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A raw AlterPartition over the wire: the controller broker writes the
// leader's ISR expansion and answers it, every broker's metadata shows the
// new ISR, a stale partition epoch is answered INVALID_UPDATE_VERSION, and
// a broker that is not the controller answers NOT_CONTROLLER.
func TestClusterAlterPartition(t *testing.T) {
	c := startCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c.createTopic(ctx, "isr", 1, 3)
	md := metadataOf(t, c.broker(0))
	ctl := c.broker(md.ControllerID)
	p := topicOf(md, "isr").Partitions[0]
	id := topicOf(md, "isr").TopicID
	leader := c.broker(p.Leader)
	alter := func(tb *testBroker, partitionEpoch int32, isr []int32) *kmsg.AlterPartitionResponse {
		t.Helper()
		req := kmsg.NewPtrAlterPartitionRequest()
		req.BrokerID, req.BrokerEpoch = p.Leader, leader.cluster.BrokerEpoch()
		rp := kmsg.AlterPartitionRequestTopicPartition{Partition: 0, LeaderEpoch: p.LeaderEpoch, NewISR: isr, PartitionEpoch: partitionEpoch}
		req.Topics = []kmsg.AlterPartitionRequestTopic{{TopicID: id, Partitions: []kmsg.AlterPartitionRequestTopicPartition{rp}}}
		rc := dialRaw(t, tb.addr)
		defer rc.nc.Close()
		return rc.roundTrip(req, 2).(*kmsg.AlterPartitionResponse)
	}
	partition := func(resp *kmsg.AlterPartitionResponse) kmsg.AlterPartitionResponseTopicPartition {
		t.Helper()
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].TopidID != id || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("answer %+v", resp)
		}
		return resp.Topics[0].Partitions[0]
	}
	// The ISR it has: answered with the committed state, its partition
	// epoch included.
	cur := partition(alter(ctl, 0, p.ISR))
	if cur.ErrorCode != 0 || cur.LeaderID != p.Leader || !slices.Equal(cur.ISR, p.ISR) {
		t.Fatalf("the current ISR answered %+v", cur)
	}
	isr := []int32{p.Leader}
	for _, r := range p.Replicas {
		if r != p.Leader {
			isr = append(isr, r)
		}
	}
	got := partition(alter(ctl, cur.PartitionEpoch, isr))
	if got.ErrorCode != 0 || !slices.Equal(got.ISR, isr) || got.LeaderEpoch != p.LeaderEpoch || got.PartitionEpoch != cur.PartitionEpoch+1 {
		t.Fatalf("expansion to %v answered %+v", isr, got)
	}
	c.waitAgree("the new ISR in every broker's metadata", func(md *kmsg.MetadataResponse) bool {
		t := topicOf(md, "isr")
		return t != nil && len(t.Partitions) == 1 && slices.Equal(t.Partitions[0].ISR, isr)
	})
	if got := partition(alter(ctl, cur.PartitionEpoch, isr[:2])); got.ErrorCode != kerr.InvalidUpdateVersion.Code {
		t.Fatalf("a stale partition epoch answered %+v", got)
	}
	for _, tb := range c.live() {
		if tb == ctl {
			continue
		}
		if resp := alter(tb, got.PartitionEpoch, isr[:2]); resp.ErrorCode != kerr.NotController.Code {
			t.Fatalf("broker %d, not the controller, answered %+v", tb.cfg.ID, resp)
		}
	}
}
