package config

// The effective values of a running broker: its layers together (Layers:
// the static layer and the two dynamic ones), what DescribeConfigs reports
// as a key's value and synonyms (BrokerChain, TopicChain), and the values
// the broker acts on read through them, so that the broker parses no Kafka
// key itself (MinInsyncReplicas, UncleanLeaderElection, ReplicationRates,
// ProducerIDExpiration, ThrottledReplicas).

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Layers are a running broker's layers. Static is read-only once made;
// Dynamic is one immutable value (a change makes a new one).
type Layers struct {
	// Static is STATIC_BROKER_CONFIG: StaticBrokerConfigs of the
	// configuration as given.
	Static  map[string]string
	Dynamic *DynamicConfigs
}

// BrokerChain is every layer's value of the broker keys names (synonyms of
// one setting, highest priority first), in precedence order: what
// DescribeConfigs lists as synonyms; the first is the effective value.
// perBroker includes this broker's own dynamic layer.
func (l Layers) BrokerChain(names []string, perBroker bool) []SourcedValue {
	var out []SourcedValue
	layer := func(m map[string]string, src kmsg.ConfigSource) {
		for _, n := range names {
			if v, ok := m[n]; ok {
				out = append(out, SourcedValue{Name: n, Value: &v, Source: src})
			}
		}
	}
	if perBroker {
		layer(l.Dynamic.Node, kmsg.ConfigSourceDynamicBrokerConfig)
	}
	layer(l.Dynamic.Cluster, kmsg.ConfigSourceDynamicDefaultBrokerConfig)
	layer(l.Static, kmsg.ConfigSourceStaticBrokerConfig)
	for _, n := range names {
		if k := BrokerKeyByName[n]; k != nil && k.Default != nil {
			out = append(out, SourcedValue{Name: n, Value: k.Default, Source: kmsg.ConfigSourceDefaultConfig})
		}
	}
	return out
}

// TopicChain is topic key k's chain for a topic with overrides, and its
// effective value: the override, else the first broker synonym's value in
// the topic key's unit, else Kafka's default.
func (l Layers) TopicChain(k *Key, overrides map[string]string) (*string, []SourcedValue) {
	var chain []SourcedValue
	if v, ok := overrides[k.Name]; ok {
		chain = append(chain, SourcedValue{Name: k.Name, Value: &v, Source: kmsg.ConfigSourceDynamicTopicConfig})
	}
	names := make([]string, len(k.Synonyms))
	for i, s := range k.Synonyms {
		names[i] = s.Name
	}
	chain = append(chain, l.BrokerChain(names, true)...)
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

// TopicValue is the effective value of a topic key ("" when it has none).
func (l Layers) TopicValue(key string, overrides map[string]string) string {
	v, _ := l.TopicChain(TopicKeyByName[key], overrides)
	if v == nil {
		return ""
	}
	return *v
}

// MinInsyncReplicas is a topic's effective min.insync.replicas, at least 1.
func (l Layers) MinInsyncReplicas(overrides map[string]string) int32 {
	n, err := strconv.ParseInt(l.TopicValue("min.insync.replicas", overrides), 10, 32)
	if err != nil || n < 1 {
		return 1
	}
	return int32(n)
}

// UncleanLeaderElection is a topic's effective
// unclean.leader.election.enable.
func (l Layers) UncleanLeaderElection(overrides map[string]string) bool {
	return strings.EqualFold(l.TopicValue(UncleanLeaderElectionKey, overrides), "true")
}

// UncleanLeaderElectionKey is the topic key of unclean leader election,
// which the controller reads from a topic's overrides too.
const UncleanLeaderElectionKey = "unclean.leader.election.enable"

// ProducerIDExpiration is producer.id.expiration.ms from the dynamic
// layers; false if they do not set it (the configuration's value holds).
func (d *DynamicConfigs) ProducerIDExpiration() (time.Duration, bool) {
	if v, ok := d.BrokerValue("producer.id.expiration.ms"); ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			return time.Duration(n) * time.Millisecond, true
		}
	}
	return 0, false
}

// ReplicationRateKeys are the replication throttles' rate keys (KIP-73),
// the leader's first.
var ReplicationRateKeys = [2]string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"}

// ReplicationRates are the bounds of the leader and follower replication
// quotas in bytes/s, from the dynamic layers (this broker's, then the
// cluster-wide default's), then the static one; math.MaxInt64 (Kafka's
// Long.MAX_VALUE) where none sets a valid one.
func (l Layers) ReplicationRates() (leader, follower int64) {
	var rates [2]int64
	for i, key := range ReplicationRateKeys {
		rates[i] = math.MaxInt64
		v, ok := l.Dynamic.BrokerValue(key)
		if !ok {
			v, ok = l.Static[key]
		}
		if ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n >= 0 {
				rates[i] = n
			}
		}
	}
	return rates[0], rates[1]
}

// ThrottledReplicas reports whether a topic's
// leader.replication.throttled.replicas and
// follower.replication.throttled.replicas name broker's replica of
// partition (Kafka's TopicConfigHandler.parseThrottledPartitions).
func ThrottledReplicas(topicConfigs map[string]string, partition, broker int32) (leader, follower bool) {
	return namesReplica(topicConfigs["leader.replication.throttled.replicas"], partition, broker),
		namesReplica(topicConfigs["follower.replication.throttled.replicas"], partition, broker)
}

// namesReplica reports whether a *.replication.throttled.replicas value
// names broker's replica of partition: "*", or a partition:broker entry.
func namesReplica(list string, partition, broker int32) bool {
	list = strings.TrimSpace(list)
	if list == "*" {
		return true
	}
	for list != "" {
		var entry string
		entry, list, _ = strings.Cut(list, ",")
		ps, bs, ok := strings.Cut(strings.TrimSpace(entry), ":")
		if !ok {
			continue
		}
		p, perr := strconv.ParseInt(ps, 10, 32)
		id, berr := strconv.ParseInt(bs, 10, 32)
		if perr == nil && berr == nil && int32(p) == partition && int32(id) == broker {
			return true
		}
	}
	return false
}
