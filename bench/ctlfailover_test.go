package bench

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var ctlFailoverPartitions = flag.Int("sluice.ctl-failover-partitions", 10000, "partitions of BenchmarkControllerFailover's topic")

// BenchmarkControllerFailover: the controller failover at 10,000
// partitions. Three brokers, -sluice.ctl-failover-partitions partitions at
// replication factor 2 (in topics of 2,000); the controller's broker stops
// without a controlled shutdown (its session closed: the registration and
// /controller go at once, as after a crash once the session expired), and
// s-to-all-led is the time until a surviving broker's metadata shows every
// partition led by a live broker: another broker's election, its load of
// the cluster, the elections of the partitions the dead one led and the
// metadata sent. Run with -benchtime 1x.
func BenchmarkControllerFailover(b *testing.B) {
	off := false
	n := *ctlFailoverPartitions
	c := startClusterWith(b, 3, func(cfg *config.Config) { cfg.Cluster.ControlledShutdown = &off })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	// In topics of at most 2,000 partitions: a CreateTopics hosting more
	// at once outlasts the client's request timeout here.
	var topics []string
	for left, i := n, 0; left > 0; i++ {
		k := min(left, 2000)
		name := fmt.Sprintf("ctl-%d", i)
		c.createTopic(ctx, name, int32(k), 2, nil)
		topics = append(topics, name)
		left -= k
	}
	var total time.Duration
	var moved int
	for b.Loop() {
		md, err := c.metadata(ctx, 0)
		if err != nil {
			b.Fatal(err)
		}
		dead := md.ControllerID
		for _, name := range topics {
			for _, p := range partitionsOf(md, name) {
				if p.Leader == dead {
					moved++
				}
			}
		}
		watch := (dead + 1) % 3
		start := time.Now()
		c.stop(dead)
		for {
			md, err := c.metadata(ctx, watch)
			if err == nil && allLive(md, topics, dead) {
				break
			}
			if ctx.Err() != nil {
				b.Fatal("partitions not all led after the controller's failure")
			}
			time.Sleep(5 * time.Millisecond) // polling metadata is the measurement
		}
		total += time.Since(start)
		b.StopTimer()
		c.start(dead)
		for _, name := range topics {
			c.waitMetadata("the restarted broker back in every ISR", inSync(name, len(partitionsOf(md, name)), 2, -1))
		}
		b.StartTimer()
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s-to-all-led")
	b.ReportMetric(float64(moved)/float64(b.N), "partitions-re-elected/op")
}

// allLive reports whether every partition of topics in md has a leader
// other than dead.
func allLive(md *kmsg.MetadataResponse, topics []string, dead int32) bool {
	for _, name := range topics {
		ps := partitionsOf(md, name)
		if len(ps) == 0 {
			return false
		}
		for _, p := range ps {
			if p.Leader < 0 || p.Leader == dead {
				return false
			}
		}
	}
	return true
}
