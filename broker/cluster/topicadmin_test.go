package cluster

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
)

// permissive lets every change through and counts the partitions
// recorded against the mutation quota.
func permissive(recorded *int64) Admin {
	return Admin{Allowed: func(string) bool { return true }, Record: func(n int64) (int16, string) { *recorded += n; return 0, "" }}
}

func createOf(topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis, req.Topics = 7, 1000, topics
	return req
}

func newTopic(name string, partitions int32, rf int16, configs ...string) kmsg.CreateTopicsRequestTopic {
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	for i := 0; i+1 < len(configs); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = configs[i], kmsg.StringPtr(configs[i+1])
		rt.Configs = append(rt.Configs, c)
	}
	return rt
}

// TestCreateTopics: a topic is created with the defaults for -1, waited
// for and answered with its id and configs, its partitions recorded;
// each refusal has Kafka's code; validate_only creates nothing; too many
// partitions in all refuses the whole request.
func TestCreateTopics(t *testing.T) {
	d, f := newDirectory(t, DirectoryOptions{NumPartitions: 2, ReplicationFactor: 1, Layers: func() config.Layers { return config.Layers{Dynamic: &config.DynamicConfigs{}} }})
	var recorded int64
	resp := d.CreateTopics(createOf(newTopic("new", -1, -1, "retention.ms", "1000"), newTopic("t", 1, 1), newTopic("dup", 1, 1), newTopic("dup", 1, 1),
		newTopic("bad/name", 1, 1), newTopic("wide", 1, 4), newTopic("zero", 0, 1), newTopic("cfg", 1, 1, "retention.ms", "soon")), permissive(&recorded))
	want := []int16{0, kerr.TopicAlreadyExists.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidTopicException.Code,
		kerr.InvalidReplicationFactor.Code, kerr.InvalidPartitions.Code, kerr.InvalidConfig.Code}
	for i, st := range resp.Topics {
		if st.ErrorCode != want[i] {
			t.Errorf("topic %s: code %d, want %d (%v)", st.Topic, st.ErrorCode, want[i], st.ErrorMessage)
		}
	}
	st := resp.Topics[0]
	if st.NumPartitions != 2 || st.ReplicationFactor != 1 || st.TopicID != ([16]byte{9}) || recorded != 2 || f.created["new"].NumPartitions != 2 {
		t.Fatalf("created: %+v, recorded %d", st, recorded)
	}
	found := false
	for _, c := range st.Configs {
		if c.Name == "retention.ms" {
			found = *c.Value == "1000" && c.Source == int8(kmsg.ConfigSourceDynamicTopicConfig)
		}
	}
	if !found || len(st.Configs) != len(config.TopicKeys) {
		t.Fatalf("configs of the created topic: %+v", st.Configs)
	}

	req := createOf(newTopic("checked", 1, 1))
	req.ValidateOnly = true
	if resp := d.CreateTopics(req, permissive(&recorded)); resp.Topics[0].ErrorCode != 0 || len(f.created) != 1 || recorded != 2 {
		t.Fatalf("validate_only: %+v, recorded %d", resp.Topics[0], recorded)
	}
	if resp := d.CreateTopics(createOf(newTopic("huge", MaxPartitionsPerRequest, 1), newTopic("small", 1, 1)), permissive(&recorded)); resp.Topics[1].ErrorCode != kerr.PolicyViolation.Code || len(f.created) != 1 {
		t.Fatalf("too many partitions: %+v", resp.Topics)
	}
	denied := permissive(&recorded)
	denied.Allowed = func(string) bool { return false }
	if resp := d.CreateTopics(createOf(newTopic("nope", 1, 1)), denied); resp.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("unauthorized: %+v", resp.Topics[0])
	}
	throttled := permissive(&recorded)
	throttled.Record = func(int64) (int16, string) { return kerr.ThrottlingQuotaExceeded.Code, "throttled" }
	if resp := d.CreateTopics(createOf(newTopic("later", 1, 1)), throttled); resp.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || f.created["later"].NumPartitions != 0 {
		t.Fatalf("over the mutation quota: %+v", resp.Topics[0])
	}
}

// TestDeleteTopicsAndCreatePartitions: the internal topics can be
// neither deleted nor grown; a topic named twice or both ways, an unknown
// name or id, and a count not above the current one (t and t2 have two
// partitions) are refused.
func TestDeleteTopicsAndCreatePartitions(t *testing.T) {
	d, _ := newDirectory(t, DirectoryOptions{})
	u := update([]int32{1, 2, 3})
	ts := kmsg.NewUpdateMetadataRequestTopicState()
	ts.Topic, ts.TopicID = offsetsTopic, [16]byte{3}
	ps := kmsg.NewUpdateMetadataRequestTopicPartition()
	ps.Leader = 1
	ts.PartitionStates = append(ts.PartitionStates, ps)
	u.TopicStates = append(u.TopicStates, ts)
	ts2 := kmsg.NewUpdateMetadataRequestTopicState()
	ts2.Topic, ts2.TopicID = "t2", [16]byte{4}
	ts2.PartitionStates = append(ts2.PartitionStates, ps, ps)
	ts2.PartitionStates[1].Partition = 1
	u.TopicStates = append(u.TopicStates, ts2)
	d.o.Cache.Update(u)
	var recorded int64

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version = 6
	for _, name := range []string{offsetsTopic, "gone", "t", "t"} {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		del.Topics = append(del.Topics, rt)
	}
	byID := kmsg.NewDeleteTopicsRequestTopic()
	byID.TopicID = [16]byte{42}
	del.Topics = append(del.Topics, byID)
	resp := d.DeleteTopics(del, permissive(&recorded))
	want := []int16{kerr.InvalidRequest.Code, kerr.UnknownTopicOrPartition.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.UnknownTopicID.Code}
	for i, st := range resp.Topics {
		if st.ErrorCode != want[i] || st.ErrorMessage == nil {
			t.Errorf("delete %d: code %d, want %d", i, st.ErrorCode, want[i])
		}
	}

	grow := kmsg.NewPtrCreatePartitionsRequest()
	for _, g := range []struct {
		name  string
		count int32
	}{{offsetsTopic, 5}, {"t", 2}, {"t2", 1}, {"gone", 3}} {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = g.name, g.count
		grow.Topics = append(grow.Topics, rt)
	}
	gr := d.CreatePartitions(grow, permissive(&recorded))
	want = []int16{kerr.InvalidRequest.Code, kerr.InvalidPartitions.Code, kerr.InvalidPartitions.Code, kerr.UnknownTopicOrPartition.Code}
	for i, st := range gr.Topics {
		if st.ErrorCode != want[i] {
			t.Errorf("grow %s: code %d, want %d", st.Topic, st.ErrorCode, want[i])
		}
	}
	if recorded != 0 {
		t.Fatalf("refused changes recorded %d partitions", recorded)
	}
}
