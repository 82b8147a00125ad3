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
	"strconv"
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

// BenchmarkReplicaAllocsThrottled is BenchmarkReplicaAllocs's rf3 case on
// a cluster of its own (the same partitions, so the same fetches) with
// every replica leader- and follower-throttled
// (*.replication.throttled.replicas "*") under rates it never reaches
// (1 TiB/s, each broker's own): the throttles' bookkeeping (a flag per
// partition, each side's bytes counted once per fetch) must add nothing
// to rf3's allocations.
//
//	go test -run '^$' -bench ReplicaAllocs -benchtime 200x ./bench/
func BenchmarkReplicaAllocsThrottled(b *testing.B) {
	const partitions = 8
	ctx := benchCtx(b)
	c := startCluster(b, 3)
	c.createAssigned(ctx, "allocs-rf3", partitions, []int32{0, 1, 2}, map[string]string{"min.insync.replicas": "2",
		"leader.replication.throttled.replicas": "*", "follower.replication.throttled.replicas": "*"})
	for id := range int32(3) {
		c.setBrokerConfigs(ctx, id, map[string]string{"leader.replication.throttled.rate": "1099511627776", "follower.replication.throttled.rate": "1099511627776"})
	}
	rc := dialRaw(b, c.live[0].addr)
	for _, perBatch := range []int{100, 1000} {
		req := produceRequestAcks("allocs-rf3", partitions, recordBatch(perBatch), -1)
		b.Run(fmt.Sprintf("rf3/acks=all/records=%d", partitions*perBatch), func(b *testing.B) {
			checkProduced(b, rc.roundTrip(b, req))
			timedAllocs(b, partitions*perBatch, func() { checkProduced(b, rc.roundTrip(b, req)) })
		})
	}
}

// setBrokerConfigs sets dynamic configs of broker id, for it alone
// (IncrementalAlterConfigs of resource "<id>", which applies them at once).
func (c *cluster) setBrokerConfigs(ctx context.Context, id int32, configs map[string]string) {
	c.tb.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(id))
	for k, v := range configs {
		rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		rc.Name, rc.Value = k, kmsg.StringPtr(v)
		rr.Configs = append(rr.Configs, rc)
	}
	req.Resources = append(req.Resources, rr)
	resp, err := c.request(ctx, id, req)
	if err != nil {
		c.tb.Fatalf("broker %d configs: %v", id, err)
	}
	if r := resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0]; r.ErrorCode != 0 {
		c.tb.Fatalf("broker %d configs: error %d %v", id, r.ErrorCode, r.ErrorMessage)
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
