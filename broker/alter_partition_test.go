package broker

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A raw AlterPartition over the wire, beside the leaders' own: with every
// replica in the ISR (shown in every broker's metadata), a request for the
// ISR the partition has is answered with the committed state, a stale
// partition epoch INVALID_UPDATE_VERSION, and a broker that is not the
// controller answers NOT_CONTROLLER.
func TestClusterAlterPartition(t *testing.T) {
	c := startCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c.createTopic(ctx, "isr", 1, 3)
	full := func(md *kmsg.MetadataResponse) bool {
		tp := topicOf(md, "isr")
		return tp != nil && len(tp.Partitions) == 1 && len(tp.Partitions[0].ISR) == 3
	}
	c.waitAgree("every replica in the ISR", full)
	md := metadataOf(t, c.broker(0))
	ctl := c.broker(md.ControllerID)
	p := topicOf(md, "isr").Partitions[0]
	id := topicOf(md, "isr").TopicID
	leader := c.broker(p.Leader)
	alter := func(tb *testBroker, partitionEpoch int32, isr []int32) *kmsg.AlterPartitionResponse {
		t.Helper()
		req := kmsg.NewPtrAlterPartitionRequest()
		req.BrokerID, req.BrokerEpoch = p.Leader, leader.plane.zk.BrokerEpoch()
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
	if cur.ErrorCode != 0 || cur.LeaderID != p.Leader || !slices.Equal(cur.ISR, p.ISR) || cur.PartitionEpoch < 0 {
		t.Fatalf("the current ISR answered %+v", cur)
	}
	if got := partition(alter(ctl, cur.PartitionEpoch-1, p.ISR[:2])); got.ErrorCode != kerr.InvalidUpdateVersion.Code {
		t.Fatalf("a stale partition epoch answered %+v", got)
	}
	for _, tb := range c.live() {
		if tb == ctl {
			continue
		}
		if resp := alter(tb, cur.PartitionEpoch, p.ISR[:2]); resp.ErrorCode != kerr.NotController.Code {
			t.Fatalf("broker %d, not the controller, answered %+v", tb.cfg.ID, resp)
		}
	}
	// Nothing above changed the ISR.
	c.waitAgree("the ISR unchanged", full)
}
