package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/engine"
)

// listTopics is the topics a Metadata request for all topics lists.
func listTopics(t testing.TB, tb *testBroker) []string {
	t.Helper()
	details, err := tb.admin(t).ListTopics(ctxTimeout(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return details.Names()
}

func partitionDirs(t testing.TB, dir, topic string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, topic+"-[0-9]*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range m {
		fi, err := os.Stat(d)
		if err == nil && fi.IsDir() && filepath.Ext(d) == "" { // not a "<topic>-<n>.<random>-delete" directory
			out = append(out, filepath.Base(d))
		}
	}
	return out
}

func TestDeleteTopics(t *testing.T) {
	dir := t.TempDir()
	tb := startBroker(t, dir, nil)
	oldID := tb.createTopic(t, "doomed", 2)
	tb.createTopic(t, "kept", 1)
	cl := tb.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSync(t, cl, "doomed", 0, "a", "b")
	produceSync(t, cl, "kept", 0, "k")

	// A fetch long-polling on the topic returns when it is deleted.
	ctx := ctxTimeout(t, 20*time.Second)
	req := fetchReq("doomed", [16]byte{}, 1, 0, 1<<20)
	req.MaxWaitMillis = 15000
	req.SetVersion(12)
	waiting := fetchAsync(ctx, tb, t, req)

	adm := tb.admin(t)
	resp, err := adm.DeleteTopic(ctx, "doomed")
	if err != nil || resp.Err != nil {
		t.Fatalf("delete: %v %v", err, resp.Err)
	}
	if resp.ID != oldID {
		t.Errorf("deleted topic ID %v, want %v", resp.ID, oldID)
	}
	select {
	case <-waiting:
	case <-ctx.Done():
		t.Fatal("a fetch waiting on the deleted topic did not return")
	}
	if got := listTopics(t, tb); !slices.Equal(got, []string{"kept"}) {
		t.Errorf("topics after delete: %v", got)
	}
	if d := partitionDirs(t, dir, "doomed"); len(d) != 0 {
		t.Errorf("partition directories left after delete: %v", d)
	}
	if resp, _ = adm.DeleteTopic(ctx, "doomed"); !errors.Is(resp.Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("second delete: %v, want UNKNOWN_TOPIC_OR_PARTITION", resp.Err)
	}
	// Produce to the deleted topic fails; the name can be created again,
	// with a new ID and no data.
	rc := dialRaw(t, tb.addr)
	if code, _ := rc.produceCode(11, "doomed", 0, batch("x")); code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("produce to deleted topic: %v", kerr.ErrorForCode(code))
	}
	newID := tb.createTopic(t, "doomed", 1)
	if newID == oldID {
		t.Fatal("re-created topic has the old ID")
	}
	end, err := adm.ListEndOffsets(ctx, "doomed")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := end.Lookup("doomed", 0); o.Offset != 0 {
		t.Errorf("re-created topic ends at %d, want 0", o.Offset)
	}
	// A client that knew the old topic sees a new ID; a fresh one produces.
	produceSync(t, tb.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner())), "doomed", 0, "new")

	// After a restart: the new topic with its record, the kept one intact.
	tb.stop(t)
	tb = startBroker(t, dir, nil)
	if got := listTopics(t, tb); !slices.Equal(got, []string{"doomed", "kept"}) {
		t.Errorf("topics after restart: %v", got)
	}
	if got := tb.consumeValues(t, "doomed", 0, 1); got[0] != "new" {
		t.Errorf("re-created topic holds %q", got)
	}
	if got := tb.consumeValues(t, "kept", 0, 1); got[0] != "k" {
		t.Errorf("kept topic holds %q", got)
	}
}

func TestDeleteTopicsErrors(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	idA := tb.createTopic(t, "a", 1)
	tb.createTopic(t, "b", 1)
	rc := dialRaw(t, tb.addr)
	name := func(s string) kmsg.DeleteTopicsRequestTopic {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = &s
		return rt
	}
	byID := func(id [16]byte) kmsg.DeleteTopicsRequestTopic {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.TopicID = id
		return rt
	}
	both := name("b")
	both.TopicID = idA
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Topics = []kmsg.DeleteTopicsRequestTopic{name("dup"), name("dup"), byID([16]byte{1}), both, name("nope")}
	resp := rc.roundTrip(req, 6).(*kmsg.DeleteTopicsResponse)
	want := []*kerr.Error{kerr.InvalidRequest, kerr.InvalidRequest, kerr.UnknownTopicID, kerr.InvalidRequest, kerr.UnknownTopicOrPartition}
	if len(resp.Topics) != len(want) {
		t.Fatalf("%d answers, want %d", len(resp.Topics), len(want))
	}
	for i, w := range want {
		wantCode(t, fmt.Sprintf("topic %d", i), resp.Topics[i].ErrorCode, w)
		if resp.Topics[i].ErrorMessage == nil {
			t.Errorf("topic %d: no error message", i)
		}
	}
	// By ID: the answer names the topic.
	req.Topics = []kmsg.DeleteTopicsRequestTopic{byID(idA)}
	resp = rc.roundTrip(req, 6).(*kmsg.DeleteTopicsResponse)
	if st := resp.Topics[0]; st.ErrorCode != 0 || st.Topic == nil || *st.Topic != "a" {
		t.Errorf("delete by ID: %v %v", kerr.ErrorForCode(st.ErrorCode), st.Topic)
	}
	// v0 names topics.
	v0 := kmsg.NewPtrDeleteTopicsRequest()
	v0.TopicNames = []string{"b", "a"}
	resp = rc.roundTrip(v0, 0).(*kmsg.DeleteTopicsResponse)
	wantCode(t, "v0 delete b", resp.Topics[0].ErrorCode, nil)
	wantCode(t, "v0 delete deleted a", resp.Topics[1].ErrorCode, kerr.UnknownTopicOrPartition)
	if got := listTopics(t, tb); len(got) != 0 {
		t.Errorf("topics left: %v", got)
	}
}

// A crash after the metadata forgot a topic but before its logs were
// deleted leaves logs no topic names: the next start deletes them, also
// when the name was created again meanwhile (a new ID).
func TestOrphanLogsDeletedAtStart(t *testing.T) {
	dir := t.TempDir()
	tb := startBroker(t, dir, nil)
	tb.createTopic(t, "gone", 2)
	tb.createTopic(t, "reborn", 1)
	cl := tb.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSync(t, cl, "gone", 0, "x")
	produceSync(t, cl, "reborn", 0, "old")
	tb.stop(t)

	// What the metadata holds after the crash: "gone" deleted, "reborn"
	// deleted and created again (another id), written as the embedded
	// backend writes its file.
	path := filepath.Join(dir, "cluster-metadata.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	var kept []any
	for _, raw := range m["topics"].([]any) {
		topic := raw.(map[string]any)
		switch topic["name"] {
		case "gone":
			continue
		case "reborn":
			topic["id"] = engine.NewTopicID().String()
		}
		kept = append(kept, topic)
	}
	m["topics"] = kept
	if data, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}

	tb = startBroker(t, dir, nil)
	if d := partitionDirs(t, dir, "gone"); len(d) != 0 {
		t.Errorf("logs of the deleted topic left: %v", d)
	}
	if got := listTopics(t, tb); !slices.Equal(got, []string{"reborn"}) {
		t.Errorf("topics: %v", got)
	}
	end, err := tb.admin(t).ListEndOffsets(ctxTimeout(t, 10*time.Second), "reborn")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := end.Lookup("reborn", 0); o.Offset != 0 {
		t.Errorf("re-created topic ends at %d: it kept the old topic's data", o.Offset)
	}
}

func TestCreatePartitions(t *testing.T) {
	dir := t.TempDir()
	tb := startBroker(t, dir, nil)
	tb.createTopic(t, "grow", 1)
	cl := tb.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSync(t, cl, "grow", 0, "p0")
	ctx := ctxTimeout(t, 20*time.Second)
	adm := tb.admin(t)

	if r, err := adm.ValidateCreatePartitions(ctx, 2, "grow"); err != nil || r["grow"].Err != nil {
		t.Fatalf("validate: %v %v", err, r["grow"].Err)
	}
	if got := tb.Broker.topic("grow"); len(got.Partitions) != 1 {
		t.Fatalf("validate-only added partitions: %d", len(got.Partitions))
	}
	if r, err := adm.CreatePartitions(ctx, 2, "grow"); err != nil || r["grow"].Err != nil {
		t.Fatalf("add 2: %v %v", err, r["grow"].Err)
	}
	if r, err := adm.UpdatePartitions(ctx, 4, "grow"); err != nil || r["grow"].Err != nil {
		t.Fatalf("set 4: %v %v", err, r["grow"].Err)
	}
	for _, c := range []struct {
		set  int
		want *kerr.Error
	}{{4, kerr.InvalidPartitions}, {2, kerr.InvalidPartitions}} {
		r, err := adm.UpdatePartitions(ctx, c.set, "grow")
		if err != nil || !errors.Is(r["grow"].Err, c.want) {
			t.Errorf("set %d: %v %v, want %v", c.set, err, r["grow"].Err, c.want)
		}
	}
	// The new partitions take records (from a client that learns of them),
	// and metadata lists them.
	produceSync(t, tb.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner())), "grow", 3, "p3")
	details, err := adm.ListTopics(ctx, "grow")
	if err != nil || len(details["grow"].Partitions) != 4 {
		t.Fatalf("metadata after growing: %v %+v", err, details["grow"])
	}

	// Raw: an unknown topic, a topic named twice, a bad assignment.
	rc := dialRaw(t, tb.addr)
	topic := func(name string, count int32, assign ...[]int32) kmsg.CreatePartitionsRequestTopic {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = name, count
		for _, a := range assign {
			ra := kmsg.NewCreatePartitionsRequestTopicAssignment()
			ra.Replicas = a
			rt.Assignment = append(rt.Assignment, ra)
		}
		return rt
	}
	self := tb.Broker.self().ID
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Topics = []kmsg.CreatePartitionsRequestTopic{
		topic("nope", 3),
		topic("twice", 3), topic("twice", 3),
		topic("grow", 6, []int32{self}),                      // one assignment for two partitions
		topic("grow", 6, []int32{self}, []int32{self, self}), // named twice too, but checked first
	}
	resp := rc.roundTrip(req, 3).(*kmsg.CreatePartitionsResponse)
	want := []*kerr.Error{kerr.UnknownTopicOrPartition, kerr.InvalidRequest, kerr.InvalidRequest, kerr.InvalidRequest, kerr.InvalidRequest}
	for i, w := range want {
		wantCode(t, fmt.Sprintf("topic %d", i), resp.Topics[i].ErrorCode, w)
	}
	req.Topics = []kmsg.CreatePartitionsRequestTopic{topic("grow", 6, []int32{self})}
	resp = rc.roundTrip(req, 3).(*kmsg.CreatePartitionsResponse)
	wantCode(t, "too few assignments", resp.Topics[0].ErrorCode, kerr.InvalidReplicaAssignment)
	req.Topics = []kmsg.CreatePartitionsRequestTopic{topic("grow", 5, []int32{self + 1})}
	resp = rc.roundTrip(req, 3).(*kmsg.CreatePartitionsResponse)
	wantCode(t, "assignment to another broker", resp.Topics[0].ErrorCode, kerr.InvalidReplicaAssignment)
	req.Topics = []kmsg.CreatePartitionsRequestTopic{topic("grow", 5, []int32{self})}
	resp = rc.roundTrip(req, 0).(*kmsg.CreatePartitionsResponse)
	wantCode(t, "v0 with a valid assignment", resp.Topics[0].ErrorCode, nil)

	// The partition count and the data survive a restart.
	tb.stop(t)
	if d := partitionDirs(t, dir, "grow"); len(d) != 5 {
		t.Errorf("partition directories: %v", d)
	}
	tb = startBroker(t, dir, nil)
	if got := len(tb.Broker.topic("grow").Partitions); got != 5 {
		t.Errorf("%d partitions after restart, want 5", got)
	}
	if got := tb.consumeValues(t, "grow", 3, 1); got[0] != "p3" {
		t.Errorf("partition 3 holds %q", got)
	}
	if got := tb.consumeValues(t, "grow", 0, 1); got[0] != "p0" {
		t.Errorf("partition 0 holds %q", got)
	}
}

func TestDeleteRecords(t *testing.T) {
	dir := t.TempDir()
	small := func(c *config.Config) { c.LogSegmentBytes = 200 }
	tb := startBroker(t, dir, small)
	tb.createTopic(t, "dr", 2)
	cl := tb.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 10 {
		produceSync(t, cl, "dr", 0, fmt.Sprintf("v%d", i))
	}
	segs := func() int {
		l, _, _ := tb.store.Log(engine.Partition{Topic: "dr", Partition: 0})
		return len(l.SegmentBases())
	}
	before := segs()
	if before < 3 {
		t.Fatalf("only %d segments: the test needs several", before)
	}
	ctx := ctxTimeout(t, 20*time.Second)
	adm := tb.admin(t)
	del := func(partition int32, offset int64) (int64, error) {
		t.Helper()
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: "dr", Partition: partition, At: offset})
		r, err := adm.DeleteRecords(ctx, os)
		if err != nil {
			t.Fatal(err)
		}
		d, ok := r.Lookup("dr", partition)
		if !ok {
			t.Fatalf("no answer for dr-%d", partition)
		}
		return d.LowWatermark, d.Err
	}
	if low, err := del(0, 6); err != nil || low != 6 {
		t.Fatalf("delete before 6: low watermark %d, %v", low, err)
	}
	if after := segs(); after >= before {
		t.Errorf("%d segments after deleting records, %d before", after, before)
	}
	if low, err := del(0, 3); err != nil || low != 6 {
		t.Errorf("delete before 3 after 6: low watermark %d, %v, want 6", low, err)
	}
	if _, err := del(0, 11); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Errorf("delete past the high watermark: %v", err)
	}
	if _, err := del(0, -5); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Errorf("delete before -5: %v", err)
	}
	rreq := kmsg.NewPtrDeleteRecordsRequest()
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = "dr"
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition = 2
	rt.Partitions = append(rt.Partitions, rp)
	rreq.Topics = append(rreq.Topics, rt)
	rresp := dialRaw(t, tb.addr).roundTrip(rreq, 2).(*kmsg.DeleteRecordsResponse)
	wantCode(t, "unknown partition", rresp.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
	if low, err := del(1, -1); err != nil || low != 0 {
		t.Errorf("delete everything of an empty partition: %d, %v", low, err)
	}
	start, err := adm.ListStartOffsets(ctx, "dr")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := start.Lookup("dr", 0); o.Offset != 6 {
		t.Errorf("start offset %d, want 6", o.Offset)
	}
	// A consumer starting at 0 gets OFFSET_OUT_OF_RANGE and, resetting to
	// the earliest offset, reads from 6.
	consume := func() []string {
		cc := tb.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"dr": {0: kgo.NewOffset().At(0)}}), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		var got []string
		for len(got) < 4 {
			fs := cc.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("consumed %q", got)
			}
			fs.EachRecord(func(r *kgo.Record) { got = append(got, fmt.Sprintf("%d:%s", r.Offset, r.Value)) })
		}
		return got
	}
	want := []string{"6:v6", "7:v7", "8:v8", "9:v9"}
	if got := consume(); !slices.Equal(got, want) {
		t.Errorf("consumed %q, want %q", got, want)
	}
	if low, err := del(0, -1); err != nil || low != 10 {
		t.Errorf("delete up to the high watermark: %d, %v", low, err)
	}
	tb.stop(t)
	tb = startBroker(t, dir, small)
	start, err = tb.admin(t).ListStartOffsets(ctxTimeout(t, 10*time.Second), "dr")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := start.Lookup("dr", 0); o.Offset != 10 {
		t.Errorf("start offset after restart %d, want 10", o.Offset)
	}
}

func TestDescribeCluster(t *testing.T) {
	tb := startBroker(t, t.TempDir(), func(c *config.Config) { c.ID = 7 })
	cl := tb.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := ctxTimeout(t, 10*time.Second)
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeClusterAuthorizedOperations = true
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 || resp.ClusterID != *meta.ClusterID || resp.ControllerID != 7 || len(resp.Brokers) != 1 {
		t.Fatalf("describe cluster: %+v", resp)
	}
	if b := resp.Brokers[0]; b.NodeID != 7 || fmt.Sprintf("%s:%d", b.Host, b.Port) != fmt.Sprintf("%s:%d", meta.Brokers[0].Host, meta.Brokers[0].Port) {
		t.Errorf("broker %+v, metadata says %+v", b, meta.Brokers[0])
	}
	rc := dialRaw(t, tb.addr)
	req.EndpointType = 2
	raw := rc.roundTrip(req, 1).(*kmsg.DescribeClusterResponse)
	wantCode(t, "controller endpoints", raw.ErrorCode, kerr.UnsupportedEndpointType)
	brokers, err := tb.admin(t).ListBrokers(ctx)
	if err != nil || len(brokers) != 1 || brokers[0].NodeID != 7 {
		t.Errorf("kadm ListBrokers: %v %+v", err, brokers)
	}
}

func TestOffsetForLeaderEpoch(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	tb.createTopic(t, "ep", 2)
	produceSync(t, tb.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner())), "ep", 0, "a", "b", "c")
	ctx := ctxTimeout(t, 10*time.Second)
	var req kadm.OffsetForLeaderEpochRequest
	req.Add("ep", 0, 0)
	req.Add("ep", 1, 0)
	res, err := tb.admin(t).OffsetForLeaderEpoch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	check := func(p int32, epoch int32, end int64, want error) {
		t.Helper()
		r, ok := res["ep"][p]
		if !ok {
			t.Fatalf("no answer for ep-%d", p)
		}
		if !errors.Is(r.Err, want) && !(want == nil && r.Err == nil) {
			t.Errorf("ep-%d: %v, want %v", p, r.Err, want)
		}
		if want == nil && (r.LeaderEpoch != epoch || r.EndOffset != end) {
			t.Errorf("ep-%d: epoch %d end %d, want %d %d", p, r.LeaderEpoch, r.EndOffset, epoch, end)
		}
	}
	check(0, 0, 3, nil)
	check(1, 0, 0, nil) // nothing written yet: epoch 0 still ends at the log end

	rc := dialRaw(t, tb.addr)
	raw := func(v int16, current, epoch int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.ReplicaID = -1
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = "ep"
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, current, epoch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return rc.roundTrip(req, v).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
	}
	for v := int16(0); v <= 4; v++ {
		if p := raw(v, -1, 0); p.ErrorCode != 0 || p.EndOffset != 3 {
			t.Errorf("v%d epoch 0: %v end %d", v, kerr.ErrorForCode(p.ErrorCode), p.EndOffset)
		}
		if p := raw(v, -1, 3); p.ErrorCode != 0 || p.EndOffset != -1 || v >= 1 && p.LeaderEpoch != -1 {
			t.Errorf("v%d epoch 3 (unknown, above the latest): %v epoch %d end %d", v, kerr.ErrorForCode(p.ErrorCode), p.LeaderEpoch, p.EndOffset)
		}
	}
	wantCode(t, "current epoch 1", raw(4, 1, 0).ErrorCode, kerr.UnknownLeaderEpoch)
	wantCode(t, "current epoch -3", raw(4, -3, 0).ErrorCode, kerr.FencedLeaderEpoch)
	wantCode(t, "current epoch 0", raw(4, 0, 0).ErrorCode, nil)
	unknown := kmsg.NewPtrOffsetForLeaderEpochRequest()
	unknown.ReplicaID = -1
	for _, topic := range []string{"ep", "nope"} {
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition = 5
		rt.Partitions = append(rt.Partitions, rp)
		unknown.Topics = append(unknown.Topics, rt)
	}
	resp := rc.roundTrip(unknown, 4).(*kmsg.OffsetForLeaderEpochResponse)
	wantCode(t, "unknown partition", resp.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "unknown topic", resp.Topics[1].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
}

func TestListOffsetsByTimestamp(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	tb.createTopic(t, "ts", 2)
	cl := tb.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := ctxTimeout(t, 10*time.Second)
	// One batch per record: timestamps 1000, 2000, 3000, 2500 at offsets 0-3.
	for _, ms := range []int64{1000, 2000, 3000, 2500} {
		r := &kgo.Record{Topic: "ts", Partition: 0, Value: []byte("x"), Timestamp: time.UnixMilli(ms)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := tb.admin(t)
	for _, c := range []struct{ after, offset, ts int64 }{
		{0, 0, 1000}, {1000, 0, 1000}, {1500, 1, 2000}, {2600, 2, 3000}, {3000, 2, 3000},
		{3001, 4, -1}, // kadm turns "none" (-1) into the end offset
	} {
		res, err := adm.ListOffsetsAfterMilli(ctx, c.after, "ts")
		if err != nil {
			t.Fatal(err)
		}
		o, _ := res.Lookup("ts", 0)
		if o.Err != nil || o.Offset != c.offset || (c.offset >= 0 && o.Timestamp != c.ts) {
			t.Errorf("after %d: offset %d timestamp %d (%v), want %d %d", c.after, o.Offset, o.Timestamp, o.Err, c.offset, c.ts)
		}
	}
	maxes, err := adm.ListMaxTimestampOffsets(ctx, "ts")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := maxes.Lookup("ts", 0); o.Err != nil || o.Offset != 2 || o.Timestamp != 3000 {
		t.Errorf("max timestamp: %+v, want offset 2 timestamp 3000", o)
	}
	if o, _ := maxes.Lookup("ts", 1); o.Err != nil || o.Offset != -1 {
		t.Errorf("max timestamp of an empty partition: %+v", o)
	}
	// -3 before v7 is not a lookup Kafka knows.
	rc := dialRaw(t, tb.addr)
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "ts"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = -3, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	wantCode(t, "v6 max timestamp", rc.roundTrip(req, 6).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode, kerr.InvalidRequest)
	if p := rc.roundTrip(req, 7).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != 2 || p.Timestamp != 3000 {
		t.Errorf("v7 max timestamp: %v offset %d timestamp %d", kerr.ErrorForCode(p.ErrorCode), p.Offset, p.Timestamp)
	}
	// A timestamp newer than every record: no offset.
	req.Topics[0].Partitions[0].Timestamp = 3001
	for v := int16(1); v <= 9; v++ {
		if p := rc.roundTrip(req, v).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != -1 || p.Timestamp != -1 {
			t.Errorf("v%d after 3001: %v offset %d timestamp %d, want -1 -1", v, kerr.ErrorForCode(p.ErrorCode), p.Offset, p.Timestamp)
		}
	}
}

func TestDescribeLogDirs(t *testing.T) {
	dir := t.TempDir()
	tb := startBroker(t, dir, nil)
	tb.createTopic(t, "ld", 2)
	tb.createTopic(t, "other", 1)
	produceSync(t, tb.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner())), "ld", 0, "0123456789")
	ctx := ctxTimeout(t, 10*time.Second)
	adm := tb.admin(t)
	all, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	dirs := all.Sorted()
	if len(dirs) != 1 {
		t.Fatalf("%d log dirs, want 1", len(dirs))
	}
	d := dirs[0]
	if d.Err != nil || d.Dir != dir || d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes {
		t.Errorf("log dir %+v (want %s)", d, dir)
	}
	size := func(topic string, p int32) int64 {
		t.Helper()
		dp, ok := d.Topics[topic][p]
		if !ok {
			t.Fatalf("%s-%d not described", topic, p)
		}
		return dp.Size
	}
	// One batch of one record with a 10-byte value: the 61-byte header and
	// the record (7 bytes of framing with this value and no key or headers).
	if got := size("ld", 0); got != 61+7+10 {
		t.Errorf("ld-0 size %d, want %d", got, 61+7+10)
	}
	if got := size("ld", 1); got != 0 {
		t.Errorf("ld-1 size %d, want 0", got)
	}
	if got := size("other", 0); got != 0 {
		t.Errorf("other-0 size %d, want 0", got)
	}
	some, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{"ld": {1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	d = some.Sorted()[0]
	if len(d.Topics) != 1 || len(d.Topics["ld"]) != 1 {
		t.Errorf("asked for ld-1, got %v", d.Topics)
	}
	// Unknown topics and partitions are left out.
	req := kmsg.NewPtrDescribeLogDirsRequest()
	for topic, ps := range map[string][]int32{"nope": {0}, "ld": {7, 0, 0}} {
		rt := kmsg.NewDescribeLogDirsRequestTopic()
		rt.Topic, rt.Partitions = topic, ps
		req.Topics = append(req.Topics, rt)
	}
	resp := dialRaw(t, tb.addr).roundTrip(req, 4).(*kmsg.DescribeLogDirsResponse)
	if len(resp.Dirs) != 1 || len(resp.Dirs[0].Topics) != 1 || resp.Dirs[0].Topics[0].Topic != "ld" || len(resp.Dirs[0].Topics[0].Partitions) != 1 {
		t.Errorf("asked for nope-0, ld-7 and ld-0 twice, got %+v", resp.Dirs)
	}
	if _, err := os.Stat(d.Dir); err != nil {
		t.Error(err)
	}
}

// Deleting and creating a topic again while clients produce to it and
// fetch from it: requests in flight get errors, never a crash, and the
// broker keeps serving.
func TestDeleteTopicUnderLoad(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	tb.createTopic(t, "churn", 2)
	l := newLedger(t, tb, "steady")
	stop := make(chan struct{})
	done := make(chan struct{}, 4)
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			rc := dialRaw(t, tb.addr)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if g%2 == 0 {
					rc.produceCode(11, "churn", int32(i%2), batch("x"))
				} else {
					req := fetchReq("churn", [16]byte{}, int32(i%2), 0, 1<<20)
					req.SetVersion(12)
					rc.roundTrip(req, 12)
				}
			}
		}()
	}
	adm := tb.admin(t)
	ctx := ctxTimeout(t, 30*time.Second)
	for range 20 {
		if r, err := adm.DeleteTopic(ctx, "churn"); err != nil || r.Err != nil {
			t.Fatalf("delete: %v %v", err, r.Err)
		}
		if _, err := adm.CreateTopic(ctx, 2, 1, nil, "churn"); err != nil {
			t.Fatalf("create: %v", err)
		}
	}
	close(stop)
	for range 4 {
		<-done
	}
	l.add(t, "after churn")
	l.check(t, "after churn")
}

// A topic whose logs cannot all be created is not created at all: it is not
// listed, its other partitions' logs are gone, the broker restarts, and the
// name can be created once the obstacle is gone.
func TestCreateTopicFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	tb := startBroker(t, dir, nil)
	blocker := filepath.Join(dir, "half-2")
	if err := os.WriteFile(blocker, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := tb.admin(t).CreateTopic(ctxTimeout(t, 10*time.Second), 3, 1, nil, "half")
	if err == nil {
		t.Fatal("created a topic whose partition 2 cannot have a directory")
	}
	if got := listTopics(t, tb); len(got) != 0 {
		t.Errorf("topics after the failed create: %v", got)
	}
	if d := partitionDirs(t, dir, "half"); len(d) != 0 {
		t.Errorf("partition directories left: %v", d)
	}
	tb.stop(t)
	tb = startBroker(t, dir, nil)
	if got := listTopics(t, tb); len(got) != 0 {
		t.Errorf("topics after a restart: %v", got)
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	tb.createTopic(t, "half", 3)
}
