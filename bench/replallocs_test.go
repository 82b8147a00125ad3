package bench

// BenchmarkReplicaAllocs measures what replication allocates, exactly:
// on a 3-broker cluster in this process (cluster_test.go), a raw client
// replays one pre-encoded Produce to broker 0, which leads all 8 partitions
// of both topics (a manual assignment): rf1 (replicas [0], acks=1) and rf3
// (replicas [0 1 2], min.insync.replicas 2, acks=all, answered once both
// followers' fetches have moved the high watermark past it). The client
// allocates nothing itself, so the process's allocations per op are the
// brokers': for rf3 the leader's produce, both followers' fetch rounds
// (request, the leader's answer, the append) and the high watermark's
// advance. Two batch sizes: what is per record grows tenfold from one to
// the other, what is per fetch does not.
//
//	go test -run '^$' -bench ReplicaAllocs ./bench/ -memprofile mem.out -memprofilerate 1

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func BenchmarkReplicaAllocs(b *testing.B) {
	const partitions = 8
	ctx := benchCtx(b)
	c := startCluster(b, 3)
	c.createAssigned(ctx, "allocs-rf1", partitions, []int32{0}, nil)
	c.createAssigned(ctx, "allocs-rf3", partitions, []int32{0, 1, 2}, minISR2)
	rc := dialRaw(b, c.live[0].addr)
	for _, perBatch := range []int{100, 1000} {
		batch := recordBatch(perBatch)
		for _, k := range []struct {
			name, topic string
			acks        int16
		}{{"rf1/acks=1", "allocs-rf1", 1}, {"rf3/acks=all", "allocs-rf3", -1}} {
			req := produceRequestAcks(k.topic, partitions, batch, k.acks)
			b.Run(fmt.Sprintf("%s/records=%d", k.name, partitions*perBatch), func(b *testing.B) {
				checkProduced(b, rc.roundTrip(b, req))
				timedAllocs(b, partitions*perBatch, func() { checkProduced(b, rc.roundTrip(b, req)) })
			})
		}
	}
}

// createAssigned creates a topic of partitions partitions, each on
// replicas (the first its leader), and waits until every running broker
// sees them led with their ISR whole.
func (c *cluster) createAssigned(ctx context.Context, name string, partitions int32, replicas []int32, configs map[string]string) {
	c.tb.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30_000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
	for p := range partitions {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = p, replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := c.request(ctx, 0, req)
	if err != nil {
		c.tb.Fatalf("create topic %s: %v", name, err)
	}
	if code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != 0 {
		c.tb.Fatalf("create topic %s: error %d", name, code)
	}
	c.waitMetadata(name+" led, ISR whole", inSync(name, int(partitions), len(replicas), -1))
}
