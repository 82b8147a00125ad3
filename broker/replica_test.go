package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The high watermark and acks=all come from the replication core: with a
// follower in the ISR that has fetched nothing, an acks=all produce waits
// and times out (REQUEST_TIMED_OUT), an acks=1 produce is acknowledged at
// once, and neither is visible to consumers; once the controller shrinks
// the ISR to the leader, the high watermark moves to the log end and
// acks=all produces are acknowledged.
func TestHighWatermarkFollowsTheISR(t *testing.T) {
	plane := &fakePlane{brokerEpoch: 100, controller: 2, epoch: 3}
	tb := startBroker(t, t.TempDir(), func(c *Config) { c.ControlPlane = plane })
	rc := dialRaw(t, tb.addr)
	lead := func(epoch int32, isr ...int32) {
		t.Helper()
		req := leaderAndIsr(2, 3, 100, []int32{0, 0, epoch, 0, 1})
		req.TopicStates[0].PartitionStates[0].ISR = isr
		top, codes := lisrCodes(rc, req, 7)
		wantCode(t, "LeaderAndIsr", top, nil)
		wantCodes(t, "LeaderAndIsr", codes, nil)
	}
	lead(5, 0, 1)
	produce := func(acks int16, timeoutMs int32) int16 {
		t.Helper()
		req := produceReq("t", 0, acks, batch("v"))
		req.TimeoutMillis = timeoutMs
		resp := rc.roundTrip(req, 9).(*kmsg.ProduceResponse)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	latest := func() int64 {
		t.Helper()
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = 0, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := rc.roundTrip(req, 7).(*kmsg.ListOffsetsResponse)
		p := resp.Topics[0].Partitions[0]
		wantCode(t, "ListOffsets", p.ErrorCode, nil)
		return p.Offset
	}
	wantCode(t, "acks=all with a follower that fetches nothing", produce(-1, 300), kerr.RequestTimedOut)
	wantCode(t, "acks=1", produce(1, 300), nil)
	if got := latest(); got != 0 {
		t.Fatalf("high watermark %d with the follower behind, want 0", got)
	}
	// A consumer reads nothing above the high watermark.
	fr := rc.roundTrip(fetchReq("t", topicA, 0, 0, 1<<20), 12).(*kmsg.FetchResponse)
	if fp := fr.Topics[0].Partitions[0]; fp.ErrorCode != 0 || len(fp.RecordBatches) != 0 || fp.HighWatermark != 0 {
		t.Fatalf("a consumer's fetch with the high watermark at 0: error %d, %d bytes, high watermark %d; want no records", fp.ErrorCode, len(fp.RecordBatches), fp.HighWatermark)
	}
	if end := tb.partition("t", 0).log.EndOffset(); end != 2 {
		t.Fatalf("log end %d, want 2 (both batches written)", end)
	}
	lead(6, 0)
	if got := latest(); got != 2 {
		t.Fatalf("high watermark %d with the leader alone in the ISR, want the log end 2", got)
	}
	fr = rc.roundTrip(fetchReq("t", topicA, 0, 0, 1<<20), 12).(*kmsg.FetchResponse)
	if got := len(batchesIn(t, fr.Topics[0].Partitions[0].RecordBatches)); got != 2 {
		t.Fatalf("a consumer's fetch once the high watermark is 2: %d batches, want 2", got)
	}
	wantCode(t, "acks=all with the leader alone in the ISR", produce(-1, 5000), nil)
	if got := latest(); got != 3 {
		t.Fatalf("high watermark %d after an acks=all produce, want 3", got)
	}
}

// A follower's Fetch (replica id set) is answered by the replication core:
// records up to the leader's log end, not its high watermark; the
// follower's fetch offset moves the high watermark, which acks=all
// produces wait for; a follower whose last fetched epoch ends earlier on
// the leader is told where (DivergingEpoch) and gets no records.
func TestLeaderServesFollowerFetches(t *testing.T) {
	plane := &fakePlane{brokerEpoch: 100, controller: 2, epoch: 3}
	tb := startBroker(t, t.TempDir(), func(c *Config) { c.ControlPlane = plane })
	rc := dialRaw(t, tb.addr)
	lead := func(epoch int32) {
		t.Helper()
		req := leaderAndIsr(2, 3, 100, []int32{0, 0, epoch, 0, 1})
		req.TopicStates[0].PartitionStates[0].ISR = []int32{0, 1}
		top, codes := lisrCodes(rc, req, 7)
		wantCode(t, "LeaderAndIsr", top, nil)
		wantCodes(t, "LeaderAndIsr", codes, nil)
	}
	lead(5)
	for _, v := range []string{"a", "b", "c"} {
		resp := rc.roundTrip(produceReq("t", 0, 1, batch(v)), 9).(*kmsg.ProduceResponse)
		wantCode(t, "acks=1", resp.Topics[0].Partitions[0].ErrorCode, nil)
	}
	followerFetch := func(offset int64, lastEpoch int32) kmsg.FetchResponseTopicPartition {
		t.Helper()
		req := fetchReq("t", topicA, 0, offset, 1<<20)
		req.ReplicaID = 1
		req.Topics[0].Partitions[0].LastFetchedEpoch = lastEpoch
		req.Topics[0].Partitions[0].CurrentLeaderEpoch = -1
		fr := dialRaw(t, tb.addr).roundTrip(req, 12).(*kmsg.FetchResponse)
		return fr.Topics[0].Partitions[0]
	}
	p := followerFetch(0, -1)
	wantCode(t, "follower fetch", p.ErrorCode, nil)
	if got := len(batchesIn(t, p.RecordBatches)); got != 3 || p.HighWatermark != 0 {
		t.Fatalf("the follower's first fetch: %d batches, high watermark %d; want the 3 batches above the high watermark 0", got, p.HighWatermark)
	}
	// Its next fetch, at the log end, says it has them: the high watermark
	// moves there.
	p = followerFetch(3, 5)
	if p.ErrorCode != 0 || p.HighWatermark != 3 || len(p.RecordBatches) != 0 {
		t.Fatalf("the follower's fetch at the log end: error %d, high watermark %d, %d bytes; want 3 and none", p.ErrorCode, p.HighWatermark, len(p.RecordBatches))
	}
	// A new leader epoch starts at offset 3; a follower claiming offset 4
	// of epoch 5 diverged there.
	lead(6)
	p = followerFetch(4, 5)
	if p.DivergingEpoch.Epoch != 5 || p.DivergingEpoch.EndOffset != 3 || len(p.RecordBatches) != 0 {
		t.Fatalf("a diverged follower: diverging epoch %+v, %d bytes; want epoch 5 ending at 3 and no records", p.DivergingEpoch, len(p.RecordBatches))
	}
}

// A consumer's fetch waiting for records is woken when the high watermark
// moves past them, not only by appends: here the records were appended
// before it waited and the high watermark moves when the follower's fetch
// reports having them, with no append after. (Kafka completes delayed
// fetches when the leader's high watermark increases.)
func TestHighWatermarkWakesWaitingFetches(t *testing.T) {
	plane := &fakePlane{brokerEpoch: 100, controller: 2, epoch: 3}
	tb := startBroker(t, t.TempDir(), func(c *Config) { c.ControlPlane = plane })
	rc := dialRaw(t, tb.addr)
	req := leaderAndIsr(2, 3, 100, []int32{0, 0, 5, 0, 1})
	req.TopicStates[0].PartitionStates[0].ISR = []int32{0, 1}
	top, codes := lisrCodes(rc, req, 7)
	wantCode(t, "LeaderAndIsr", top, nil)
	wantCodes(t, "LeaderAndIsr", codes, nil)
	resp := rc.roundTrip(produceReq("t", 0, 1, batch("v")), 9).(*kmsg.ProduceResponse)
	wantCode(t, "acks=1", resp.Topics[0].Partitions[0].ErrorCode, nil)
	follower := dialRaw(t, tb.addr)
	followerFetch := func(offset int64, lastEpoch int32) {
		t.Helper()
		req := fetchReq("t", topicA, 0, offset, 1<<20)
		req.ReplicaID = 1
		req.Topics[0].Partitions[0].LastFetchedEpoch = lastEpoch
		fr := follower.roundTrip(req, 12).(*kmsg.FetchResponse)
		wantCode(t, "follower fetch", fr.Topics[0].Partitions[0].ErrorCode, nil)
	}
	followerFetch(0, -1) // gets the batch; the high watermark stays 0

	consumer := dialRaw(t, tb.addr)
	creq := fetchReq("t", topicA, 0, 0, 1<<20)
	creq.MaxWaitMillis, creq.MinBytes = 60_000, 1
	creq.SetVersion(12)
	corr := consumer.send(creq)
	p := tb.partition("t", 0)
	deadline := time.Now().Add(10 * time.Second)
	for waiting := false; !waiting; {
		p.mu.Lock()
		waiting = len(p.mu.waiters) > 0
		p.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("the consumer's fetch is not waiting after 10 s")
		}
		time.Sleep(time.Millisecond) // the fetch's registration: state inside the broker
	}
	followerFetch(1, 5) // the follower has the batch: the high watermark moves to 1
	fresp := kmsg.NewPtrFetchResponse()
	fresp.SetVersion(12)
	consumer.readResponse(corr, fresp, 20*time.Second) // well before its 60 s wait
	fp := fresp.Topics[0].Partitions[0]
	if got := len(batchesIn(t, fp.RecordBatches)); fp.ErrorCode != 0 || got != 1 || fp.HighWatermark != 1 {
		t.Fatalf("the woken fetch: error %d, %d batches, high watermark %d; want the batch below the high watermark 1", fp.ErrorCode, got, fp.HighWatermark)
	}
}
