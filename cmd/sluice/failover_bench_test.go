package main

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	zkpath "github.com/sluice-io/sluice/coordinator/zk"
	"github.com/sluice-io/sluice/coordinator/zk/zktest"
)

// BenchmarkLeaderFailover: the failover time. Three broker
// processes on a ZooKeeper of tickTime 500 ms with
// zookeeper.session.timeout.ms 6000, a partition of replication factor 3
// (min.insync.replicas 2) written by an acks=all producer one record at a
// time; an iteration SIGKILLs the partition's leader and measures the time
// from the kill until the acknowledgement of the first record sent after
// it (s-to-first-ack: the new leader's), and until the dead broker's
// registration is gone (s-to-deregistered: its session's expiry), then
// restarts the old leader and waits until it is back in the ISR. The client is franz-go with MetadataMinAge 250 ms (its
// default, 5 s, would bound how soon it asks for the new leader) and its
// default retry backoff. The goal is 7 s or less.
func BenchmarkLeaderFailover(b *testing.B) {
	zs, err := zktest.Start(filepath.Join(b.TempDir(), "zookeeper"), zktest.Options{TickTime: 500 * time.Millisecond})
	if err != nil {
		b.Skipf("ZooKeeper: %v", err)
	}
	b.Cleanup(zs.Stop)
	c := startClusterOn(b, zs.Addr, 3, "zookeeper.session.timeout.ms=6000\n")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	const topic = "failover"
	createReplicated(ctx, b, c, topic, 1)
	prod := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MetadataMinAge(250*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }), kgo.RecordRetries(1<<30))
	var (
		mu sync.Mutex
		// acked are the acknowledged records' send and acknowledgement
		// times, in order.
		acked [][2]time.Time
		stop  = make(chan struct{})
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			sent := time.Now()
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); err == nil {
				mu.Lock()
				acked = append(acked, [2]time.Time{sent, time.Now()})
				mu.Unlock()
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	// firstAfter is the acknowledgement of the first record sent after t
	// (the producer sends one at a time: one sent once the leader is dead
	// can only be the new leader's).
	firstAfter := func(t time.Time) (time.Time, bool) {
		mu.Lock()
		defer mu.Unlock()
		for i := len(acked) - 1; i >= 0 && acked[i][0].After(t); i-- {
			if i == 0 || !acked[i-1][0].After(t) {
				return acked[i][1], true
			}
		}
		return time.Time{}, false
	}
	var total, gone time.Duration
	for b.Loop() {
		leader, _ := c.waitISR(topic, 0, c.ids()...)
		t0 := time.Now()
		c.kill(leader)
		dead := time.Now()
		poll(b, "the killed leader's registration gone", func() error {
			if _, st := c.znode(zkpath.BrokerPath(leader)); st != nil {
				return context.DeadlineExceeded
			}
			return nil
		})
		gone += time.Since(t0)
		var first time.Time
		poll(b, "an acknowledgement from the new leader", func() error {
			var ok bool
			if first, ok = firstAfter(dead); !ok {
				return context.DeadlineExceeded
			}
			return nil
		})
		total += first.Sub(t0)
		b.StopTimer()
		c.restart(leader)
		c.waitISR(topic, 0, c.ids()...)
		b.StartTimer()
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s-to-first-ack")
	b.ReportMetric(gone.Seconds()/float64(b.N), "s-to-deregistered")
}
