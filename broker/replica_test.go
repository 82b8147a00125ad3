package broker

import (
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
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
	tb, f := startFakeLeader(t)
	rc, lead, produce := f.rc, f.lead, f.produce
	lead(5, 0, 1)
	latestAs := func(replica int32) int64 {
		t.Helper()
		off, code := f.latest(replica, -1)
		wantCode(t, "ListOffsets", code, nil)
		return off
	}
	latest := func() int64 { t.Helper(); return latestAs(-1) }
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
	if end := tb.partition("t", 0).Log.EndOffset(); end != 2 {
		t.Fatalf("log end %d, want 2 (both batches written)", end)
	}
	// A replica asking (as a follower whose fetch was out of range does)
	// learns the log end, not the high watermark.
	if got := latestAs(1); got != 2 {
		t.Fatalf("ListOffsets latest as replica 1: %d, want the log end 2", got)
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
	tb := startBroker(t, t.TempDir(), func(c *config.Config) { c.ControlPlane = plane })
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

// fakeLeader is a broker leading partition 0 of topic "t" for a fake
// controller, over one raw connection.
type fakeLeader struct {
	t  *testing.T
	rc *rawConn
}

func startFakeLeader(t *testing.T) (*testBroker, fakeLeader) {
	plane := &fakePlane{brokerEpoch: 100, controller: 2, epoch: 3}
	tb := startBroker(t, t.TempDir(), func(c *config.Config) { c.ControlPlane = plane })
	return tb, fakeLeader{t, dialRaw(t, tb.addr)}
}

// lead makes the broker leader of t-0 at epoch with isr (replicas 0, 1).
func (f fakeLeader) lead(epoch int32, isr ...int32) {
	f.t.Helper()
	req := leaderAndIsr(2, 3, 100, []int32{0, 0, epoch, 0, 1})
	req.TopicStates[0].PartitionStates[0].ISR = isr
	top, codes := lisrCodes(f.rc, req, 7)
	wantCode(f.t, "LeaderAndIsr", top, nil)
	wantCodes(f.t, "LeaderAndIsr", codes, nil)
}

// produce writes one record to t-0 and returns the partition's error.
func (f fakeLeader) produce(acks int16, timeoutMs int32) int16 {
	f.t.Helper()
	req := produceReq("t", 0, acks, batch("v"))
	req.TimeoutMillis = timeoutMs
	resp := f.rc.roundTrip(req, 9).(*kmsg.ProduceResponse)
	return resp.Topics[0].Partitions[0].ErrorCode
}

// latest asks ListOffsets (v7) of t-0 at timestamp as replica.
func (f fakeLeader) latest(replica int32, timestamp int64) (int64, int16) {
	f.t.Helper()
	p := f.listOffsets(replica, timestamp)
	return p.Offset, p.ErrorCode
}

// listOffsets is ListOffsets (v7) of t-0 at timestamp as replica.
func (f fakeLeader) listOffsets(replica int32, timestamp int64) kmsg.ListOffsetsResponseTopicPartition {
	f.t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = replica
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = 0, timestamp
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return f.rc.roundTrip(req, 7).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
}

// ListOffsets answers the leader epoch of the record it names (earliest,
// by timestamp), and the current epoch for latest, as Kafka does: a
// consumer resetting to an offset validates it with that epoch (KIP-320).
func TestListOffsetsLeaderEpochs(t *testing.T) {
	_, f := startFakeLeader(t)
	f.lead(5, 0)
	wantCode(t, "acks=1 at epoch 5", f.produce(1, 1000), nil)
	f.lead(6, 0)
	wantCode(t, "acks=1 at epoch 6", f.produce(1, 1000), nil)
	f.lead(7, 0)
	for _, c := range []struct {
		ts     int64
		offset int64
		epoch  int32
	}{{-2, 0, 5}, {0, 0, 5}, {-1, 2, 7}} {
		if p := f.listOffsets(-1, c.ts); p.ErrorCode != 0 || p.Offset != c.offset || p.LeaderEpoch != c.epoch {
			t.Errorf("ListOffsets at %d: offset %d epoch %d (error %d), want offset %d epoch %d", c.ts, p.Offset, p.LeaderEpoch, p.ErrorCode, c.offset, c.epoch)
		}
	}
}

// A new leader whose high watermark (learnt as a follower) is below the
// start of its epoch answers clients' ListOffsets OFFSET_NOT_AVAILABLE
// (KIP-207), for every timestamp, until its high watermark reaches the
// epoch; a replica's ListOffsets is answered meanwhile.
func TestNewLeaderOffsetsNotAvailable(t *testing.T) {
	_, f := startFakeLeader(t)
	f.lead(5, 0, 1)
	wantCode(t, "acks=1", f.produce(1, 300), nil)
	wantCode(t, "acks=1", f.produce(1, 300), nil)
	f.lead(6, 0, 1) // epoch 6 starts at 2; the high watermark is 0
	for _, ts := range []int64{-1, -2, 0} {
		if _, code := f.latest(-1, ts); code != kerr.OffsetNotAvailable.Code {
			t.Fatalf("ListOffsets at %d from a new leader below its epoch start: error %d, want OFFSET_NOT_AVAILABLE", ts, code)
		}
	}
	if off, code := f.latest(1, -1); code != 0 || off != 2 {
		t.Fatalf("ListOffsets latest as replica 1: %d (error %d), want the log end 2", off, code)
	}
	f.lead(7, 0) // alone in the ISR: the high watermark is the log end
	if off, code := f.latest(-1, -1); code != 0 || off != 2 {
		t.Fatalf("ListOffsets latest once the high watermark reached the epoch: %d (error %d), want 2", off, code)
	}
}

// A consumer's fetch waiting for records is woken when the high watermark
// moves past them, not only by appends: here the records were appended
// before it waited and the high watermark moves when the follower's fetch
// reports having them, with no append after. (Kafka completes delayed
// fetches when the leader's high watermark increases.)
func TestHighWatermarkWakesWaitingFetches(t *testing.T) {
	plane := &fakePlane{brokerEpoch: 100, controller: 2, epoch: 3}
	tb := startBroker(t, t.TempDir(), func(c *config.Config) { c.ControlPlane = plane })
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
		waiting = p.Waiting() > 0
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
