package broker

// The configuration catalogue, DescribeConfigs of topics (sources and
// synonyms), and the validation CreateTopics shares with the alter APIs.

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describedTopic returns a topic's described configs by key.
func describedTopic(t testing.TB, adm *kadm.Client, topic string) map[string]kadm.Config {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctxTimeout(t, 10*time.Second), topic)
	if err != nil {
		t.Fatalf("describe %s: %v", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe %s: %v %v %s", topic, err, rc.Err, rc.ErrMessage)
	}
	out := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		out[c.Key] = c
	}
	return out
}

// wantConfig checks a described config's value, source and synonyms
// (name=value/source, in order).
func wantConfig(t testing.TB, what string, c kadm.Config, value string, src kmsg.ConfigSource, synonyms ...string) {
	t.Helper()
	if c.MaybeValue() != value || c.Source != src {
		t.Errorf("%s: %s=%q from %v, want %q from %v", what, c.Key, c.MaybeValue(), c.Source, value, src)
	}
	var got []string
	for _, s := range c.Synonyms {
		v := "null"
		if s.Value != nil {
			v = *s.Value
		}
		got = append(got, fmt.Sprintf("%s=%s/%v", s.Key, v, s.Source))
	}
	if synonyms != nil && strings.Join(got, " ") != strings.Join(synonyms, " ") {
		t.Errorf("%s: %s synonyms %q, want %q", what, c.Key, got, synonyms)
	}
}

const (
	srcTopic    = kmsg.ConfigSourceDynamicTopicConfig
	srcBroker   = kmsg.ConfigSourceDynamicBrokerConfig
	srcCluster  = kmsg.ConfigSourceDynamicDefaultBrokerConfig
	srcStatic   = kmsg.ConfigSourceStaticBrokerConfig
	srcDefault  = kmsg.ConfigSourceDefaultConfig
	retention1h = "3600000"
)

// invalidTopicConfigs are values Kafka 3.9 refuses, or sluice cannot honour.
var invalidTopicConfigs = []struct{ key, value string }{
	{"segment.ms", "0"},
	{"segment.bytes", "13"},
	{"segment.bytes", "2147483648"},
	{"segment.index.bytes", "3"},
	{"flush.messages", "0"},
	{"flush.ms", "-1"},
	{"retention.ms", "-2"},
	{"retention.ms", "soon"},
	{"max.message.bytes", "-1"},
	{"index.interval.bytes", "-1"},
	{"message.timestamp.type", "BrokerTime"},
	{"message.timestamp.after.max.ms", "1000"},
	{"cleanup.policy", "remove"},
	{"cleanup.policy", "delete,"},
	{"min.cleanable.dirty.ratio", "1.5"},
	{"min.insync.replicas", "0"},
	{"compression.type", "brotli"},
	{"compression.type", "GZIP"},
	{"compression.lz4.level", "18"},
	{"compression.lz4.level", "0"},
	{"compression.gzip.level", "0"},
	{"compression.gzip.level", "10"},
	{"compression.zstd.level", "23"},
	{"compression.zstd.level", "-131073"},
	{"preallocate", "yes"},
	{"remote.storage.enable", "true"},
	{"leader.replication.throttled.replicas", "0-1"},
	{"message.format.version", "9.9"},
	{"no.such.key", "1"},
}

func TestDescribeTopicConfigs(t *testing.T) {
	tb := startBroker(t, t.TempDir(), func(c *config.Config) { c.LogSegmentBytes = 1 << 20 })
	adm := tb.admin(t)
	ctx := ctxTimeout(t, 10*time.Second)
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": kadm.StringPtr(retention1h)}, "described"); err != nil {
		t.Fatal(err)
	}
	got := describedTopic(t, adm, "described")
	if len(got) != len(config.TopicKeys) {
		t.Errorf("%d configs described, want every topic key (%d)", len(got), len(config.TopicKeys))
	}
	wantConfig(t, "override", got["retention.ms"], retention1h, srcTopic,
		"retention.ms="+retention1h+"/DYNAMIC_TOPIC_CONFIG", "log.retention.hours=168/DEFAULT_CONFIG")
	wantConfig(t, "static", got["segment.bytes"], "1048576", srcStatic,
		"log.segment.bytes=1048576/STATIC_BROKER_CONFIG", "log.segment.bytes=1073741824/DEFAULT_CONFIG")
	wantConfig(t, "default from log.roll.hours", got["segment.ms"], "604800000", srcDefault, "log.roll.hours=168/DEFAULT_CONFIG")
	wantConfig(t, "default", got["cleanup.policy"], "delete", srcDefault, "log.cleanup.policy=delete/DEFAULT_CONFIG")
	wantConfig(t, "no synonyms", got["remote.storage.enable"], "false", srcDefault)
	wantConfig(t, "flush.ms", got["flush.ms"], config.MaxLong, srcDefault, "log.flush.scheduler.interval.ms="+config.MaxLong+"/DEFAULT_CONFIG")
	for k, c := range got {
		if c.Sensitive {
			t.Errorf("%s is sensitive", k)
		}
	}

	// CreateTopics v5+ reports the same view of a new topic.
	rc := dialRaw(t, tb.addr)
	cresp := rc.roundTrip(createReq(true, createTopicReq("described-2", 1, 1, "retention.ms", retention1h)), 7).(*kmsg.CreateTopicsResponse)
	if st := cresp.Topics[0]; st.ErrorCode != 0 || len(st.Configs) != len(config.TopicKeys) {
		t.Fatalf("CreateTopics v7: %v, %d configs", kerr.ErrorForCode(st.ErrorCode), len(st.Configs))
	}
	for _, c := range cresp.Topics[0].Configs {
		d := got[c.Name]
		if c.Value == nil || *c.Value != d.MaybeValue() || kmsg.ConfigSource(c.Source) != d.Source || c.ReadOnly || c.IsSensitive {
			t.Errorf("CreateTopics v7 reports %s=%v source %d, DescribeConfigs %s from %v", c.Name, c.Value, c.Source, d.MaybeValue(), d.Source)
		}
	}

	// Raw requests at every version: read-only flags, IsDefault (v0),
	// types and documentation (v3+), key filtering.
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.IncludeSynonyms, req.IncludeDocumentation = v >= 1, v >= 3
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "described"
		rr.ConfigNames = []string{"retention.ms", "cleanup.policy", "no.such.key"}
		req.Resources = append(req.Resources, rr)
		resp := rc.roundTrip(req, v).(*kmsg.DescribeConfigsResponse)
		if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
			t.Fatalf("v%d: %+v", v, resp.Resources)
		}
		cs := resp.Resources[0].Configs
		if len(cs) != 2 || cs[0].Name != "cleanup.policy" || cs[1].Name != "retention.ms" {
			t.Fatalf("v%d: filtered configs %+v", v, cs)
		}
		policy, ret := cs[0], cs[1]
		if policy.ReadOnly || ret.ReadOnly {
			t.Errorf("v%d: topic configs are read-only", v)
		}
		if v == 0 && (!policy.IsDefault || ret.IsDefault) {
			t.Errorf("v0: IsDefault %v for the default, %v for the override", policy.IsDefault, ret.IsDefault)
		}
		if v >= 1 && (len(ret.ConfigSynonyms) != 2 || ret.Source != srcTopic) {
			t.Errorf("v%d: retention.ms source %v synonyms %+v", v, ret.Source, ret.ConfigSynonyms)
		}
		if v >= 3 {
			if ret.ConfigType != kmsg.ConfigTypeLong || policy.ConfigType != kmsg.ConfigTypeList {
				t.Errorf("v%d: config types %v, %v", v, ret.ConfigType, policy.ConfigType)
			}
			if ret.Documentation == nil || *ret.Documentation == "" {
				t.Errorf("v%d: no documentation", v)
			}
		}
	}
	// Without IncludeSynonyms: none.
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "described"
	req.Resources = append(req.Resources, rr)
	resp := rc.roundTrip(req, 4).(*kmsg.DescribeConfigsResponse)
	for _, c := range resp.Resources[0].Configs {
		if len(c.ConfigSynonyms) != 0 || c.Documentation != nil {
			t.Fatalf("%s: synonyms or documentation not asked for: %+v", c.Name, c)
		}
	}
}

// CreateTopics refuses every invalid value with INVALID_CONFIG naming the
// key and the value, and the cross-key rule over the effective values.
func TestCreateTopicsValidatesConfigs(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	rc := dialRaw(t, tb.addr)
	create := func(kv ...string) kmsg.CreateTopicsResponseTopic {
		t.Helper()
		return rc.roundTrip(createReq(false, createTopicReq("checked", 1, 1, kv...)), 7).(*kmsg.CreateTopicsResponse).Topics[0]
	}
	for _, c := range invalidTopicConfigs {
		st := create(c.key, c.value)
		wantCode(t, c.key+"="+c.value, st.ErrorCode, kerr.InvalidConfig)
		if msg := fmt.Sprint(st.ErrorMessage); st.ErrorMessage == nil || !strings.Contains(*st.ErrorMessage, c.key) || c.key != "no.such.key" && !strings.Contains(*st.ErrorMessage, c.value) {
			t.Errorf("%s=%s: message %s does not name the key and the value", c.key, c.value, msg)
		}
	}
	wantCode(t, "min > max compaction lag", create("max.compaction.lag.ms", "10", "min.compaction.lag.ms", "20").ErrorCode, kerr.InvalidConfig)
	if st := create("min.compaction.lag.ms", "20"); st.ErrorCode != 0 {
		t.Errorf("min.compaction.lag.ms=20 under the default max: %v", kerr.ErrorForCode(st.ErrorCode))
	}
	if tb.topic("checked") == nil {
		t.Fatal("the valid topic was not created")
	}
	for _, kv := range [][2]string{{"segment.bytes", "14"}, {"retention.ms", "-1"}, {"cleanup.policy", ""}, {"min.cleanable.dirty.ratio", "0"},
		{"compression.gzip.level", "-1"}, {"follower.replication.throttled.replicas", "*"}, {"message.timestamp.before.max.ms", config.MaxLong},
		{"message.format.version", "2.8"}, {"segment.ms", "1"}, {"flush.messages", "1"}, {"max.message.bytes", "0"},
		{"compression.type", "uncompressed"}, {"compression.type", "zstd"}, {"compression.gzip.level", "9"},
		{"compression.lz4.level", "17"}, {"compression.zstd.level", "-131072"}, {"compression.zstd.level", "22"}} {
		resp := rc.roundTrip(createReq(true, createTopicReq("edge", 1, 1, kv[0], kv[1])), 7).(*kmsg.CreateTopicsResponse)
		if code := resp.Topics[0].ErrorCode; code != 0 {
			t.Errorf("%s=%s: %v", kv[0], kv[1], kerr.ErrorForCode(code))
		}
	}
}

// min.insync.replicas above 1 refuses acks=all produces with
// NOT_ENOUGH_REPLICAS: a single node's in-sync replica set is itself.
func TestMinInsyncReplicas(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := ctxTimeout(t, 10*time.Second)
	if _, err := tb.admin(t).CreateTopic(ctx, 1, 1, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")}, "isr"); err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, tb.addr)
	resp := rc.roundTrip(produceReq("isr", 0, -1, batch("all")), 9).(*kmsg.ProduceResponse)
	wantCode(t, "acks=all", resp.Topics[0].Partitions[0].ErrorCode, kerr.NotEnoughReplicas)
	resp = rc.roundTrip(produceReq("isr", 0, 1, batch("leader")), 9).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Errorf("acks=1: %v", kerr.ErrorForCode(code))
	}
}

// DescribeConfigs errors: unknown and invalid topics, other brokers,
// unsupported and unknown resource types.
func TestDescribeConfigsErrors(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	adm := tb.admin(t)
	ctx := ctxTimeout(t, 10*time.Second)
	tb.createTopic(t, "errs", 1)
	rcs, err := adm.DescribeTopicConfigs(ctx, "nope")
	if err != nil || len(rcs) != 1 || !errors.Is(rcs[0].Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("describe an unknown topic: %v %+v", err, rcs)
	}
	rcs, err = adm.DescribeTopicConfigs(ctx, "bad/name")
	if err != nil || len(rcs) != 1 || !errors.Is(rcs[0].Err, kerr.InvalidTopicException) {
		t.Errorf("describe an invalid name: %v %+v", err, rcs)
	}
	rc := dialRaw(t, tb.addr)
	describe := func(rs ...[2]string) *kmsg.DescribeConfigsResponse {
		req := kmsg.NewPtrDescribeConfigsRequest()
		for _, r := range rs {
			rr := kmsg.NewDescribeConfigsRequestResource()
			var kind int
			fmt.Sscan(r[0], &kind)
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceType(kind), r[1]
			req.Resources = append(req.Resources, rr)
		}
		return rc.roundTrip(req, 4).(*kmsg.DescribeConfigsResponse)
	}
	// An unknown resource type fails the whole request, as in Kafka.
	resp := describe([2]string{"2", "errs"}, [2]string{"99", "x"})
	for i, r := range resp.Resources {
		wantCode(t, fmt.Sprintf("describe with an unknown type, result %d", i), r.ErrorCode, kerr.InvalidRequest)
	}
	resp = describe([2]string{"4", "1"}, [2]string{"4", "x"}, [2]string{"8", "0"}, [2]string{"16", "sub"}, [2]string{"2", "errs"}, [2]string{"4", "0"}, [2]string{"4", ""})
	for i, want := range []*kerr.Error{kerr.InvalidRequest, kerr.InvalidRequest, kerr.InvalidRequest, kerr.InvalidRequest, nil, nil, nil} {
		r := resp.Resources[i]
		ok := want == nil && r.ErrorCode == 0 || want != nil && r.ErrorCode == want.Code && r.Configs == nil && r.ErrorMessage != nil
		if !ok {
			t.Errorf("describe result %d (%v %q): %v, %d configs", i, r.ResourceType, r.ResourceName, kerr.ErrorForCode(r.ErrorCode), len(r.Configs))
		}
	}
}
