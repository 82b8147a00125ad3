package broker

// Every served API, through kgo/kadm and through raw requests at each
// served version.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/engine"
)

// served is what ApiVersions must advertise, exactly.
var served = map[int16][2]int16{
	0:  {3, 11}, // Produce
	1:  {4, 17}, // Fetch
	2:  {0, 9},  // ListOffsets
	3:  {0, 12}, // Metadata
	4:  {0, 7},  // LeaderAndIsr
	5:  {0, 4},  // StopReplica
	6:  {0, 8},  // UpdateMetadata
	7:  {1, 3},  // ControlledShutdown
	8:  {0, 9},  // OffsetCommit
	9:  {0, 9},  // OffsetFetch
	10: {0, 5},  // FindCoordinator
	11: {0, 9},  // JoinGroup
	12: {0, 4},  // Heartbeat
	13: {0, 5},  // LeaveGroup
	14: {0, 5},  // SyncGroup
	15: {0, 5},  // DescribeGroups
	16: {0, 5},  // ListGroups
	17: {0, 1},  // SaslHandshake
	18: {0, 4},  // ApiVersions
	19: {0, 7},  // CreateTopics
	20: {0, 6},  // DeleteTopics
	21: {0, 2},  // DeleteRecords
	22: {0, 5},  // InitProducerId
	23: {0, 4},  // OffsetForLeaderEpoch
	24: {0, 5},  // AddPartitionsToTxn
	25: {0, 4},  // AddOffsetsToTxn
	26: {0, 4},  // EndTxn
	27: {0, 1},  // WriteTxnMarkers
	28: {0, 3},  // TxnOffsetCommit
	29: {0, 3},  // DescribeAcls
	30: {0, 3},  // CreateAcls
	31: {0, 3},  // DeleteAcls
	32: {0, 4},  // DescribeConfigs
	33: {0, 2},  // AlterConfigs
	35: {0, 4},  // DescribeLogDirs
	36: {0, 2},  // SaslAuthenticate
	37: {0, 3},  // CreatePartitions
	42: {0, 2},  // DeleteGroups
	43: {0, 2},  // ElectLeaders
	44: {0, 1},  // IncrementalAlterConfigs
	45: {0, 0},  // AlterPartitionReassignments
	46: {0, 0},  // ListPartitionReassignments
	47: {0, 0},  // OffsetDelete
	48: {0, 1},  // DescribeClientQuotas
	49: {0, 1},  // AlterClientQuotas
	50: {0, 0},  // DescribeUserScramCredentials
	51: {0, 0},  // AlterUserScramCredentials
	56: {0, 3},  // AlterPartition
	60: {0, 1},  // DescribeCluster
	61: {0, 0},  // DescribeProducers
	65: {0, 0},  // DescribeTransactions
	66: {0, 1},  // ListTransactions
}

func checkApiKeys(t *testing.T, what string, keys []kmsg.ApiVersionsResponseApiKey) {
	t.Helper()
	got := map[int16][2]int16{}
	for _, k := range keys {
		if _, dup := got[k.ApiKey]; dup {
			t.Errorf("%s: key %d listed twice", what, k.ApiKey)
		}
		got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	if fmt.Sprint(got) != fmt.Sprint(served) {
		t.Errorf("%s: advertised %v, want exactly %v", what, got, served)
	}
}

func TestApiVersions(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)

	t.Run("kgo", func(t *testing.T) {
		cl := tb.client(t)
		resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctxTimeout(t, 10*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != 0 {
			t.Fatalf("error %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		checkApiKeys(t, "kgo ApiVersions", resp.ApiKeys)
	})

	t.Run("each version", func(t *testing.T) {
		rc := dialRaw(t, tb.addr)
		for v := int16(0); v <= 4; v++ {
			req := kmsg.NewPtrApiVersionsRequest()
			req.ClientSoftwareName, req.ClientSoftwareVersion = "sluice-test", "1.0.0"
			resp := rc.roundTrip(req, v).(*kmsg.ApiVersionsResponse)
			if resp.ErrorCode != 0 {
				t.Fatalf("v%d: error %v", v, kerr.ErrorForCode(resp.ErrorCode))
			}
			checkApiKeys(t, fmt.Sprintf("v%d", v), resp.ApiKeys)
		}
	})

	t.Run("unsupported version answers v0", func(t *testing.T) {
		for _, v := range []int16{5, 6, 100} {
			rc := dialRaw(t, tb.addr)
			req := kmsg.NewPtrApiVersionsRequest()
			req.SetVersion(v)
			req.ClientSoftwareName, req.ClientSoftwareVersion = "sluice-test", "1.0.0"
			corr := rc.send(req)
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.SetVersion(0)
			rc.readResponse(corr, resp, 5*time.Second)
			wantCode(t, fmt.Sprintf("ApiVersions v%d", v), resp.ErrorCode, kerr.UnsupportedVersion)
			checkApiKeys(t, fmt.Sprintf("ApiVersions v%d answer", v), resp.ApiKeys)
			// The connection stays usable: the client retries at v0.
			resp = rc.roundTrip(kmsg.NewPtrApiVersionsRequest(), 0).(*kmsg.ApiVersionsResponse)
			if resp.ErrorCode != 0 {
				t.Errorf("ApiVersions v0 after the downgrade: %v", kerr.ErrorForCode(resp.ErrorCode))
			}
		}
	})

	t.Run("bad client software", func(t *testing.T) {
		rc := dialRaw(t, tb.addr)
		for _, sw := range [][2]string{{"bad name", "1.0"}, {"", "1.0"}, {"client", "1.0-"}, {"-client", "1"}} {
			for _, v := range []int16{3, 4} {
				req := kmsg.NewPtrApiVersionsRequest()
				req.ClientSoftwareName, req.ClientSoftwareVersion = sw[0], sw[1]
				resp := rc.roundTrip(req, v).(*kmsg.ApiVersionsResponse)
				wantCode(t, fmt.Sprintf("v%d software %q %q", v, sw[0], sw[1]), resp.ErrorCode, kerr.InvalidRequest)
			}
		}
		// Versions before 3 carry no software name.
		resp := rc.roundTrip(kmsg.NewPtrApiVersionsRequest(), 2).(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode != 0 {
			t.Errorf("v2: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
	})
}

func metadataReq(allowAuto bool, topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = allowAuto
	req.Topics = []kmsg.MetadataRequestTopic{}
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func TestMetadata(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	id := tb.createTopic(t, "existing", 3)
	if id == ([16]byte{}) {
		t.Fatal("CreateTopics returned a zero topic ID")
	}
	rc := dialRaw(t, tb.addr)

	t.Run("each version", func(t *testing.T) {
		for v := int16(0); v <= 12; v++ {
			resp := rc.roundTrip(metadataReq(false, "existing"), v).(*kmsg.MetadataResponse)
			if len(resp.Brokers) != 1 || resp.Brokers[0].Host != "127.0.0.1" || fmt.Sprintf("127.0.0.1:%d", resp.Brokers[0].Port) != tb.addr {
				t.Errorf("v%d: brokers %+v, want the one at %s", v, resp.Brokers, tb.addr)
			}
			if len(resp.Topics) != 1 {
				t.Fatalf("v%d: %d topics", v, len(resp.Topics))
			}
			mt := resp.Topics[0]
			if mt.ErrorCode != 0 || *mt.Topic != "existing" || len(mt.Partitions) != 3 {
				t.Errorf("v%d: topic %v %q with %d partitions", v, kerr.ErrorForCode(mt.ErrorCode), *mt.Topic, len(mt.Partitions))
			}
			for i, p := range mt.Partitions {
				if p.Partition != int32(i) || p.Leader != 0 || !slices.Equal(p.Replicas, []int32{0}) || !slices.Equal(p.ISR, []int32{0}) {
					t.Errorf("v%d: partition %+v", v, p)
				}
			}
			wantID := [16]byte{}
			if v >= 10 {
				wantID = id
			}
			if mt.TopicID != wantID {
				t.Errorf("v%d: topic ID %x, want %x", v, mt.TopicID, wantID)
			}
		}
	})

	t.Run("auto-create", func(t *testing.T) {
		for v := int16(0); v <= 12; v++ {
			name := fmt.Sprintf("auto-v%d", v)
			resp := rc.roundTrip(metadataReq(true, name), v).(*kmsg.MetadataResponse)
			mt := resp.Topics[0]
			if mt.ErrorCode != 0 || len(mt.Partitions) != 1 {
				t.Errorf("v%d: auto-created %s: %v with %d partitions, want 1 (num.partitions)", v, name, kerr.ErrorForCode(mt.ErrorCode), len(mt.Partitions))
			}
			if v >= 10 && mt.TopicID == ([16]byte{}) {
				t.Errorf("v%d: auto-created topic has no ID", v)
			}
			if tb.topic(name) == nil {
				t.Errorf("v%d: %s was not created", v, name)
			}
		}
	})

	t.Run("auto-create refused by the request", func(t *testing.T) {
		for v := int16(4); v <= 12; v++ {
			resp := rc.roundTrip(metadataReq(false, "not-allowed"), v).(*kmsg.MetadataResponse)
			wantCode(t, fmt.Sprintf("v%d", v), resp.Topics[0].ErrorCode, kerr.UnknownTopicOrPartition)
		}
		if tb.topic("not-allowed") != nil {
			t.Error("not-allowed was created")
		}
	})

	t.Run("invalid name", func(t *testing.T) {
		for _, name := range []string{"bad name", "..", "a/b", strings.Repeat("x", 250), ""} {
			resp := rc.roundTrip(metadataReq(true, name), 12).(*kmsg.MetadataResponse)
			wantCode(t, fmt.Sprintf("topic %q", name), resp.Topics[0].ErrorCode, kerr.InvalidTopicException)
		}
	})

	t.Run("by topic ID", func(t *testing.T) {
		req := kmsg.NewPtrMetadataRequest()
		known, unknown := kmsg.NewMetadataRequestTopic(), kmsg.NewMetadataRequestTopic()
		known.TopicID = id
		unknown.TopicID = [16]byte{1, 2, 3}
		req.Topics = []kmsg.MetadataRequestTopic{known, unknown}
		resp := rc.roundTrip(req, 12).(*kmsg.MetadataResponse)
		if len(resp.Topics) != 2 {
			t.Fatalf("%d topics, want 2", len(resp.Topics))
		}
		if k := resp.Topics[0]; k.ErrorCode != 0 || k.Topic == nil || *k.Topic != "existing" || k.TopicID != id || len(k.Partitions) != 3 {
			t.Errorf("known ID: %+v", k)
		}
		wantCode(t, "unknown topic ID", resp.Topics[1].ErrorCode, kerr.UnknownTopicID)
	})

	t.Run("all topics", func(t *testing.T) {
		for _, v := range []int16{0, 1, 12} {
			req := kmsg.NewPtrMetadataRequest()
			if v == 0 {
				req.Topics = []kmsg.MetadataRequestTopic{} // v0: empty means all
			}
			resp := rc.roundTrip(req, v).(*kmsg.MetadataResponse)
			var names []string
			for _, mt := range resp.Topics {
				names = append(names, *mt.Topic)
			}
			if !slices.Contains(names, "existing") || !slices.Contains(names, "auto-v0") || slices.Contains(names, "not-allowed") {
				t.Errorf("v%d: all topics: %v", v, names)
			}
		}
		// v1+: an empty list means none.
		resp := rc.roundTrip(metadataReq(true), 1).(*kmsg.MetadataResponse)
		if len(resp.Topics) != 0 {
			t.Errorf("v1 empty list: %d topics, want none", len(resp.Topics))
		}
	})
}

func TestMetadataAutoCreateConfig(t *testing.T) {
	off := false
	tb := startBroker(t, t.TempDir(), func(c *config.Config) { c.AutoCreateTopics = &off })
	rc := dialRaw(t, tb.addr)
	resp := rc.roundTrip(metadataReq(true, "nope"), 12).(*kmsg.MetadataResponse)
	wantCode(t, "auto.create.topics.enable=false", resp.Topics[0].ErrorCode, kerr.UnknownTopicOrPartition)
	if tb.topic("nope") != nil {
		t.Error("topic created with auto.create.topics.enable=false")
	}

	tb4 := startBroker(t, t.TempDir(), func(c *config.Config) { c.NumPartitions = 4 })
	rc4 := dialRaw(t, tb4.addr)
	resp = rc4.roundTrip(metadataReq(true, "four"), 12).(*kmsg.MetadataResponse)
	if mt := resp.Topics[0]; mt.ErrorCode != 0 || len(mt.Partitions) != 4 {
		t.Errorf("num.partitions=4: auto-created with %d partitions (%v)", len(mt.Partitions), kerr.ErrorForCode(mt.ErrorCode))
	}
}

func createReq(validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 5000
	req.ValidateOnly = validateOnly
	req.Topics = topics
	return req
}

func createTopicReq(name string, partitions int32, rf int16, configs ...string) kmsg.CreateTopicsRequestTopic {
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	for i := 0; i+1 < len(configs); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = configs[i], kmsg.StringPtr(configs[i+1])
		rt.Configs = append(rt.Configs, c)
	}
	return rt
}

func TestCreateTopics(t *testing.T) {
	tb := startBroker(t, t.TempDir(), func(c *config.Config) { c.NumPartitions = 3 })
	rc := dialRaw(t, tb.addr)
	create := func(v int16, validateOnly bool, rt kmsg.CreateTopicsRequestTopic) kmsg.CreateTopicsResponseTopic {
		t.Helper()
		resp := rc.roundTrip(createReq(validateOnly, rt), v).(*kmsg.CreateTopicsResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].Topic != rt.Topic {
			t.Fatalf("v%d: response topics %+v", v, resp.Topics)
		}
		return resp.Topics[0]
	}
	partitionsOf := func(name string) int {
		ts := tb.topic(name)
		if ts == nil {
			return 0
		}
		return len(ts.Partitions)
	}

	t.Run("each version", func(t *testing.T) {
		for v := int16(0); v <= 7; v++ {
			name := fmt.Sprintf("ct-v%d", v)
			st := create(v, false, createTopicReq(name, 2, 1))
			if st.ErrorCode != 0 {
				t.Fatalf("v%d: %v", v, kerr.ErrorForCode(st.ErrorCode))
			}
			if n := partitionsOf(name); n != 2 {
				t.Errorf("v%d: %d partitions, want 2", v, n)
			}
			if v >= 5 && (st.NumPartitions != 2 || st.ReplicationFactor != 1) {
				t.Errorf("v%d: response says %d partitions, factor %d", v, st.NumPartitions, st.ReplicationFactor)
			}
			if v >= 7 {
				if st.TopicID == ([16]byte{}) || st.TopicID != tb.topic(name).ID {
					t.Errorf("v7: topic ID %x, the broker has %x", st.TopicID, tb.topic(name).ID)
				}
			}
		}
	})

	t.Run("defaults", func(t *testing.T) {
		st := create(7, false, createTopicReq("defaults", -1, -1))
		if st.ErrorCode != 0 || st.NumPartitions != 3 || st.ReplicationFactor != 1 {
			t.Errorf("-1/-1: %v, %d partitions, factor %d; want the defaults 3 and 1", kerr.ErrorForCode(st.ErrorCode), st.NumPartitions, st.ReplicationFactor)
		}
		if n := partitionsOf("defaults"); n != 3 {
			t.Errorf("-1/-1: %d partitions, want num.partitions (3)", n)
		}
		st = create(7, false, createTopicReq("defaults-rf", 5, -1))
		if st.ErrorCode != 0 || partitionsOf("defaults-rf") != 5 || st.ReplicationFactor != 1 {
			t.Errorf("5/-1: %v, %d partitions, factor %d", kerr.ErrorForCode(st.ErrorCode), partitionsOf("defaults-rf"), st.ReplicationFactor)
		}
	})

	t.Run("validate only", func(t *testing.T) {
		for v := int16(1); v <= 7; v++ {
			name := fmt.Sprintf("validate-v%d", v)
			st := create(v, true, createTopicReq(name, 4, 1, "retention.ms", "1000"))
			if st.ErrorCode != 0 {
				t.Errorf("v%d: validate_only: %v", v, kerr.ErrorForCode(st.ErrorCode))
			}
			if v >= 5 && st.NumPartitions != 4 {
				t.Errorf("v%d: validate_only reports %d partitions", v, st.NumPartitions)
			}
			if tb.topic(name) != nil {
				t.Errorf("v%d: validate_only created %s", v, name)
			}
			// It must not have reached the metadata either.
			if _, ok := tb.coord.Topic(name); ok {
				t.Errorf("v%d: validate_only recorded %s", v, name)
			}
		}
		// Validation errors are still reported.
		wantCode(t, "validate_only rf 2", create(7, true, createTopicReq("validate-bad", 1, 2)).ErrorCode, kerr.InvalidReplicationFactor)
	})

	t.Run("errors", func(t *testing.T) {
		cases := []struct {
			rt   kmsg.CreateTopicsRequestTopic
			want *kerr.Error
		}{
			{createTopicReq("rf2", 1, 2), kerr.InvalidReplicationFactor},
			{createTopicReq("rf0", 1, 0), kerr.InvalidReplicationFactor},
			{createTopicReq("ct-v0", 1, 1), kerr.TopicAlreadyExists},
			{createTopicReq("zero-partitions", 0, 1), kerr.InvalidPartitions},
			{createTopicReq("neg-partitions", -2, 1), kerr.InvalidPartitions},
			{createTopicReq("unknown-config", 1, 1, "no.such.key", "1"), kerr.InvalidConfig},
			{createTopicReq("bad-policy", 1, 1, "cleanup.policy", "remove"), kerr.InvalidConfig},
			{createTopicReq("bad-value", 1, 1, "retention.ms", "soon"), kerr.InvalidConfig},
			{createTopicReq("bad name", 1, 1), kerr.InvalidTopicException},
			{createTopicReq("..", 1, 1), kerr.InvalidTopicException},
			{createTopicReq("", 1, 1), kerr.InvalidTopicException},
			{createTopicReq(strings.Repeat("t", 250), 1, 1), kerr.InvalidTopicException},
		}
		for _, c := range cases {
			before := tb.topic(c.rt.Topic)
			st := create(7, false, c.rt)
			wantCode(t, fmt.Sprintf("create %q", c.rt.Topic), st.ErrorCode, c.want)
			if st.ErrorMessage == nil || *st.ErrorMessage == "" {
				t.Errorf("create %q: no error message", c.rt.Topic)
			}
			if before == nil && tb.topic(c.rt.Topic) != nil {
				t.Errorf("create %q failed but created the topic", c.rt.Topic)
			}
		}
		if n := partitionsOf("ct-v0"); n != 2 {
			t.Errorf("TOPIC_ALREADY_EXISTS changed ct-v0 to %d partitions", n)
		}
	})

	t.Run("too many partitions", func(t *testing.T) {
		// Kafka refuses a request for more than 10,000 partitions in all,
		// whole, before creating anything.
		for _, c := range []struct {
			validateOnly bool
			topics       []kmsg.CreateTopicsRequestTopic
		}{
			{false, []kmsg.CreateTopicsRequestTopic{createTopicReq("huge", 1<<30, 1)}},
			{false, []kmsg.CreateTopicsRequestTopic{createTopicReq("half-a", 5000, 1), createTopicReq("small", 1, 1), createTopicReq("half-b", 5000, 1)}},
			{true, []kmsg.CreateTopicsRequestTopic{createTopicReq("huge", 10001, 1)}},
		} {
			start := time.Now()
			resp := rc.roundTrip(createReq(c.validateOnly, c.topics...), 7).(*kmsg.CreateTopicsResponse)
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("refusing took %v", took)
			}
			if len(resp.Topics) != len(c.topics) {
				t.Fatalf("%d topics in the response, want %d", len(resp.Topics), len(c.topics))
			}
			for _, st := range resp.Topics {
				wantCode(t, "create "+st.Topic, st.ErrorCode, kerr.PolicyViolation)
				if tb.topic(st.Topic) != nil {
					t.Errorf("%s was created", st.Topic)
				}
			}
		}
		// At most 10,000 in all is allowed: -1 counts as num.partitions (3).
		st := create(7, true, createTopicReq("almost", 10000, 1))
		if st.ErrorCode != 0 {
			t.Errorf("validate_only 10000 partitions: %v", kerr.ErrorForCode(st.ErrorCode))
		}
		resp := rc.roundTrip(createReq(true, createTopicReq("d1", 9998, 1), createTopicReq("d2", -1, -1)), 7).(*kmsg.CreateTopicsResponse)
		wantCode(t, "9998 and the default 3", resp.Topics[0].ErrorCode, kerr.PolicyViolation)
	})

	t.Run("kadm", func(t *testing.T) {
		ctx := ctxTimeout(t, 10*time.Second)
		adm := tb.admin(t)
		if _, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"retention.ms": kmsg.StringPtr("60000")}, "kadm-topic"); err != nil {
			t.Fatal(err)
		}
		if _, err := adm.CreateTopic(ctx, 2, 1, nil, "kadm-topic"); err == nil || !strings.Contains(err.Error(), kerr.TopicAlreadyExists.Message) {
			t.Errorf("second create: %v, want TOPIC_ALREADY_EXISTS", err)
		}
		details, err := adm.ListTopics(ctx, "kadm-topic")
		if err != nil {
			t.Fatal(err)
		}
		if d := details["kadm-topic"]; d.Err != nil || len(d.Partitions) != 2 || [16]byte(d.ID) != tb.topic("kadm-topic").ID {
			t.Errorf("kadm ListTopics: %+v", d)
		}
	})
}

// fetchReq is a Fetch of one partition. At v13+ the topic goes by id.
func fetchReq(topic string, id [16]byte, partition int32, offset int64, partMax int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxBytes = 50 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, partMax
	rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// batchesIn splits fetched record bytes into batch headers; every batch
// must be whole.
func batchesIn(t testing.TB, b []byte) []engine.BatchHeader {
	t.Helper()
	var out []engine.BatchHeader
	for len(b) > 0 {
		h, err := engine.ParseBatchHeader(b)
		if err != nil || h.Size() > int64(len(b)) {
			t.Fatalf("fetched records end in a partial batch (%d bytes left, header %+v, %v)", len(b), h, err)
		}
		out = append(out, h)
		b = b[h.Size():]
	}
	return out
}

// valuesIn decodes the records of uncompressed batches.
func valuesIn(t testing.TB, b []byte) (offsets []int64, values []string) {
	t.Helper()
	it := engine.NewRecordIterator(b)
	for it.Next() {
		r := it.Record()
		offsets = append(offsets, r.Offset)
		values = append(values, string(r.Value))
	}
	if err := it.Err(); err != nil {
		t.Fatalf("decoding fetched records: %v", err)
	}
	return offsets, values
}

func TestProduce(t *testing.T) {
	tb := startBroker(t, t.TempDir(), func(c *config.Config) { c.MessageMaxBytes = 2000 })
	tb.createTopic(t, "p", 1)

	t.Run("each version", func(t *testing.T) {
		rc := dialRaw(t, tb.addr)
		for v := int16(3); v <= 11; v++ {
			code, base := rc.produceCode(v, "p", 0, batch(fmt.Sprintf("v%d-a", v), fmt.Sprintf("v%d-b", v)))
			if code != 0 || base != int64(2*(v-3)) {
				t.Errorf("v%d: %v at base offset %d, want %d", v, kerr.ErrorForCode(code), base, 2*(v-3))
			}
		}
	})

	t.Run("acks", func(t *testing.T) {
		tb.createTopic(t, "acks", 1)
		rc := dialRaw(t, tb.addr)
		// acks=0: no answer; the next request's answer comes first.
		req := produceReq("acks", 0, 0, batch("acks0"))
		req.SetVersion(9)
		rc.send(req)
		for i, acks := range []int16{1, -1} {
			req := produceReq("acks", 0, acks, batch(fmt.Sprintf("acks%d", acks)))
			resp := rc.roundTrip(req, 9).(*kmsg.ProduceResponse)
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode != 0 || p.BaseOffset != int64(i+1) || p.LogStartOffset != 0 {
				t.Errorf("acks=%d: %v base %d log start %d, want base %d", acks, kerr.ErrorForCode(p.ErrorCode), p.BaseOffset, p.LogStartOffset, i+1)
			}
		}
		got := tb.consumeValues(t, "acks", 0, 3)
		if want := []string{"acks0", "acks1", "acks-1"}; !slices.Equal(got, want) {
			t.Errorf("consumed %q, want %q", got, want)
		}
	})

	t.Run("errors", func(t *testing.T) {
		rc := dialRaw(t, tb.addr)
		req := produceReq("p", 0, 2, batch("x"))
		resp := rc.roundTrip(req, 11).(*kmsg.ProduceResponse)
		wantCode(t, "acks=2", resp.Topics[0].Partitions[0].ErrorCode, kerr.InvalidRequiredAcks)

		code, _ := rc.produceCode(11, "p", 1, batch("x"))
		wantCode(t, "partition 1 of 1", code, kerr.UnknownTopicOrPartition)
		code, _ = rc.produceCode(11, "p", -1, batch("x"))
		wantCode(t, "partition -1", code, kerr.UnknownTopicOrPartition)
		code, _ = rc.produceCode(11, "no-such-topic", 0, batch("x"))
		wantCode(t, "unknown topic", code, kerr.UnknownTopicOrPartition)
		if tb.topic("no-such-topic") != nil {
			t.Error("Produce created a topic")
		}

		bad := batch("crc")
		bad[len(bad)-2] ^= 0xff // inside the CRC-covered records
		code, _ = rc.produceCode(11, "p", 0, bad)
		wantCode(t, "corrupt CRC", code, kerr.CorruptMessage)

		code, _ = rc.produceCode(11, "p", 0, batch(strings.Repeat("x", 3000)))
		wantCode(t, "batch over message.max.bytes", code, kerr.MessageTooLarge)

		two := append(batch("one"), batch("two")...)
		code, _ = rc.produceCode(11, "p", 0, two)
		wantCode(t, "two batches", code, kerr.InvalidRecord)

		// A produce with a good and a bad partition: the good one lands.
		req = produceReq("p", 0, -1, batch("mixed-good"))
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, req.Topics[0].Partitions[0])
		req.Topics[0].Partitions[1].Partition = 7
		resp = rc.roundTrip(req, 11).(*kmsg.ProduceResponse)
		if ps := resp.Topics[0].Partitions; len(ps) != 2 || ps[0].ErrorCode != 0 || ps[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("mixed produce: %+v", ps)
		}
		// Nothing bad was stored: the log holds the 18 good records of
		// "each version" and the mixed one.
		got := tb.consumeValues(t, "p", 0, 19)
		if got[18] != "mixed-good" {
			t.Errorf("last record %q", got[18])
		}
		if p := tb.partition("p", 0); p.HighWatermark() != 19 {
			t.Errorf("high watermark %d after the failed produces, want 19", p.HighWatermark())
		}
	})

	t.Run("acks=0 failure closes", func(t *testing.T) {
		for _, c := range []struct {
			name string
			req  *kmsg.ProduceRequest
		}{
			{"unknown topic", produceReq("no-such-topic", 0, 0, batch("x"))},
			{"corrupt", produceReq("p", 0, 0, func() []byte { b := batch("x"); b[len(b)-1] ^= 1; return b }())},
			{"too large", produceReq("p", 0, 0, batch(strings.Repeat("x", 3000)))},
		} {
			rc := dialRaw(t, tb.addr)
			c.req.SetVersion(9)
			rc.send(c.req)
			rc.expectClosed("acks=0 " + c.name)
		}
	})

	t.Run("kgo", func(t *testing.T) {
		for i, acks := range []kgo.Acks{kgo.NoAck(), kgo.LeaderAck(), kgo.AllISRAcks()} {
			topic := fmt.Sprintf("kgo-acks-%d", i)
			tb.createTopic(t, topic, 1)
			cl := tb.client(t, kgo.RequiredAcks(acks))
			var vs []string
			for i := range 50 {
				vs = append(vs, fmt.Sprintf("%s-%d", topic, i))
			}
			produceSync(t, cl, topic, 0, vs...)
			if got := tb.consumeValues(t, topic, 0, 50); !slices.Equal(got, vs) {
				t.Errorf("%s: consumed %q", topic, got)
			}
		}
	})
}

func TestFetch(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	id := tb.createTopic(t, "f", 2)
	rc := dialRaw(t, tb.addr)
	// Partition 0: 5 batches of 2 records of ~1000 bytes each.
	big := strings.Repeat("b", 1000)
	var sizes []int
	for i := range 5 {
		b := batch(fmt.Sprintf("%d-a-%s", i, big), fmt.Sprintf("%d-b-%s", i, big))
		sizes = append(sizes, len(b))
		if code, _ := rc.produceCode(11, "f", 0, b); code != 0 {
			t.Fatal(kerr.ErrorForCode(code))
		}
	}
	// Partition 1: one small batch.
	if code, _ := rc.produceCode(11, "f", 1, batch("p1")); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}

	fetch := func(v int16, req *kmsg.FetchRequest) *kmsg.FetchResponse {
		t.Helper()
		resp := rc.roundTrip(req, v).(*kmsg.FetchResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("v%d: fetch error %v", v, kerr.ErrorForCode(resp.ErrorCode))
		}
		return resp
	}
	one := func(v int16, req *kmsg.FetchRequest) kmsg.FetchResponseTopicPartition {
		t.Helper()
		resp := fetch(v, req)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("v%d: fetch response has %+v", v, resp.Topics)
		}
		if rt := req.Topics[0]; v >= 13 && resp.Topics[0].TopicID != rt.TopicID {
			t.Errorf("v%d: response topic ID %x, want %x", v, resp.Topics[0].TopicID, rt.TopicID)
		} else if v < 13 && resp.Topics[0].Topic != rt.Topic {
			t.Errorf("v%d: response topic %q, want %q", v, resp.Topics[0].Topic, rt.Topic)
		}
		return resp.Topics[0].Partitions[0]
	}

	t.Run("each version", func(t *testing.T) {
		for v := int16(4); v <= 17; v++ {
			p := one(v, fetchReq("f", id, 0, 0, 1<<20))
			if p.ErrorCode != 0 || p.HighWatermark != 10 || p.LastStableOffset != 10 {
				t.Errorf("v%d: %v hw %d lso %d", v, kerr.ErrorForCode(p.ErrorCode), p.HighWatermark, p.LastStableOffset)
			}
			if v >= 5 && p.LogStartOffset != 0 {
				t.Errorf("v%d: log start offset %d", v, p.LogStartOffset)
			}
			offs, vals := valuesIn(t, p.RecordBatches)
			if len(offs) != 10 || offs[0] != 0 || offs[9] != 9 || !strings.HasPrefix(vals[9], "4-b-") {
				t.Errorf("v%d: fetched offsets %v", v, offs)
			}
			// From the middle of a batch: the whole batch comes back.
			p = one(v, fetchReq("f", id, 0, 3, 1<<20))
			if offs, _ := valuesIn(t, p.RecordBatches); len(offs) != 8 || offs[0] != 2 {
				t.Errorf("v%d: fetch at 3 returned offsets %v", v, offs)
			}
		}
	})

	t.Run("offsets out of range", func(t *testing.T) {
		for _, v := range []int16{4, 12, 13, 17} {
			p := one(v, fetchReq("f", id, 0, 11, 1<<20))
			wantCode(t, fmt.Sprintf("v%d offset 11 of 10", v), p.ErrorCode, kerr.OffsetOutOfRange)
			if p.HighWatermark != 10 {
				t.Errorf("v%d: out of range reports high watermark %d", v, p.HighWatermark)
			}
			p = one(v, fetchReq("f", id, 0, -1, 1<<20))
			wantCode(t, fmt.Sprintf("v%d offset -1", v), p.ErrorCode, kerr.OffsetOutOfRange)
			p = one(v, fetchReq("f", id, 0, 10, 1<<20))
			if p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 10 {
				t.Errorf("v%d: fetch at the end: %v, %d bytes", v, kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches))
			}
		}
	})

	t.Run("unknown", func(t *testing.T) {
		p := one(12, fetchReq("nope", [16]byte{}, 0, 0, 1<<20))
		wantCode(t, "v12 unknown topic", p.ErrorCode, kerr.UnknownTopicOrPartition)
		p = one(12, fetchReq("f", [16]byte{}, 2, 0, 1<<20))
		wantCode(t, "v12 unknown partition", p.ErrorCode, kerr.UnknownTopicOrPartition)
		p = one(13, fetchReq("", [16]byte{9, 9, 9}, 0, 0, 1<<20))
		wantCode(t, "v13 unknown topic ID", p.ErrorCode, kerr.UnknownTopicID)
		p = one(17, fetchReq("", id, 5, 0, 1<<20))
		wantCode(t, "v17 unknown partition", p.ErrorCode, kerr.UnknownTopicOrPartition)
	})

	t.Run("partition max bytes", func(t *testing.T) {
		for _, c := range []struct {
			max  int32
			want int // batches
		}{
			{1, 1},                              // the first batch whole, though larger
			{int32(sizes[0]), 1},                //
			{int32(sizes[0] + sizes[1] - 1), 1}, // never a partial second batch
			{int32(sizes[0] + sizes[1]), 2},
			{1 << 20, 5},
		} {
			p := one(17, fetchReq("f", id, 0, 0, c.max))
			hs := batchesIn(t, p.RecordBatches)
			if len(hs) != c.want {
				t.Errorf("PartitionMaxBytes %d: %d batches, want %d", c.max, len(hs), c.want)
			}
		}
	})

	t.Run("max bytes", func(t *testing.T) {
		req := fetchReq("f", id, 0, 0, 1<<20)
		rp1 := req.Topics[0].Partitions[0]
		rp1.Partition = 1
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp1)
		for _, c := range []struct {
			max     int32
			batches [2]int
		}{
			{1, [2]int{1, 0}}, // the first batch whole; nothing more fits
			{int32(sizes[0] + sizes[1]), [2]int{2, 0}},
			{1 << 20, [2]int{5, 1}},
		} {
			req.MaxBytes = c.max
			resp := fetch(17, req)
			ps := resp.Topics[0].Partitions
			if len(ps) != 2 {
				t.Fatalf("MaxBytes %d: %d partitions in the response", c.max, len(ps))
			}
			got := [2]int{len(batchesIn(t, ps[0].RecordBatches)), len(batchesIn(t, ps[1].RecordBatches))}
			if got != c.batches {
				t.Errorf("MaxBytes %d: batches per partition %v, want %v", c.max, got, c.batches)
			}
			if ps[1].ErrorCode != 0 || ps[1].HighWatermark != 1 {
				t.Errorf("MaxBytes %d: partition 1: %v hw %d", c.max, kerr.ErrorForCode(ps[1].ErrorCode), ps[1].HighWatermark)
			}
		}
		// The first partition with data may be the second one asked for.
		req.MaxBytes = 1
		req.Topics[0].Partitions[0].FetchOffset = 10 // at the end: nothing
		resp := fetch(17, req)
		ps := resp.Topics[0].Partitions
		if len(ps[0].RecordBatches) != 0 || len(batchesIn(t, ps[1].RecordBatches)) != 1 {
			t.Errorf("MaxBytes 1, first partition empty: %d and %d bytes", len(ps[0].RecordBatches), len(ps[1].RecordBatches))
		}
	})

	t.Run("session id", func(t *testing.T) {
		req := fetchReq("f", id, 0, 0, 1<<20)
		req.SessionID = 42
		resp := rc.roundTrip(req, 12).(*kmsg.FetchResponse)
		wantCode(t, "fetch session 42", resp.ErrorCode, kerr.FetchSessionIDNotFound)
	})

	t.Run("kgo Request", func(t *testing.T) {
		// kgo negotiates the highest version (17): topics by ID.
		cl := tb.client(t)
		resp, err := fetchReq("f", id, 1, 0, 1<<20).RequestWith(ctxTimeout(t, 10*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Version < 13 {
			t.Fatalf("kgo fetched at v%d", resp.Version)
		}
		p := resp.Topics[0].Partitions[0]
		if _, vals := valuesIn(t, p.RecordBatches); !slices.Equal(vals, []string{"p1"}) {
			t.Errorf("fetched %q", vals)
		}
	})
}

func TestListOffsets(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	tb.createTopic(t, "lo", 2)
	rc := dialRaw(t, tb.addr)
	for i := range 3 {
		if code, _ := rc.produceCode(11, "lo", 0, batch(fmt.Sprint(i), "x")); code != 0 {
			t.Fatal(kerr.ErrorForCode(code))
		}
	}
	list := func(v int16, topic string, partition int32, ts int64) kmsg.ListOffsetsResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.MaxNumOffsets, rp.CurrentLeaderEpoch = partition, ts, 1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := rc.roundTrip(req, v).(*kmsg.ListOffsetsResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Topic != topic {
			t.Fatalf("v%d: response %+v", v, resp.Topics)
		}
		return resp.Topics[0].Partitions[0]
	}
	for v := int16(0); v <= 9; v++ {
		for _, c := range []struct {
			partition int32
			ts, want  int64
		}{{0, -2, 0}, {0, -1, 6}, {1, -2, 0}, {1, -1, 0}} {
			p := list(v, "lo", c.partition, c.ts)
			if p.ErrorCode != 0 {
				t.Errorf("v%d partition %d timestamp %d: %v", v, c.partition, c.ts, kerr.ErrorForCode(p.ErrorCode))
				continue
			}
			got := p.Offset
			if v == 0 {
				if len(p.OldStyleOffsets) != 1 {
					t.Errorf("v0: old-style offsets %v, want one", p.OldStyleOffsets)
					continue
				}
				got = p.OldStyleOffsets[0]
			}
			if got != c.want {
				t.Errorf("v%d partition %d timestamp %d: offset %d, want %d", v, c.partition, c.ts, got, c.want)
			}
		}
		wantCode(t, fmt.Sprintf("v%d unknown partition", v), list(v, "lo", 2, -1).ErrorCode, kerr.UnknownTopicOrPartition)
		wantCode(t, fmt.Sprintf("v%d unknown topic", v), list(v, "nope", 0, -1).ErrorCode, kerr.UnknownTopicOrPartition)
	}

	// Through kadm (kgo's highest version).
	ctx := ctxTimeout(t, 10*time.Second)
	adm := tb.admin(t)
	start, err := adm.ListStartOffsets(ctx, "lo")
	if err != nil {
		t.Fatal(err)
	}
	end, err := adm.ListEndOffsets(ctx, "lo")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := start.Lookup("lo", 0); o.Err != nil || o.Offset != 0 {
		t.Errorf("kadm start offset %+v", o)
	}
	if o, _ := end.Lookup("lo", 0); o.Err != nil || o.Offset != 6 {
		t.Errorf("kadm end offset %+v", o)
	}
}

// TestRequestsInOrder pipelines requests on one connection: the answers
// come back in request order.
func TestRequestsInOrder(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	tb.createTopic(t, "order", 1)
	rc := dialRaw(t, tb.addr)
	var corrs []int32
	var reqs []kmsg.Request
	for i := range 30 {
		var req kmsg.Request
		switch i % 3 {
		case 0:
			req = produceReq("order", 0, 1, batch(fmt.Sprint(i)))
			req.SetVersion(11)
		case 1:
			req = metadataReq(false, "order")
			req.SetVersion(12)
		default:
			req = fetchReq("order", [16]byte{}, 0, 0, 1<<20)
			req.SetVersion(12)
		}
		corrs = append(corrs, rc.send(req))
		reqs = append(reqs, req)
	}
	for i, corr := range corrs {
		resp := reqs[i].ResponseKind()
		resp.SetVersion(reqs[i].GetVersion())
		rc.readResponse(corr, resp, 10*time.Second)
		if p, ok := resp.(*kmsg.ProduceResponse); ok && p.Topics[0].Partitions[0].BaseOffset != int64(i/3) {
			t.Errorf("produce %d landed at %d", i/3, p.Topics[0].Partitions[0].BaseOffset)
		}
	}
}
