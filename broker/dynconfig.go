package broker

// The layers a configuration value comes from, beyond Config: topic
// overrides and the two dynamic broker layers, the cluster-wide default
// (the coordinator's BrokerConfigs) and this broker's own (NodeConfigs),
// read at start; and the effective values they give: what DescribeConfigs
// reports, and the engine options of a topic's logs (Broker.logOptions,
// which the Store calls when a log opens and when a change reloads it;
// configchange.go makes changes).
//
// Precedence, lowest first: Kafka's default < the configuration file
// (Config) < the cluster-wide dynamic default < this broker's dynamic
// config < the topic's override.
//
// The dynamic layers are an immutable value behind an atomic pointer: the
// Store's LogOptions callback reads them under the Store's lock without
// taking another.

import (
	"fmt"
	"maps"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
)

// configState is the broker's configuration beyond Config.
type configState struct {
	static  map[string]string // STATIC_BROKER_CONFIG: the keys Config sets; read-only after New
	dynamic atomic.Pointer[DynamicConfigs]
}

// DynamicConfigs are the two dynamic broker layers. Immutable: a change
// stores a new value.
type DynamicConfigs struct {
	Node    map[string]string // DYNAMIC_BROKER_CONFIG, resource "<id>"
	Cluster map[string]string // DYNAMIC_DEFAULT_BROKER_CONFIG, resource ""
}

// SourcedValue is one layer's value of a key: an entry of DescribeConfigs'
// synonyms.
type SourcedValue struct {
	Name   string
	Value  *string
	Source kmsg.ConfigSource
}

// loadConfigs fills the static layer from the configuration as given
// (before defaults) and the dynamic layers from the coordinator. Persisted
// entries that no longer validate are dropped with a warning, as Kafka
// does.
func (b *Broker) loadConfigs(raw Config) {
	b.cfgs.static = StaticBrokerConfigs(raw)
	b.loadDynamicConfigs()
	b.applyReplicationRates()
}

// loadDynamicConfigs reads the dynamic layers from the coordinator.
func (b *Broker) loadDynamicConfigs() {
	valid := func(layer string, m map[string]string) map[string]string {
		for k, v := range m {
			if _, err := ValidateBrokerConfig(k, v); err != nil {
				if SensitiveBrokerKey(k) {
					v = "[hidden]" // as Kafka logs a secret
				}
				b.log.Warn("ignoring invalid dynamic broker config", "layer", layer, "key", k, "value", v, "err", err)
				delete(m, k)
			}
		}
		return m
	}
	b.cfgs.dynamic.Store(&DynamicConfigs{
		Node:    valid("broker "+strconv.Itoa(int(b.cfg.ID)), b.coord.NodeConfigs(b.cfg.ID)),
		Cluster: valid("cluster default", b.coord.BrokerConfigs()),
	})
}

// PutNonZero sets m[k] to n unless n is 0 (a field not set): the static
// values of the sub-configs' keys.
func PutNonZero(m map[string]string, k string, n int64) {
	if n != 0 {
		m[k] = strconv.FormatInt(n, 10)
	}
}

// StaticBrokerConfigs are the broker keys the configuration sets (fields
// that are not zero), by Kafka name. A duration is given as its .ms key.
// Secrets are among them: DescribeConfigs never shows a sensitive key's
// value (configs_security.go).
func StaticBrokerConfigs(c Config) map[string]string {
	m := map[string]string{}
	num := func(k string, n int64) { PutNonZero(m, k, n) }
	ms := func(k string, d time.Duration) {
		if d != 0 {
			m[k] = strconv.FormatInt(d.Milliseconds(), 10)
		}
	}
	if c.ID != 0 {
		num("broker.id", int64(c.ID))
		num("node.id", int64(c.ID))
	}
	c.staticListeners(m)
	if c.DataDir != "" {
		m["log.dirs"] = c.DataDir
		m["log.dir"] = c.DataDir // either key sets it
	}
	num("num.partitions", int64(c.NumPartitions))
	num("default.replication.factor", int64(c.DefaultReplicationFactor))
	if c.AutoCreateTopics != nil {
		m["auto.create.topics.enable"] = strconv.FormatBool(*c.AutoCreateTopics)
	}
	num("message.max.bytes", int64(c.MessageMaxBytes))
	num("socket.request.max.bytes", int64(c.SocketRequestMaxBytes))
	num("log.segment.bytes", c.LogSegmentBytes)
	ms("log.roll.ms", c.LogRoll)
	num("log.index.size.max.bytes", int64(c.LogIndexSizeMaxBytes))
	num("log.index.interval.bytes", int64(c.LogIndexIntervalBytes))
	if c.LogRetention < 0 {
		m["log.retention.ms"] = "-1"
	} else {
		ms("log.retention.ms", c.LogRetention)
	}
	num("log.retention.bytes", c.LogRetentionBytes)
	ms("log.retention.check.interval.ms", c.LogRetentionCheck)
	num("log.flush.interval.messages", c.FlushIntervalMessages)
	ms("log.flush.interval.ms", c.FlushInterval)
	ms("producer.id.expiration.ms", c.ProducerIDExpiration)
	if c.LogCleanupPolicy != nil {
		m["log.cleanup.policy"] = *c.LogCleanupPolicy
	}
	if c.CompressionType != "" {
		m["compression.type"] = c.CompressionType
	}
	num("compression.gzip.level", int64(c.CompressionGzipLevel))
	num("compression.lz4.level", int64(c.CompressionLZ4Level))
	num("compression.zstd.level", int64(c.CompressionZstdLevel))
	c.Cleaner.static(m)
	c.Network.static(m)
	c.ClientQuotas.static(m)
	c.TLS.static(m)
	c.SASL.static(m)
	c.Authz.static(m)
	c.Cluster.Election.static(m)
	c.Cluster.static(m)
	c.Groups.static(m)
	c.Txns.static(m)
	c.Observability.static(m)
	maps.Copy(m, c.StaticKeys)
	num("replication.quota.window.num", int64(c.Cluster.QuotaWindowNum))
	num("replication.quota.window.size.seconds", int64(c.Cluster.QuotaWindowSize/time.Second))
	return m
}

// brokerChain is every layer's value of the broker keys names (synonyms of
// one setting, highest priority first), in precedence order: what
// DescribeConfigs lists as synonyms; the first is the effective value.
// perBroker includes this broker's own dynamic layer.
func (b *Broker) brokerChain(names []string, perBroker bool) []SourcedValue {
	d := b.cfgs.dynamic.Load()
	var out []SourcedValue
	layer := func(m map[string]string, src kmsg.ConfigSource) {
		for _, n := range names {
			if v, ok := m[n]; ok {
				out = append(out, SourcedValue{n, &v, src})
			}
		}
	}
	if perBroker {
		layer(d.Node, kmsg.ConfigSourceDynamicBrokerConfig)
	}
	layer(d.Cluster, kmsg.ConfigSourceDynamicDefaultBrokerConfig)
	layer(b.cfgs.static, kmsg.ConfigSourceStaticBrokerConfig)
	for _, n := range names {
		if k := BrokerKeyByName[n]; k != nil && k.Default != nil {
			out = append(out, SourcedValue{n, k.Default, kmsg.ConfigSourceDefaultConfig})
		}
	}
	return out
}

// topicChain is topic key k's chain for a topic with overrides, and its
// effective value: the override, else the first broker synonym's value in
// the topic key's unit, else Kafka's default.
func (b *Broker) topicChain(k *Key, overrides map[string]string) (*string, []SourcedValue) {
	var chain []SourcedValue
	if v, ok := overrides[k.Name]; ok {
		chain = append(chain, SourcedValue{k.Name, &v, kmsg.ConfigSourceDynamicTopicConfig})
	}
	names := make([]string, len(k.Synonyms))
	for i, s := range k.Synonyms {
		names[i] = s.Name
	}
	chain = append(chain, b.brokerChain(names, true)...)
	if len(chain) == 0 {
		return k.Default, nil
	}
	first := chain[0]
	if first.Source == kmsg.ConfigSourceDynamicTopicConfig {
		return first.Value, chain
	}
	v := TopicValueFromBroker(first.Name, *first.Value, SynonymUnit(k, first.Name))
	return &v, chain
}

func SynonymUnit(k *Key, broker string) int64 {
	for _, s := range k.Synonyms {
		if s.Name == broker {
			return s.unit
		}
	}
	return 0
}

// topicValue is the effective value of a topic key ("" when it has none).
func (b *Broker) topicValue(key string, overrides map[string]string) string {
	v, _ := b.topicChain(TopicKeyByName[key], overrides)
	if v == nil {
		return ""
	}
	return *v
}

// WithDynamicDefaults is a topic's overrides plus, for every topic key it
// does not override, the value a dynamic broker config gives it, or else
// one of static, the configuration's keys no field of Config takes
// (Config.StaticKeys): with Config's fields and defaults this is the
// topic's whole effective configuration, which Config.logOptions turns
// into engine options.
func (d *DynamicConfigs) WithDynamicDefaults(overrides, static map[string]string) map[string]string {
	if len(d.Node) == 0 && len(d.Cluster) == 0 && len(static) == 0 {
		return overrides
	}
	out := maps.Clone(overrides)
	if out == nil {
		out = map[string]string{}
	}
	for i := range TopicKeys {
		k := &TopicKeys[i]
		if _, ok := out[k.Name]; ok {
			continue
		}
	layers:
		for _, m := range []map[string]string{d.Node, d.Cluster, static} {
			for _, s := range k.Synonyms {
				if v, ok := m[s.Name]; ok {
					out[k.Name] = TopicValueFromBroker(s.Name, v, s.unit)
					break layers
				}
			}
		}
	}
	return out
}

// BrokerValue is the value of a broker key from the dynamic layers.
func (d *DynamicConfigs) BrokerValue(key string) (string, bool) {
	if v, ok := d.Node[key]; ok {
		return v, true
	}
	v, ok := d.Cluster[key]
	return v, ok
}

// logOptions is the engine configuration of a topic's logs: the broker's
// configuration with its dynamic layers, overridden by the topic's configs;
// with metrics, the flushes timed.
func (b *Broker) logOptions(topicConfigs map[string]string) engine.Options {
	d := b.cfgs.dynamic.Load()
	o := b.cfg.LogOptions(d.WithDynamicDefaults(topicConfigs, b.cfg.StaticKeys))
	if v, ok := d.BrokerValue("producer.id.expiration.ms"); ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			o.ProducerIDExpiration = time.Duration(n) * time.Millisecond
		}
	}
	if b.metrics != nil {
		o.OnFlush = b.metrics.flushed // read at a log's open only
	}
	return o
}

// minInsyncReplicas is a topic's effective min.insync.replicas.
func (b *Broker) minInsyncReplicas(topicConfigs map[string]string) int32 {
	n, err := strconv.ParseInt(b.topicValue("min.insync.replicas", topicConfigs), 10, 32)
	if err != nil || n < 1 {
		return 1
	}
	return int32(n)
}

// topicConfigs returns a copy of a topic's overrides, or false if it does
// not exist.
func (b *Broker) topicConfigs(name string) (map[string]string, bool) {
	// Any topic of the cluster, hosted here or not.
	if !b.topicExists(name) {
		return nil, false
	}
	t, ok := b.coord.Topic(name)
	if !ok {
		if err := b.coord.LoadTopic(name); err != nil {
			b.log.Warn("reading a topic's config", "topic", name, "err", err)
		}
		t, _ = b.coord.Topic(name)
	}
	return t.Configs, true
}

// brokerResource checks a broker resource name: "" (the cluster-wide
// default) or this broker's id. It returns whether it names this broker.
func (b *Broker) brokerResource(name string) (perBroker bool, code int16, msg string) {
	if name == "" {
		return false, 0, ""
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return false, kerr.InvalidRequest.Code, "Broker id must be an integer, but it is: " + name
	}
	if int32(id) != b.cfg.ID {
		return false, kerr.InvalidRequest.Code, fmt.Sprintf("Unexpected broker id, expected %d or empty string, but received %s", b.cfg.ID, name)
	}
	return true, 0, ""
}

// SaturatingMs converts ms to a Duration, saturating instead of
// overflowing (Kafka's "never" is Long.MAX_VALUE ms).
func SaturatingMs(n int64) time.Duration {
	if n > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	if n < math.MinInt64/int64(time.Millisecond) {
		return math.MinInt64
	}
	return time.Duration(n) * time.Millisecond
}
