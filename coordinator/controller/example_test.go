package controller_test

import (
	"fmt"

	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/engine"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The driver's loop, with ZooKeeper and the brokers replaced by prints:
// every write succeeds, and requests are only shown.
func Example() {
	c := controller.New(1, 7, controller.Options{})
	endpoint := func(port int32) []controller.Endpoint {
		return []controller.Endpoint{{Listener: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", Host: "localhost", Port: port}}
	}
	c.Step(controller.Load{Brokers: []controller.BrokerInfo{
		{ID: 1, Epoch: 0x100, Endpoints: endpoint(9092)},
		{ID: 2, Epoch: 0x101, Endpoints: endpoint(9093)},
	}})
	// One round: step the events that came (several may, as a multi-op's
	// results), then take and perform one Ready.
	events := []controller.Event{controller.TopicsChanged{Topics: []controller.TopicAssignment{
		{Name: "orders", ID: engine.TopicID{1}, Replicas: [][]int32{{1, 2}, {2, 1}}},
	}}}
	for len(events) > 0 {
		for _, ev := range events {
			c.Step(ev)
		}
		events = nil
		rd := c.Ready()
		for _, w := range rd.Writes {
			fmt.Printf("write %v %s-%d leader %d epoch %d isr %v\n", w.Op, w.Topic, w.Partition, w.State.Leader, w.State.LeaderEpoch, w.State.ISR)
			events = append(events, controller.WriteResult{Write: w, Version: 0})
		}
		for _, r := range rd.Requests {
			switch m := r.Msg.(type) {
			case *kmsg.LeaderAndISRRequest:
				fmt.Printf("LeaderAndIsr to %d: %d partition(s), controller epoch %d\n", r.Broker, len(m.TopicStates[0].PartitionStates), m.ControllerEpoch)
			case *kmsg.UpdateMetadataRequest:
				fmt.Printf("UpdateMetadata to %d: %d live brokers, %d topic(s)\n", r.Broker, len(m.LiveBrokers), len(m.TopicStates))
			}
		}
		c.Advance(rd)
	}
	// Output:
	// write CreateState orders-0 leader 1 epoch 0 isr [1 2]
	// write CreateState orders-1 leader 2 epoch 0 isr [2 1]
	// UpdateMetadata to 1: 2 live brokers, 0 topic(s)
	// UpdateMetadata to 2: 2 live brokers, 0 topic(s)
	// LeaderAndIsr to 1: 2 partition(s), controller epoch 7
	// UpdateMetadata to 1: 2 live brokers, 1 topic(s)
	// LeaderAndIsr to 2: 2 partition(s), controller epoch 7
	// UpdateMetadata to 2: 2 live brokers, 1 topic(s)
}
