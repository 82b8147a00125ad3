package zk

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/coordinator/zk/zktest"
	"github.com/sluice-io/sluice/engine"
)

// toldAll reports whether every broker of ids got LeaderAndIsr (when
// lisr) and UpdateMetadata for partitions [0, n) of topic at epoch.
func toldAll(got []delivered, ids []int32, topic string, n int, epoch int32, lisr bool) bool {
	for _, id := range ids {
		um, la, _ := views(got, id, epoch)
		for p := range n {
			tp := engine.Partition{Topic: topic, Partition: int32(p)}
			if _, ok := um[tp]; !ok {
				return false
			}
			if _, ok := la[tp]; lisr && !ok {
				return false
			}
		}
	}
	return true
}

// The controller at scale on 3 brokers: creating a topic of 10,000
// partitions at RF 3 (from CreateTopic until every broker got LeaderAndIsr
// and UpdateMetadata for all of them, so every state znode is written),
// ZooKeeper transactions per partition created, and a new controller's
// takeover (from the old one's Close until every broker got UpdateMetadata
// with all partitions from the new one), against a baseline in the same
// run: reading the 10,000 state znodes one after another.
func BenchmarkControllerLoop10kPartitions(b *testing.B) {
	const partitions = 10000
	if zkServer == nil {
		b.Skipf("ZooKeeper: %v", zkStartErr)
	}
	var create, takeover, serial time.Duration
	var txns int64
	for range b.N {
		chroot := zktest.Chroot()
		f := newFakeBrokers()
		var clients []*Client
		for id := int32(1); id <= 3; id++ {
			ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
			c, err := Connect(ctx, zkServer.Addr+chroot, Options{SessionTimeout: 10 * time.Second, Logger: quietLogger()})
			if err != nil {
				b.Fatal(err)
			}
			if err := c.EnsurePersistentPaths(); err != nil {
				b.Fatal(err)
			}
			if _, err := c.Register(ctx, registration(id, 9090+id)); err != nil {
				b.Fatal(err)
			}
			cancel()
			clients = append(clients, c)
		}
		ids := []int32{1, 2, 3}
		first := StartControllerLoop(context.Background(), clients[0], 1, f.sender(1), LoopOptions{Logger: quietLogger()})
		for !first.IsController() {
			<-first.Changed()
		}
		epoch := first.Epoch()
		start := time.Now()
		_, err := clients[1].CreateTopic("big", controller.TopicRequest{NumPartitions: partitions, ReplicationFactor: 3},
			controller.Defaults{}, nil, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			b.Fatal(err)
		}
		f.waitFor(b, "the big topic told to every broker", func(got []delivered) bool {
			return toldAll(got, ids, "big", partitions, epoch, true)
		})
		create += time.Since(start)
		_, topicStat, err := clients[1].Get(TopicPath("big"))
		if err != nil {
			b.Fatal(err)
		}
		markerPath := "/bench-marker"
		if _, err := clients[1].conn.Create(clients[1].abs(markerPath), nil, 0, openACL); err != nil {
			b.Fatal(err)
		}
		_, markerStat, err := clients[1].Get(markerPath)
		if err != nil {
			b.Fatal(err)
		}
		txns += markerStat.Czxid - topicStat.Czxid - 1

		// Baseline: the state znodes read one Get after another.
		start = time.Now()
		for p := range partitions {
			if _, _, err := clients[2].Get(PartitionStatePath("big", int32(p))); err != nil {
				b.Fatal(err)
			}
		}
		serial += time.Since(start)

		start = time.Now()
		first.Close()
		second := StartControllerLoop(context.Background(), clients[1], 2, f.sender(2), LoopOptions{Logger: quietLogger()})
		for !second.IsController() {
			<-second.Changed()
		}
		next := second.Epoch()
		f.waitFor(b, "the new controller's UpdateMetadata to every broker", func(got []delivered) bool {
			return toldAll(got, ids, "big", partitions, next, false)
		})
		takeover += time.Since(start)
		second.Close()
		for _, c := range clients {
			c.Close()
		}
	}
	b.ReportMetric(float64(create.Milliseconds())/float64(b.N), "create-ms/op")
	b.ReportMetric(float64(takeover.Milliseconds())/float64(b.N), "takeover-ms/op")
	b.ReportMetric(float64(serial.Milliseconds())/float64(b.N), "serial-reads-ms/op")
	b.ReportMetric(float64(takeover)/float64(serial), "takeover/serial-reads")
	b.ReportMetric(float64(txns)/float64(b.N)/partitions, "zk-txns/partition")
}
