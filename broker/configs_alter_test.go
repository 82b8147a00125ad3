package broker

// AlterConfigs and IncrementalAlterConfigs through kadm and raw requests:
// round trips, sources of dynamic broker configs, validate_only and every
// error case.

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

// alterResult is the error of a one-resource alter through kadm, with the
// broker's message.
func alterResult(rs kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return fmt.Errorf("request failed: %w", err)
	}
	if len(rs) != 1 {
		return fmt.Errorf("%d responses, want 1", len(rs))
	}
	if rs[0].Err != nil {
		return fmt.Errorf("%w: %s", rs[0].Err, rs[0].ErrMessage)
	}
	return nil
}

func set(k, v string) kadm.AlterConfig { return kadm.AlterConfig{Name: k, Value: kadm.StringPtr(v)} }
func del(k string) kadm.AlterConfig    { return kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k} }
func appendOp(k, v string) kadm.AlterConfig {
	return kadm.AlterConfig{Op: kadm.AppendConfig, Name: k, Value: kadm.StringPtr(v)}
}
func subtractOp(k, v string) kadm.AlterConfig {
	return kadm.AlterConfig{Op: kadm.SubtractConfig, Name: k, Value: kadm.StringPtr(v)}
}

// describedBroker returns a broker resource's described configs ("" is the
// cluster default).
func describedBroker(t testing.TB, tb *testBroker, resource string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, resource
	req.Resources = append(req.Resources, rr)
	resp := dialRaw(t, tb.addr).roundTrip(req, 4).(*kmsg.DescribeConfigsResponse)
	if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("describe broker %q: %+v", resource, resp.Resources)
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = c
	}
	return out
}

func TestDescribeBrokerConfigs(t *testing.T) {
	tb := startBroker(t, t.TempDir(), func(c *config.Config) { c.LogRetention = 2 * time.Hour })
	adm := tb.admin(t)
	ctx := ctxTimeout(t, 10*time.Second)
	// Nothing dynamic yet: the cluster default lists nothing.
	if got := describedBroker(t, tb, ""); len(got) != 0 {
		t.Errorf("cluster default with nothing set: %d configs", len(got))
	}
	if err := alterResult(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("log.segment.bytes", "2097152"), set("log.retention.ms", "7200001")})); err != nil {
		t.Fatal(err)
	}
	if err := alterResult(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("log.segment.bytes", "3145728")}, 0)); err != nil {
		t.Fatal(err)
	}
	cluster := describedBroker(t, tb, "")
	if len(cluster) != 2 {
		t.Errorf("cluster default: %d configs, want the 2 set", len(cluster))
	}
	if c := cluster["log.segment.bytes"]; *c.Value != "2097152" || c.Source != srcCluster || len(c.ConfigSynonyms) != 1 || c.ReadOnly {
		t.Errorf("cluster default log.segment.bytes: %+v", c)
	}
	node := describedBroker(t, tb, "0")
	if len(node) != definedBrokerKeys() {
		t.Errorf("broker 0: %d configs, want every broker key Kafka defines (%d)", len(node), definedBrokerKeys())
	}
	seg := node["log.segment.bytes"]
	if *seg.Value != "3145728" || seg.Source != srcBroker || len(seg.ConfigSynonyms) != 3 || seg.ConfigSynonyms[1].Source != srcCluster {
		t.Errorf("broker 0 log.segment.bytes: %+v", seg)
	}
	ret := node["log.retention.ms"]
	if *ret.Value != "7200001" || ret.Source != srcCluster || len(ret.ConfigSynonyms) != 3 || ret.ConfigSynonyms[1].Source != srcStatic {
		t.Errorf("broker 0 log.retention.ms: %+v", ret)
	}
	if c := node["log.retention.hours"]; c.Value == nil || *c.Value != "168" || !c.ReadOnly || c.Source != srcDefault {
		t.Errorf("broker 0 log.retention.hours: %+v", c)
	}
	if c := node["broker.id"]; c.Value == nil || *c.Value != "0" || !c.ReadOnly {
		t.Errorf("broker 0 broker.id: %+v", c)
	}
	if c := node["log.roll.ms"]; c.Value != nil || c.Source != srcDefault || c.ReadOnly {
		t.Errorf("broker 0 log.roll.ms, never set: %+v", c)
	}
	// The topic view of the same layers.
	tb.createTopic(t, "layers", 1)
	topic := describedTopic(t, adm, "layers")
	wantConfig(t, "broker layer", topic["segment.bytes"], "3145728", srcBroker,
		"log.segment.bytes=3145728/DYNAMIC_BROKER_CONFIG", "log.segment.bytes=2097152/DYNAMIC_DEFAULT_BROKER_CONFIG", "log.segment.bytes=1073741824/DEFAULT_CONFIG")
	wantConfig(t, "cluster layer", topic["retention.ms"], "7200001", srcCluster,
		"log.retention.ms=7200001/DYNAMIC_DEFAULT_BROKER_CONFIG", "log.retention.ms=7200000/STATIC_BROKER_CONFIG", "log.retention.hours=168/DEFAULT_CONFIG")
	// kadm's view of a broker.
	rcs, err := adm.DescribeBrokerConfigs(ctx, 0)
	if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
		t.Fatalf("kadm DescribeBrokerConfigs: %v %+v", err, rcs)
	}
}

func TestAlterTopicConfigs(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	adm := tb.admin(t)
	ctx := ctxTimeout(t, 30*time.Second)
	tb.createTopic(t, "alt", 2)
	opts := func() (segBytes int64, retention time.Duration) {
		o := tb.partition("alt", 1).Log.Options()
		return o.SegmentBytes, o.Retention
	}

	// Incremental SET, then DELETE.
	if err := alterResult(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("segment.bytes", "1048576"), set("retention.ms", "60000")}, "alt")); err != nil {
		t.Fatal(err)
	}
	got := describedTopic(t, adm, "alt")
	wantConfig(t, "set", got["segment.bytes"], "1048576", srcTopic)
	wantConfig(t, "set", got["retention.ms"], "60000", srcTopic)
	if sb, r := opts(); sb != 1<<20 || r != time.Minute {
		t.Errorf("log options after SET: segment %d retention %v", sb, r)
	}
	if err := alterResult(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{del("segment.bytes"), del("segment.ms")}, "alt")); err != nil {
		t.Fatal(err)
	}
	got = describedTopic(t, adm, "alt")
	wantConfig(t, "deleted", got["segment.bytes"], "1073741824", srcDefault)
	wantConfig(t, "kept", got["retention.ms"], "60000", srcTopic)
	if sb, _ := opts(); sb != 1<<30 {
		t.Errorf("segment.bytes after DELETE: %d", sb)
	}

	// APPEND and SUBTRACT on the list key: from the default "delete" to
	// empty (retention off) and back.
	if err := alterResult(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{subtractOp("cleanup.policy", "delete")}, "alt")); err != nil {
		t.Fatal(err)
	}
	wantConfig(t, "subtracted", describedTopic(t, adm, "alt")["cleanup.policy"], "", srcTopic)
	if _, r := opts(); r != -1 {
		t.Errorf("cleanup.policy without delete: retention %v, want none", r)
	}
	if err := alterResult(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{appendOp("cleanup.policy", "delete")}, "alt")); err != nil {
		t.Fatal(err)
	}
	wantConfig(t, "appended", describedTopic(t, adm, "alt")["cleanup.policy"], "delete", srcTopic)
	if _, r := opts(); r != time.Minute {
		t.Errorf("cleanup.policy=delete again: retention %v", r)
	}

	// AlterConfigs replaces the whole set: retention.ms and cleanup.policy,
	// not given, go back to their defaults.
	if err := alterResult(adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{set("max.message.bytes", "2048")}, "alt")); err != nil {
		t.Fatal(err)
	}
	got = describedTopic(t, adm, "alt")
	wantConfig(t, "replaced", got["max.message.bytes"], "2048", srcTopic)
	wantConfig(t, "removed", got["retention.ms"], "604800000", srcDefault)
	wantConfig(t, "removed", got["cleanup.policy"], "delete", srcDefault)
	if cfg, _ := tb.cfgs.TopicConfigs("alt"); len(cfg) != 1 {
		t.Errorf("overrides after AlterConfigs: %v", cfg)
	}

	// validate_only changes nothing, and still reports errors.
	if err := alterResult(adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{set("retention.ms", "1")}, "alt")); err != nil {
		t.Fatal(err)
	}
	if err := alterResult(adm.ValidateAlterTopicConfigsState(ctx, []kadm.AlterConfig{set("retention.ms", "1")}, "alt")); err != nil {
		t.Fatal(err)
	}
	if err := alterResult(adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{set("retention.ms", "-2")}, "alt")); !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("validate-only of a bad value: %v", err)
	}
	got = describedTopic(t, adm, "alt")
	wantConfig(t, "after validate-only", got["retention.ms"], "604800000", srcDefault)
	wantConfig(t, "after validate-only", got["max.message.bytes"], "2048", srcTopic)
	if _, r := opts(); r != 7*24*time.Hour {
		t.Errorf("retention after validate-only: %v", r)
	}

	// Values are stored normalized.
	if err := alterResult(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("cleanup.policy", " delete "), set("preallocate", "TRUE")}, "alt")); err != nil {
		t.Fatal(err)
	}
	if cfg, _ := tb.cfgs.TopicConfigs("alt"); cfg["cleanup.policy"] != "delete" || cfg["preallocate"] != "true" {
		t.Errorf("normalized overrides: %v", cfg)
	}
}

func TestAlterConfigsErrors(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	adm := tb.admin(t)
	ctx := ctxTimeout(t, 30*time.Second)
	tb.createTopic(t, "errs", 1)

	// Each invalid topic value: refused with INVALID_CONFIG naming the key
	// and the value, by IncrementalAlterConfigs and AlterConfigs as by
	// CreateTopics (TestCreateTopicsValidatesConfigs).
	for _, c := range invalidTopicConfigs {
		what := c.key + "=" + c.value
		err := alterResult(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set(c.key, c.value)}, "errs"))
		if !errors.Is(err, kerr.InvalidConfig) || !strings.Contains(err.Error(), c.key) || c.key != "no.such.key" && !strings.Contains(err.Error(), c.value) {
			t.Errorf("incremental %s: %v", what, err)
		}
		if err := alterResult(adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{set(c.key, c.value)}, "errs")); !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("legacy %s: %v", what, err)
		}
	}
	if cfg, _ := tb.cfgs.TopicConfigs("errs"); len(cfg) != 0 {
		t.Fatalf("refused changes left overrides: %v", cfg)
	}
	// Cross-key rule, against the defaults.
	if err := alterResult(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("max.compaction.lag.ms", "10"), set("min.compaction.lag.ms", "20")}, "errs")); !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("min.compaction.lag.ms > max.compaction.lag.ms: %v", err)
	}
	// Accepted edge values.
	for _, c := range []kadm.AlterConfig{set("segment.bytes", "14"), set("retention.ms", "-1"), set("cleanup.policy", ""),
		set("cleanup.policy", "compact"), set("cleanup.policy", "delete, compact"), set("min.cleanable.dirty.ratio", "1"),
		set("min.cleanable.dirty.ratio", "0"), set("compression.gzip.level", "-1"), set("follower.replication.throttled.replicas", "*"),
		set("message.timestamp.before.max.ms", config.MaxLong), set("message.format.version", "2.8"),
		set("compression.type", "gzip"), set("compression.lz4.level", "1"), set("compression.zstd.level", "0")} {
		if err := alterResult(adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{c}, "errs")); err != nil {
			t.Errorf("%s=%s: %v", c.Name, *c.Value, err)
		}
	}

	// APPEND/SUBTRACT on a key that is not a list.
	if err := alterResult(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{appendOp("retention.ms", "1")}, "errs")); !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("APPEND to retention.ms: %v", err)
	}
	if err := alterResult(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{appendOp("cleanup.policy", "shrink")}, "errs")); !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("APPEND shrink: %v", err)
	}
	// Deleting a key that is not set, or does not exist, succeeds (Kafka's
	// controller writes nothing).
	if err := alterResult(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{del("retention.ms"), del("no.such.key")}, "errs")); err != nil {
		t.Errorf("DELETE of unset keys: %v", err)
	}

	// Topics that do not exist or cannot: configs are checked first.
	if err := alterResult(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("retention.ms", "1")}, "nope")); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("alter an unknown topic: %v", err)
	}
	if err := alterResult(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("retention.ms", "x")}, "nope")); !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("alter an unknown topic with a bad value: %v", err)
	}
	if err := alterResult(adm.AlterTopicConfigsState(ctx, nil, "bad name")); !errors.Is(err, kerr.InvalidTopicException) {
		t.Errorf("alter an invalid name: %v", err)
	}
	if err := alterResult(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("retention.ms", "1")}, "")); !errors.Is(err, kerr.InvalidRequest) {
		t.Errorf("alter the empty topic name: %v", err)
	}
	// Broker resources: Kafka answers INVALID_REQUEST for what it refuses.
	brokerCases := []struct {
		what    string
		configs []kadm.AlterConfig
		want    *kerr.Error
	}{
		{"read-only broker.id", []kadm.AlterConfig{set("broker.id", "1")}, kerr.InvalidRequest},
		{"read-only log.dirs", []kadm.AlterConfig{set("log.dirs", "/tmp/x")}, kerr.InvalidRequest},
		{"read-only listeners", []kadm.AlterConfig{set("listeners", "PLAINTEXT://:9093")}, kerr.InvalidRequest},
		{"read-only log.retention.hours", []kadm.AlterConfig{set("log.retention.hours", "1")}, kerr.InvalidRequest},
		{"unknown key", []kadm.AlterConfig{set("log.cleaner.no.such.key", "2")}, kerr.InvalidRequest},
		{"read-only log.cleaner.threads", []kadm.AlterConfig{set("log.cleaner.threads", "2")}, kerr.InvalidRequest},
		{"read-only log.cleaner.dedupe.buffer.size", []kadm.AlterConfig{set("log.cleaner.dedupe.buffer.size", "1048576")}, kerr.InvalidRequest},
		{"log.cleaner.min.cleanable.ratio=2", []kadm.AlterConfig{set("log.cleaner.min.cleanable.ratio", "2")}, kerr.InvalidRequest},
		{"not a number", []kadm.AlterConfig{set("log.retention.ms", "abc")}, kerr.InvalidRequest},
		{"log.roll.ms=0", []kadm.AlterConfig{set("log.roll.ms", "0")}, kerr.InvalidRequest},
		{"remove", []kadm.AlterConfig{set("log.cleanup.policy", "remove")}, kerr.InvalidRequest},
		{"producer.id.expiration.ms=0", []kadm.AlterConfig{set("producer.id.expiration.ms", "0")}, kerr.InvalidRequest},
		{"APPEND to a number", []kadm.AlterConfig{appendOp("log.retention.ms", "1")}, kerr.InvalidConfig},
	}
	for _, c := range brokerCases {
		for _, node := range [][]int32{nil, {0}} {
			err := alterResult(adm.AlterBrokerConfigs(ctx, c.configs, node...))
			if !errors.Is(err, c.want) {
				t.Errorf("broker %v %s: %v, want %v", node, c.what, err, c.want)
			}
		}
	}
	// A per-broker key (Kafka's listener SASL keys) as the cluster-wide
	// default, and with a bad value.
	if err := alterResult(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("sasl.kerberos.min.time.before.relogin", "58000")})); !errors.Is(err, kerr.InvalidRequest) ||
		!strings.Contains(err.Error(), "broker id must be specified") {
		t.Errorf("per-broker key at the cluster level: %v", err)
	}
	if err := alterResult(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("sasl.login.refresh.buffer.seconds", "70000")}, 0)); !errors.Is(err, kerr.InvalidRequest) {
		t.Errorf("sasl.login.refresh.buffer.seconds=70000 (not a SHORT): %v", err)
	}
	if d := tb.cfgs.Dynamic(); len(d.Node) != 0 || len(d.Cluster) != 0 {
		t.Fatalf("refused broker changes were applied: %+v", d)
	}
	// As librdkafka's 0081-admin AlterConfigs sets it on broker 0: accepted,
	// stored and described, as Kafka keeps it.
	if err := alterResult(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("sasl.kerberos.min.time.before.relogin", "58000")}, 0)); err != nil {
		t.Fatalf("sasl.kerberos.min.time.before.relogin on broker 0: %v", err)
	}
	if err := alterResult(adm.AlterBrokerConfigsState(ctx, []kadm.AlterConfig{set("sasl.kerberos.min.time.before.relogin", "58000")}, 0)); err != nil {
		t.Fatalf("legacy AlterConfigs of sasl.kerberos.min.time.before.relogin on broker 0: %v", err)
	}
	rcs, err := adm.DescribeBrokerConfigs(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := rcs.On("0", nil); err != nil {
		t.Fatal(err)
	} else if v := findConfig(c.Configs, "sasl.kerberos.min.time.before.relogin"); v == nil || v.MaybeValue() != "58000" || v.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Errorf("described: %+v", v)
	}
	if err := alterResult(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{del("sasl.kerberos.min.time.before.relogin")}, 0)); err != nil {
		t.Fatal(err)
	}

	// Raw requests for what kadm cannot send.
	rc := dialRaw(t, tb.addr)
	inc := func(v int16, rs ...kmsg.IncrementalAlterConfigsRequestResource) *kmsg.IncrementalAlterConfigsResponse {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Resources = rs
		return rc.roundTrip(req, v).(*kmsg.IncrementalAlterConfigsResponse)
	}
	incRes := func(kind kmsg.ConfigResourceType, name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsRequestResource {
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName, rr.Configs = kind, name, ops
		return rr
	}
	op := func(o kmsg.IncrementalAlterConfigOp, k string, v *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Op, c.Name, c.Value = o, k, v
		return c
	}
	ms := kmsg.StringPtr("1000")
	for v := int16(0); v <= 1; v++ {
		topic := kmsg.ConfigResourceTypeTopic
		cases := []struct {
			what string
			rs   []kmsg.IncrementalAlterConfigsRequestResource
			want []*kerr.Error
		}{
			{"key named twice", []kmsg.IncrementalAlterConfigsRequestResource{incRes(topic, "errs", op(0, "retention.ms", ms), op(0, "retention.ms", ms))}, []*kerr.Error{kerr.InvalidRequest}},
			{"null value", []kmsg.IncrementalAlterConfigsRequestResource{incRes(topic, "errs", op(0, "retention.ms", nil))}, []*kerr.Error{kerr.InvalidRequest}},
			{"unknown op", []kmsg.IncrementalAlterConfigsRequestResource{incRes(topic, "errs", op(7, "retention.ms", ms))}, []*kerr.Error{kerr.InvalidRequest}},
			{"resource named twice", []kmsg.IncrementalAlterConfigsRequestResource{incRes(topic, "errs"), incRes(topic, "errs")}, []*kerr.Error{kerr.InvalidRequest, kerr.InvalidRequest}},
			{"unknown type", []kmsg.IncrementalAlterConfigsRequestResource{incRes(99, "errs")}, []*kerr.Error{kerr.InvalidRequest}},
			{"broker logger", []kmsg.IncrementalAlterConfigsRequestResource{incRes(kmsg.ConfigResourceTypeBrokerLogger, "0")}, []*kerr.Error{kerr.InvalidRequest}},
			{"another broker", []kmsg.IncrementalAlterConfigsRequestResource{incRes(kmsg.ConfigResourceTypeBroker, "1", op(0, "log.retention.ms", ms))}, []*kerr.Error{kerr.InvalidRequest}},
			{"broker name not a number", []kmsg.IncrementalAlterConfigsRequestResource{incRes(kmsg.ConfigResourceTypeBroker, "zero", op(0, "log.retention.ms", ms))}, []*kerr.Error{kerr.InvalidRequest}},
			{"one good, one bad", []kmsg.IncrementalAlterConfigsRequestResource{incRes(topic, "errs", op(1, "retention.ms", nil)), incRes(topic, "nope", op(1, "retention.ms", nil))}, []*kerr.Error{nil, kerr.UnknownTopicOrPartition}},
		}
		for _, c := range cases {
			resp := inc(v, c.rs...)
			if len(resp.Resources) != len(c.want) {
				t.Fatalf("v%d %s: %d results", v, c.what, len(resp.Resources))
			}
			for i, w := range c.want {
				got := resp.Resources[i]
				if w == nil && got.ErrorCode != 0 || w != nil && got.ErrorCode != w.Code {
					t.Errorf("v%d %s: result %d: %v, want %v", v, c.what, i, kerr.ErrorForCode(got.ErrorCode), w)
				}
				if got.ResourceName != c.rs[i].ResourceName || got.ResourceType != c.rs[i].ResourceType {
					t.Errorf("v%d %s: result %d names %v %q", v, c.what, i, got.ResourceType, got.ResourceName)
				}
			}
		}
	}
	// The same through AlterConfigs.
	legacy := func(v int16, rs ...kmsg.AlterConfigsRequestResource) *kmsg.AlterConfigsResponse {
		req := kmsg.NewPtrAlterConfigsRequest()
		req.Resources = rs
		return rc.roundTrip(req, v).(*kmsg.AlterConfigsResponse)
	}
	legRes := func(kind kmsg.ConfigResourceType, name string, kv ...*string) kmsg.AlterConfigsRequestResource {
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kind, name
		for i := 0; i+1 < len(kv); i += 2 {
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = *kv[i], kv[i+1]
			rr.Configs = append(rr.Configs, c)
		}
		return rr
	}
	key := kmsg.StringPtr("retention.ms")
	for v := int16(0); v <= 2; v++ {
		for _, c := range []struct {
			what string
			rs   []kmsg.AlterConfigsRequestResource
			want []*kerr.Error
		}{
			{"key named twice", []kmsg.AlterConfigsRequestResource{legRes(kmsg.ConfigResourceTypeTopic, "errs", key, ms, key, ms)}, []*kerr.Error{kerr.InvalidRequest}},
			{"null value", []kmsg.AlterConfigsRequestResource{legRes(kmsg.ConfigResourceTypeTopic, "errs", key, nil)}, []*kerr.Error{kerr.InvalidRequest}},
			{"resource named twice", []kmsg.AlterConfigsRequestResource{legRes(kmsg.ConfigResourceTypeBroker, ""), legRes(kmsg.ConfigResourceTypeBroker, "")}, []*kerr.Error{kerr.InvalidRequest, kerr.InvalidRequest}},
			{"broker logger", []kmsg.AlterConfigsRequestResource{legRes(kmsg.ConfigResourceTypeBrokerLogger, "0")}, []*kerr.Error{kerr.InvalidRequest}},
			{"another broker", []kmsg.AlterConfigsRequestResource{legRes(kmsg.ConfigResourceTypeBroker, "3")}, []*kerr.Error{kerr.InvalidRequest}},
			{"good", []kmsg.AlterConfigsRequestResource{legRes(kmsg.ConfigResourceTypeTopic, "errs", key, ms)}, []*kerr.Error{nil}},
		} {
			resp := legacy(v, c.rs...)
			for i, w := range c.want {
				got := resp.Resources[i]
				if w == nil && got.ErrorCode != 0 || w != nil && got.ErrorCode != w.Code {
					t.Errorf("AlterConfigs v%d %s: result %d: %v, want %v", v, c.what, i, kerr.ErrorForCode(got.ErrorCode), w)
				}
			}
		}
	}
}

func findConfig(cs []kadm.Config, key string) *kadm.Config {
	for i := range cs {
		if cs[i].Key == key {
			return &cs[i]
		}
	}
	return nil
}
