package bench

// BenchmarkProduceMetrics holds the produce path with metrics on
// (metrics.listen set, /metrics scraped every second as Prometheus would,
// more often than its usual 15 s) against the same path with them off, in
// one run: two brokers, one raw connection each replaying the same
// pre-encoded Produce request (8 partitions of 100 or 1,000 records of
// 100 B, acks=1: 0.09 or 0.9 MB), every op one round trip to each in an order that
// alternates, each timed on its own. on/off is the throughput with metrics
// as a fraction of without (goal >= 0.97): the median over ops of the
// ratio of each op's two round trips (adjacent in time, they share the
// machine's load); on/off-total is the ratio of the total times. The allocs sub-benchmarks
// measure each broker's allocations per record alone (BrokerAllocs' way),
// on the produce path and on the fetch path.
//
//	go test -run '^$' -bench ProduceMetrics -benchtime 2000x ./bench/

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
)

// withMetrics turns metrics on at a free loopback port, returned.
func withMetrics(b *testing.B) (func(*config.Config), string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return func(c *config.Config) { c.Observability.MetricsListen = addr }, addr
}

// scrapeEvery reads addr's /metrics every period until b ends.
func scrapeEvery(b *testing.B, addr string, period time.Duration) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	b.Cleanup(func() { close(done); <-stopped })
	go func() {
		defer close(stopped)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			resp, err := http.Get("http://" + addr + "/metrics")
			if err != nil {
				b.Errorf("scrape: %v", err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
}

func BenchmarkProduceMetrics(b *testing.B) {
	for _, perBatch := range []int{100, 1000} {
		benchProduceMetrics(b, perBatch)
	}
	// The fetch path's allocations, as BrokerAllocs' fetch/partition=1MiB.
	for _, on := range []bool{false, true} {
		var mod func(*config.Config)
		if on {
			mod, _ = withMetrics(b)
		}
		b.Run(fmt.Sprintf("fetch-allocs/metrics=%v", on), func(b *testing.B) {
			const partitions = 8
			rc := sluiceWithTopicsCfg(b, partitions, map[string]map[string]string{"metered": nil}, mod)
			prod := rawProduceRequest("metered", partitions, 1000)
			for range 20 {
				checkProduced(b, rc.roundTrip(b, prod))
			}
			req := rawFetchRequest("metered", partitions, 1<<20)
			records := fetchedRecords(b, rc.roundTrip(b, req))
			timedAllocs(b, records, func() { rc.roundTrip(b, req) })
		})
	}
}

func benchProduceMetrics(b *testing.B, perBatch int) {
	const partitions = 8
	topics := map[string]map[string]string{"metered": nil}
	req := rawProduceRequest("metered", partitions, perBatch)
	size := fmt.Sprintf("request=%.2fMB", float64(len(req))/1e6)
	b.Run("interleaved/"+size, func(b *testing.B) {
		off := sluiceWithTopicsCfg(b, partitions, topics, nil)
		mod, maddr := withMetrics(b)
		on := sluiceWithTopicsCfg(b, partitions, topics, mod)
		checkProduced(b, off.roundTrip(b, req))
		checkProduced(b, on.roundTrip(b, req))
		scrapeEvery(b, maddr, time.Second)
		conns := []*rawConn{off, on}
		var spent [2]time.Duration
		ratios := make([]float64, 0, b.N)
		b.SetBytes(int64(2 * len(req)))
		b.ResetTimer()
		for i := range b.N {
			var took [2]time.Duration
			for k := range conns {
				j := (k + i) % 2
				start := time.Now()
				conns[j].roundTrip(b, req)
				took[j] = time.Since(start)
				spent[j] += took[j]
			}
			ratios = append(ratios, took[0].Seconds()/took[1].Seconds())
		}
		b.StopTimer()
		for j, name := range []string{"off", "on"} {
			b.ReportMetric(float64(b.N)*float64(len(req))/1e6/spent[j].Seconds(), name+"-MB/s")
		}
		b.ReportMetric(median(ratios), "on/off")
		b.ReportMetric(spent[0].Seconds()/spent[1].Seconds(), "on/off-total")
	})
	for _, on := range []bool{false, true} {
		name := "allocs/" + size + "/metrics=off"
		var mod func(*config.Config)
		if on {
			name = "allocs/" + size + "/metrics=on"
			mod, _ = withMetrics(b)
		}
		b.Run(name, func(b *testing.B) {
			rc := sluiceWithTopicsCfg(b, partitions, topics, mod)
			checkProduced(b, rc.roundTrip(b, req))
			b.SetBytes(int64(len(req)))
			timedAllocs(b, partitions*perBatch, func() { rc.roundTrip(b, req) })
		})
	}
}
