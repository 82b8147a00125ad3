package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkGroupStable is the time for a group of 10 franz-go members,
// started together, to reach Stable with every partition assigned (initial
// rebalance delay 0), and for the 9 left to be Stable again after one
// leaves.
func BenchmarkGroupStable(b *testing.B) {
	tb := startBroker(b, b.TempDir(), groupTimeouts)
	tb.createTopic(b, "bench", 20)
	var cold, leave time.Duration
	for i := range b.N {
		group := fmt.Sprintf("g%d", i)
		start := time.Now()
		var cls []*kgo.Client
		var ms []*tracked
		for range 10 {
			cl, m := tb.member(b, group, "bench")
			cls, ms = append(cls, cl), append(ms, m)
		}
		await(b, "10 members share 20 partitions", covers(20, ms...), ms...)
		cold += time.Since(start)
		start = time.Now()
		cls[9].Close()
		await(b, "9 members share 20 partitions", covers(20, ms[:9]...), ms[:9]...)
		leave += time.Since(start)
		for _, cl := range cls {
			cl.Close()
		}
	}
	b.ReportMetric(float64(cold.Milliseconds())/float64(b.N), "ms-to-stable")
	b.ReportMetric(float64(leave.Milliseconds())/float64(b.N), "ms-rebalance-after-leave")
}

func commitRequest(group string, partitions int32, offset int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "bench"
	for p := range partitions {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = p, offset, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// BenchmarkOffsetCommit commits one partition's offset per request, from
// 16 clients at once (franz-go, loopback).
func BenchmarkOffsetCommit(b *testing.B) {
	tb := startBroker(b, b.TempDir(), groupTimeouts)
	tb.createTopic(b, "bench", 1)
	cl := tb.client(b)
	ctx := ctxTimeout(b, time.Hour)
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var n int64
		group := fmt.Sprintf("g-%p", &n)
		for pb.Next() {
			n++
			resp, err := commitRequest(group, 1, n).RequestWith(ctx, cl)
			if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
				b.Errorf("commit: %v %+v", err, resp)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}

// BenchmarkOffsetFetch is the latency of fetching a group's offsets of 10
// partitions, one request at a time.
func BenchmarkOffsetFetch(b *testing.B) {
	tb := startBroker(b, b.TempDir(), groupTimeouts)
	tb.createTopic(b, "bench", 10)
	cl := tb.client(b)
	ctx := ctxTimeout(b, time.Hour)
	if _, err := commitRequest("g", 10, 42).RequestWith(ctx, cl); err != nil {
		b.Fatal(err)
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = "g"
	req.Groups = append(req.Groups, rg)
	b.ResetTimer()
	for range b.N {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Groups) != 1 || len(resp.Groups[0].Topics) != 1 || len(resp.Groups[0].Topics[0].Partitions) != 10 {
			b.Fatalf("fetch: %v %+v", err, resp)
		}
	}
}

// BenchmarkBrokerStartWithGroups is a broker's start (and clean stop) with
// the offsets of 1,000 groups (10 partitions each, committed 5 times) to
// load from __consumer_offsets.
func BenchmarkBrokerStartWithGroups(b *testing.B) {
	dir := b.TempDir()
	tb := startBroker(b, dir, groupTimeouts)
	tb.createTopic(b, "bench", 10)
	cl := tb.client(b)
	ctx := ctxTimeout(b, time.Hour)
	for round := range 5 {
		for g := range 1000 {
			if _, err := commitRequest(fmt.Sprint("group-", g), 10, int64(round)).RequestWith(ctx, cl); err != nil {
				b.Fatal(err)
			}
		}
	}
	cl.Close()
	tb.stop(b)
	b.ResetTimer()
	for range b.N {
		br, err := New(config.Config{DataDir: dir, Listen: "127.0.0.1:0", Logger: tb.cfg.Logger})
		if err != nil {
			b.Fatal(err)
		}
		if err := br.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
