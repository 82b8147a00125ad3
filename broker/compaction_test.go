package broker

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/engine"
)

// noBackgroundCleaner leaves cleaning to forceClean, so tests decide when
// it happens.
func noBackgroundCleaner(c *config.Config) {
	off := false
	c.Cleaner.Enable = &off
}

// forceClean makes everything appended to topic cleanable (flushed, so the
// recovery point is past it) and cleans every log that qualifies, now. The
// active segment is never cleaned, as in Kafka.
func (tb *testBroker) forceClean(t testing.TB, topic string) []engine.CleanStats {
	t.Helper()
	ts := tb.topic(topic)
	if ts == nil {
		t.Fatalf("no topic %s", topic)
	}
	for _, p := range ts.Partitions {
		if err := p.Log.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	st, err := tb.store.Compact()
	if err != nil {
		t.Fatalf("compact: %v", err)
	}
	return st
}

// produceKeyed produces key=value pairs (kv: key, value, key, value...) to
// partition 0 of topic, each its own batch; a value "<nil>" is a tombstone.
func produceKeyed(t testing.TB, cl *kgo.Client, topic string, kv ...string) error {
	t.Helper()
	ctx := ctxTimeout(t, 10*time.Second)
	for i := 0; i < len(kv); i += 2 {
		r := &kgo.Record{Topic: topic, Key: []byte(kv[i])}
		if kv[i+1] != "<nil>" {
			r.Value = []byte(kv[i+1])
		}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			return err
		}
	}
	return nil
}

// TestCompactedTopic: many updates to a few keys; after a clean a consumer
// reading from 0 sees one record per key, the latest, at its original
// offset.
func TestCompactedTopic(t *testing.T) {
	tb := startBroker(t, t.TempDir(), noBackgroundCleaner)
	adm := tb.admin(t)
	ctx := ctxTimeout(t, 60*time.Second)
	// segment.bytes at its minimum: every batch rolls a segment, so all
	// but the last are cleanable.
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
		"cleanup.policy": kadm.StringPtr("compact"), "segment.bytes": kadm.StringPtr("14"),
	}, "table"); err != nil {
		t.Fatal(err)
	}
	if p := tb.partition("table", 0).Log.Options().Compaction.Policy; p != engine.PolicyCompact {
		t.Fatalf("log policy %v, want compact", p)
	}
	cl := tb.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	type latest struct {
		offset int64
		value  string
	}
	want := map[string]latest{}
	var kv []string
	const updates, keys = 300, 5
	for i := range updates {
		k := "k" + strconv.Itoa(i%keys)
		kv = append(kv, k, "v"+strconv.Itoa(i))
		want[k] = latest{int64(i), "v" + strconv.Itoa(i)}
	}
	kv = append(kv, "end", "last") // stays in the active segment
	want["end"] = latest{updates, "last"}
	if err := produceKeyed(t, cl, "table", kv...); err != nil {
		t.Fatal(err)
	}
	st := tb.forceClean(t, "table")
	var removed int64
	for _, s := range st {
		removed += s.Removed
	}
	if removed != updates-keys {
		t.Errorf("cleaning removed %d records, want %d: %+v", removed, updates-keys, st)
	}
	got := tb.consumeFrom(t, "table", 0, len(want))
	seen := map[string]bool{}
	for _, r := range got {
		k := string(r.Key)
		w, ok := want[k]
		if !ok || seen[k] || r.Offset != w.offset || string(r.Value) != w.value {
			t.Errorf("consumed %s=%s at %d; want one record per key, the latest: %s=%s at %d", k, r.Value, r.Offset, k, w.value, w.offset)
		}
		seen[k] = true
	}
	if end := tb.partition("table", 0).Log.EndOffset(); end != updates+1 {
		t.Errorf("log end %d after cleaning, want %d", end, updates+1)
	}
}

// TestCompactedTopicRefusesKeylessRecords: Kafka's LogValidator check,
// for uncompressed and compressed batches; keyed records pass, and a
// topic that does not compact takes keyless records.
func TestCompactedTopicRefusesKeylessRecords(t *testing.T) {
	tb := startBroker(t, t.TempDir(), noBackgroundCleaner)
	adm := tb.admin(t)
	ctx := ctxTimeout(t, 60*time.Second)
	for _, policy := range []string{"compact", "delete,compact"} {
		name := "keys-" + strings.ReplaceAll(policy, ",", "-")
		if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr(policy)}, name); err != nil {
			t.Fatal(err)
		}
		for _, codec := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.ZstdCompression(), kgo.Lz4Compression(), kgo.SnappyCompression()} {
			cl := tb.client(t, kgo.ProducerBatchCompression(codec))
			value := bytes.Repeat([]byte("compressible "), 100)
			err := cl.ProduceSync(ctx, &kgo.Record{Topic: name, Value: value}).FirstErr()
			if !errors.Is(err, kerr.InvalidRecord) {
				t.Errorf("%s, %v: keyless produce: %v, want INVALID_RECORD", policy, codec, err)
			}
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: name, Key: []byte("k"), Value: value}).FirstErr(); err != nil {
				t.Errorf("%s, %v: keyed produce: %v", policy, codec, err)
			}
			// An empty key is a key.
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: name, Key: []byte{}, Value: value}).FirstErr(); err != nil {
				t.Errorf("%s, %v: empty-key produce: %v", policy, codec, err)
			}
			cl.Close()
		}
	}
	tb.createTopic(t, "deletes", 1)
	produceSync(t, tb.client(t), "deletes", 0, "keyless is fine here")

	// The response as Kafka words it: the whole batch refused, one error
	// record per keyless record, the first three in the message.
	for _, codec := range []engine.Compression{engine.CompressionNone, engine.CompressionZstd} {
		var bb engine.BatchBuilder
		now := time.Now().UnixMilli()
		for i := range 6 {
			r := engine.Record{Timestamp: now, Value: []byte("v")}
			if i%3 == 1 {
				r.Key = []byte("k")
			}
			bb.Add(r)
		}
		batch, err := bb.BuildCompressed(codec)
		if err != nil {
			t.Fatal(err)
		}
		rc := dialRaw(t, tb.addr)
		resp := rc.roundTrip(produceReq("keys-compact", 0, -1, batch), 9).(*kmsg.ProduceResponse)
		sp := resp.Topics[0].Partitions[0]
		if sp.ErrorCode != kerr.InvalidRecord.Code || sp.BaseOffset != -1 {
			t.Fatalf("%v: code %d base offset %d, want INVALID_RECORD and -1", codec, sp.ErrorCode, sp.BaseOffset)
		}
		why := "Compacted topic cannot accept message without key in topic partition keys-compact-0."
		var idx []int32
		for _, e := range sp.ErrorRecords {
			idx = append(idx, e.RelativeOffset)
			if e.ErrorMessage == nil || *e.ErrorMessage != why {
				t.Errorf("%v: error record message %v, want %q", codec, e.ErrorMessage, why)
			}
		}
		if fmt.Sprint(idx) != "[0 2 3 5]" {
			t.Errorf("%v: error records at %v, want [0 2 3 5]", codec, idx)
		}
		wantMsg := "One or more records have been rejected due to 4 record errors in total, and only showing the first three errors at most: [" +
			"RecordError(batchIndex=0, message='" + why + "'), RecordError(batchIndex=2, message='" + why + "'), RecordError(batchIndex=3, message='" + why + "')]"
		if sp.ErrorMessage == nil || *sp.ErrorMessage != wantMsg {
			t.Errorf("%v: message %v\nwant %q", codec, sp.ErrorMessage, wantMsg)
		}
	}
}

// TestCleanupPolicyConfig: cleanup.policy and the compaction keys as
// CreateTopics, DescribeConfigs and AlterConfigs see them, and the engine
// options they give, live.
func TestCleanupPolicyConfig(t *testing.T) {
	tb := startBroker(t, t.TempDir(), noBackgroundCleaner)
	adm := tb.admin(t)
	ctx := ctxTimeout(t, 60*time.Second)
	tb.createTopic(t, "flip", 1)
	opts := func() engine.CompactionOptions { return tb.partition("flip", 0).Log.Options().Compaction }
	wantConfig(t, "default", describedTopic(t, adm, "flip")["cleanup.policy"], "delete", kmsg.ConfigSourceDefaultConfig)
	if opts().Policy != engine.PolicyDelete {
		t.Fatalf("default policy %v", opts().Policy)
	}
	cl := tb.client(t)
	produceSync(t, cl, "flip", 0, "keyless")

	// delete -> compact, live: keyless records are refused from then on.
	mustAlter(t)(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		set("cleanup.policy", "delete , compact"), set("min.cleanable.dirty.ratio", "0.25"), set("min.compaction.lag.ms", "1000"),
		set("max.compaction.lag.ms", "60000"), set("delete.retention.ms", "0"),
	}, "flip"))
	wantConfig(t, "altered", describedTopic(t, adm, "flip")["cleanup.policy"], "delete,compact", kmsg.ConfigSourceDynamicTopicConfig,
		"cleanup.policy=delete,compact/DYNAMIC_TOPIC_CONFIG", "log.cleanup.policy=delete/DEFAULT_CONFIG")
	want := engine.CompactionOptions{Policy: engine.PolicyCompactDelete, MinCleanableDirtyRatio: 0.25, MinCompactionLag: time.Second,
		MaxCompactionLag: time.Minute, DeleteRetention: -1} // the engine's "0"
	if got := opts(); got != want {
		t.Errorf("options after alter: %+v, want %+v", got, want)
	}
	if err := produceAt(t, cl, "flip", time.Time{}, "keyless"); !errors.Is(err, kerr.InvalidRecord) {
		t.Errorf("keyless produce to the now compacted topic: %v", err)
	}
	if err := produceKeyed(t, cl, "flip", "k", "v"); err != nil {
		t.Error(err)
	}
	// ratio 0 and the defaults of the other keys.
	mustAlter(t)(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("cleanup.policy", "compact"), set("min.cleanable.dirty.ratio", "0"),
		del("min.compaction.lag.ms"), del("max.compaction.lag.ms"), del("delete.retention.ms")}, "flip"))
	if got := opts(); got.Policy != engine.PolicyCompact || !(got.MinCleanableDirtyRatio > 0 && got.MinCleanableDirtyRatio < 1e-300) ||
		got.MaxCompactionLag != 0 || got.MinCompactionLag != 0 || got.DeleteRetention != engine.DefaultDeleteRetention {
		t.Errorf("options for ratio 0: %+v", got)
	}
	// And back to delete.
	mustAlter(t)(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{del("cleanup.policy"), del("min.cleanable.dirty.ratio")}, "flip"))
	if opts().Policy != engine.PolicyDelete {
		t.Errorf("policy after deleting the override: %v", opts().Policy)
	}
	produceSync(t, cl, "flip", 0, "keyless again")

	// Invalid values, at create and alter.
	for _, c := range [][2]string{
		{"cleanup.policy", "compacted"}, {"cleanup.policy", "compact,"}, {"min.cleanable.dirty.ratio", "-0.1"},
		{"min.cleanable.dirty.ratio", "1.01"}, {"min.compaction.lag.ms", "-1"}, {"max.compaction.lag.ms", "0"},
		{"delete.retention.ms", "-1"},
	} {
		_, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{c[0]: kadm.StringPtr(c[1])}, "bad-compaction")
		if !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("create with %s=%s: %v, want INVALID_CONFIG", c[0], c[1], err)
		}
		if err := alterResult(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set(c[0], c[1])}, "flip")); !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("alter to %s=%s: %v, want INVALID_CONFIG", c[0], c[1], err)
		}
	}
	if err := alterResult(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("min.compaction.lag.ms", "10"), set("max.compaction.lag.ms", "5")}, "flip")); !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("min.compaction.lag.ms > max.compaction.lag.ms: %v", err)
	}

	// The cluster-wide dynamic default compacts every topic without an
	// override.
	mustAlter(t)(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("log.cleanup.policy", "compact")}))
	wantConfig(t, "dynamic default", describedTopic(t, adm, "flip")["cleanup.policy"], "compact", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
	if opts().Policy != engine.PolicyCompact {
		t.Errorf("policy under log.cleanup.policy=compact: %v", opts().Policy)
	}
	if err := produceAt(t, cl, "flip", time.Time{}, "keyless"); !errors.Is(err, kerr.InvalidRecord) {
		t.Errorf("keyless produce under log.cleanup.policy=compact: %v", err)
	}
	mustAlter(t)(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{del("log.cleanup.policy")}))
	if opts().Policy != engine.PolicyDelete {
		t.Errorf("policy after the dynamic default is gone: %v", opts().Policy)
	}
}

// TestCleanerBrokerConfig: server.properties' log.cleaner.* keys reach the
// Store's cleaner and the topics' defaults, DescribeConfigs reports them
// from the configuration file, and the cleaner's keys are read-only at run
// time.
func TestCleanerBrokerConfig(t *testing.T) {
	props := map[string]string{
		"log.cleanup.policy":                "compact,delete",
		"log.cleaner.enable":                "false",
		"log.cleaner.threads":               "2",
		"log.cleaner.dedupe.buffer.size":    "4194304",
		"log.cleaner.io.buffer.size":        "65536",
		"log.cleaner.io.buffer.load.factor": "0.75",
		"log.cleaner.backoff.ms":            "250",
		"log.cleaner.delete.retention.ms":   "1000",
		"log.cleaner.min.cleanable.ratio":   "0.1",
		"log.cleaner.min.compaction.lag.ms": "5",
		"log.cleaner.max.compaction.lag.ms": "7000",
	}
	var cfg config.Config
	if unknown, err := cfg.Apply(props); err != nil || len(unknown) > 0 {
		t.Fatalf("Apply: unknown %v, err %v", unknown, err)
	}
	wantStore := engine.CleanerOptions{Disabled: true, Threads: 2, DedupeBufferBytes: 4 << 20, IOBufferBytes: 64 << 10, LoadFactor: 0.75, Backoff: 250 * time.Millisecond}
	if got := cfg.Cleaner.StoreOptions(); got != wantStore {
		t.Errorf("store options %+v, want %+v", got, wantStore)
	}
	for k, v := range map[string]string{
		"log.cleaner.min.cleanable.ratio": "1.5", "log.cleaner.threads": "-1", "log.cleaner.enable": "maybe",
		"log.cleanup.policy": "shred", "log.cleaner.max.compaction.lag.ms": "0", "log.cleaner.backoff.ms": "soon",
	} {
		var c config.Config
		if _, err := c.Apply(map[string]string{k: v}); err == nil {
			t.Errorf("Apply %s=%s: no error", k, v)
		}
	}
	var zero config.Config
	if _, err := zero.Apply(map[string]string{"log.cleaner.threads": "0"}); err != nil || !zero.Cleaner.StoreOptions().Disabled {
		t.Errorf("log.cleaner.threads=0: %v, options %+v, want the cleaner off", err, zero.Cleaner.StoreOptions())
	}

	tb := startBroker(t, t.TempDir(), func(c *config.Config) { c.LogCleanupPolicy, c.Cleaner = cfg.LogCleanupPolicy, cfg.Cleaner })
	tb.createTopic(t, "from-file", 1)
	wantOpts := engine.CompactionOptions{Policy: engine.PolicyCompactDelete, MinCleanableDirtyRatio: 0.1, MinCompactionLag: 5 * time.Millisecond,
		MaxCompactionLag: 7 * time.Second, DeleteRetention: time.Second}
	if got := tb.partition("from-file", 0).Log.Options().Compaction; got != wantOpts {
		t.Errorf("topic options %+v, want %+v", got, wantOpts)
	}
	adm := tb.admin(t)
	d := describedTopic(t, adm, "from-file")
	wantConfig(t, "static", d["cleanup.policy"], "compact,delete", kmsg.ConfigSourceStaticBrokerConfig,
		"log.cleanup.policy=compact,delete/STATIC_BROKER_CONFIG", "log.cleanup.policy=delete/DEFAULT_CONFIG")
	wantConfig(t, "static", d["min.cleanable.dirty.ratio"], "0.1", kmsg.ConfigSourceStaticBrokerConfig)
	wantConfig(t, "static", d["delete.retention.ms"], "1000", kmsg.ConfigSourceStaticBrokerConfig)
	bd := describedBroker(t, tb, "0")
	for k, v := range props {
		c := bd[k]
		if c.Value == nil || *c.Value != v || c.Source != kmsg.ConfigSourceStaticBrokerConfig {
			t.Errorf("broker %s: %v from %v, want %s from the file", k, c.Value, c.Source, v)
		}
	}
	if c := bd["log.cleaner.threads"]; !c.ReadOnly {
		t.Errorf("log.cleaner.threads is not read-only")
	}
	if c := bd["log.cleanup.policy"]; c.ReadOnly {
		t.Errorf("log.cleanup.policy is read-only")
	}
	// Defaults of a broker started without them.
	tb2 := startBroker(t, t.TempDir(), nil)
	bd = describedBroker(t, tb2, "0")
	for k, v := range map[string]string{
		"log.cleaner.enable": "true", "log.cleaner.threads": "1", "log.cleaner.dedupe.buffer.size": "134217728",
		"log.cleaner.io.buffer.size": "524288", "log.cleaner.io.buffer.load.factor": "0.9", "log.cleaner.backoff.ms": "15000",
		"log.cleaner.delete.retention.ms": "86400000", "log.cleaner.min.cleanable.ratio": "0.5", "log.cleanup.policy": "delete",
		"log.cleaner.min.compaction.lag.ms": "0", "log.cleaner.max.compaction.lag.ms": config.MaxLong,
	} {
		c := bd[k]
		if c.Value == nil || *c.Value != v || c.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("default broker %s: %v from %v, want %s by default", k, c.Value, c.Source, v)
		}
	}
	// Dynamic changes: the cleaner's keys are refused as read-only, the
	// topic defaults accepted.
	ctx := ctxTimeout(t, 10*time.Second)
	err := alterResult(tb2.admin(t).AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("log.cleaner.threads", "3")}))
	if !errors.Is(err, kerr.InvalidRequest) || !strings.Contains(err.Error(), "Cannot update these configs dynamically: [log.cleaner.threads]") {
		t.Errorf("dynamic log.cleaner.threads: %v", err)
	}
	mustAlter(t)(tb2.admin(t).AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("log.cleaner.min.cleanable.ratio", "0.3")}))
	tb2.createTopic(t, "ratio", 1)
	if got := tb2.partition("ratio", 0).Log.Options().Compaction.MinCleanableDirtyRatio; got != 0.3 {
		t.Errorf("ratio from the dynamic log.cleaner.min.cleanable.ratio: %v", got)
	}
}

// TestBackgroundCleaner: with the broker's cleaner settings (a short
// log.cleaner.backoff.ms), a compacted topic is cleaned with no call from
// the test.
func TestBackgroundCleaner(t *testing.T) {
	tb := startBroker(t, t.TempDir(), func(c *config.Config) {
		backoff := 10 * time.Millisecond
		c.Cleaner.Backoff = &backoff
	})
	ctx := ctxTimeout(t, 30*time.Second)
	if _, err := tb.admin(t).CreateTopic(ctx, 1, 1, map[string]*string{
		"cleanup.policy": kadm.StringPtr("compact"), "segment.bytes": kadm.StringPtr("14"),
	}, "bg"); err != nil {
		t.Fatal(err)
	}
	cl := tb.client(t)
	var kv []string
	for i := range 50 {
		kv = append(kv, "k"+strconv.Itoa(i%2), "v"+strconv.Itoa(i))
	}
	if err := produceKeyed(t, cl, "bg", kv...); err != nil {
		t.Fatal(err)
	}
	l := tb.partition("bg", 0).Log
	if err := l.Flush(); err != nil { // the cleaner stays below the recovery point
		t.Fatal(err)
	}
	pollUntil(t, "a background pass", func() bool {
		st, ok := l.LastClean()
		return ok && st.Removed > 0
	})
}
