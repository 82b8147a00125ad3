package controller

// The decision core's cost at Kafka's scale (10,000 partitions at RF 3 on
// 3 brokers): creating them, a new controller taking the cluster over,
// a broker's death and return, and the rebalance moving a third of the
// leaders back to their preferred replica. Each operation's decisions (Step to
// Advance, writes answered as ZooKeeper would) are timed apart from the
// encoding of the requests they produce (kmsg AppendTo, what the driver
// does next in any case), interleaved in one loop: decide/encode reads as
// how much the controller's thinking costs beside its own output.

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluice-io/sluice/engine"
)

const benchPartitions = 10000

func benchTopic(b *testing.B) TopicAssignment {
	replicas, err := AssignReplicas(plain(1, 2, 3), benchPartitions, 3, Start{}, 0)
	if err != nil {
		b.Fatal(err)
	}
	return TopicAssignment{Name: "bench", ID: tid(9), Replicas: replicas}
}

// answer steps every write of rd as succeeded, then takes the next Ready.
func answer(c *Controller, rd Ready) Ready {
	for _, w := range rd.Writes {
		c.Step(succeeded(w))
	}
	return take(c)
}

func take(c *Controller) Ready {
	rd := c.Ready()
	c.Advance(rd)
	return rd
}

func encode(rds ...Ready) int {
	n := 0
	buf := make([]byte, 0, 1<<20)
	for _, rd := range rds {
		for _, r := range rd.Requests {
			n += len(r.Msg.AppendTo(buf[:0]))
		}
	}
	return n
}

// loadedBench is a controller that has loaded 10,000 online partitions.
func loadedBench(b *testing.B) (*Controller, Load) {
	a := benchTopic(b)
	l := Load{Brokers: brokers(1, 2, 3), Topics: []TopicAssignment{a}, States: map[engine.Partition]PartitionState{}}
	for p, rs := range a.Replicas {
		l.States[tp("bench", int32(p))] = PartitionState{Leader: rs[0], ISR: rs[:1], ControllerEpoch: 4}
	}
	c := New(1, 5, Options{})
	c.Step(l)
	take(c)
	return c, l
}

func BenchmarkController(b *testing.B) {
	ops := []struct {
		name string
		// setup builds the controller outside the timing; op runs the
		// operation and returns the Readys whose requests it produced.
		setup func(b *testing.B) *Controller
		op    func(c *Controller) []Ready
	}{
		{"create", func(b *testing.B) *Controller {
			c := New(1, 5, Options{})
			c.Step(Load{Brokers: brokers(1, 2, 3)})
			take(c)
			return c
		}, func(c *Controller) []Ready {
			c.Step(TopicsChanged{Topics: []TopicAssignment{benchTopicOnce}})
			rd := take(c)
			return []Ready{rd, answer(c, rd)}
		}},
		{"failover", func(b *testing.B) *Controller {
			c := New(1, 5, Options{})
			return c
		}, func(c *Controller) []Ready {
			c.Step(benchLoadOnce)
			return []Ready{take(c)}
		}},
		{"death-and-return", func(b *testing.B) *Controller {
			c, _ := loadedBench(b)
			return c
		}, func(c *Controller) []Ready {
			c.Step(BrokersChanged{Live: brokers(1, 2)})
			rd1 := take(c)
			rd2 := answer(c, rd1)
			c.Step(BrokersChanged{Live: brokers(1, 2, 3)})
			rd3 := take(c)
			return []Ready{rd1, rd2, rd3, answer(c, rd3)}
		}},
		{"rebalance", func(b *testing.B) *Controller {
			// Broker 3 is back in the ISR of the partitions it prefers,
			// led by their second replica: the check moves them back.
			a := benchTopic(b)
			l := Load{Brokers: brokers(1, 2, 3), Topics: []TopicAssignment{a}, States: map[engine.Partition]PartitionState{}}
			for p, rs := range a.Replicas {
				s := PartitionState{Leader: rs[0], ISR: rs, ControllerEpoch: 4}
				if rs[0] == 3 {
					s.Leader = rs[1]
				}
				l.States[tp("bench", int32(p))] = s
			}
			c := New(1, 5, Options{})
			c.Step(l)
			take(c)
			return c
		}, func(c *Controller) []Ready {
			c.Step(ImbalanceCheck{Percentage: 10})
			rd := take(c)
			if len(rd.Writes) < benchPartitions/4 {
				panic(fmt.Sprintf("the rebalance moved %d partitions", len(rd.Writes)))
			}
			return []Ready{rd, answer(c, rd)}
		}},
	}
	benchTopicOnce = benchTopic(b)
	_, benchLoadOnce = loadedBench(b)
	for _, o := range ops {
		b.Run(fmt.Sprintf("%s/partitions=%d", o.name, benchPartitions), func(b *testing.B) {
			b.ReportAllocs()
			var decide, enc time.Duration
			var bytes int
			for b.Loop() {
				b.StopTimer()
				c := o.setup(b)
				b.StartTimer()
				t0 := time.Now()
				rds := o.op(c)
				t1 := time.Now()
				bytes = encode(rds...)
				enc += time.Since(t1)
				decide += t1.Sub(t0)
			}
			b.ReportMetric(float64(decide.Nanoseconds())/float64(b.N)/benchPartitions, "decide-ns/partition")
			b.ReportMetric(float64(enc.Nanoseconds())/float64(b.N)/benchPartitions, "encode-ns/partition")
			b.ReportMetric(float64(decide)/float64(enc), "decide/encode")
			b.ReportMetric(float64(bytes)/benchPartitions, "request-B/partition")
		})
	}
}

var (
	benchTopicOnce TopicAssignment
	benchLoadOnce  Load
)
