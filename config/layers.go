package config

// The layers a configuration value comes from, beyond Config: the keys the
// configuration file set (StaticBrokerConfigs), the two dynamic broker
// layers (DynamicConfigs), and the values they give together
// (WithDynamicDefaults, BrokerValue).
//
// Precedence, lowest first: Kafka's default < the configuration file
// (Config) < the cluster-wide dynamic default < this broker's dynamic
// config < the topic's override.

import (
	"maps"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

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

// StaticBrokerConfigs are the broker keys the configuration sets (fields
// that are not zero), by Kafka name. A duration is given as its .ms key.
// Secrets are among them: DescribeConfigs never shows a sensitive key's
// value (keys_security.go).
func StaticBrokerConfigs(c Config) map[string]string {
	m := map[string]string{}
	for i := range BrokerKeys {
		k := &BrokerKeys[i]
		if k.field == nil || k.field.get == nil {
			continue
		}
		if v, ok := k.field.get(&c); ok {
			m[k.Name] = v
		}
	}
	c.staticListeners(m)
	c.SASL.staticListeners(m)
	maps.Copy(m, c.TLS.Props)
	maps.Copy(m, c.StaticKeys)
	return m
}

func SynonymUnit(k *Key, broker string) int64 {
	for _, s := range k.Synonyms {
		if s.Name == broker {
			return s.unit
		}
	}
	return 0
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

// SaturatingMs converts ms to a Duration, saturating instead of
// overflowing (Kafka's "never" is Long.MAX_VALUE ms).
func SaturatingMs(n int64) time.Duration { return scale(n, time.Millisecond) }
