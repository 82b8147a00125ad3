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
	"strconv"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/engine"
)

// configState is the broker's configuration beyond Config.
type configState struct {
	static  map[string]string // STATIC_BROKER_CONFIG: the keys Config sets; read-only after New
	dynamic atomic.Pointer[config.DynamicConfigs]
}

// loadConfigs fills the static layer from the configuration as given
// (before defaults) and the dynamic layers from the coordinator. Persisted
// entries that no longer validate are dropped with a warning, as Kafka
// does.
func (b *Broker) loadConfigs(raw config.Config) {
	b.cfgs.static = config.StaticBrokerConfigs(raw)
	b.loadDynamicConfigs()
	b.applyReplicationRates()
}

// loadDynamicConfigs reads the dynamic layers from the coordinator.
func (b *Broker) loadDynamicConfigs() {
	valid := func(layer string, m map[string]string) map[string]string {
		for k, v := range m {
			if _, err := config.ValidateBrokerConfig(k, v); err != nil {
				if config.SensitiveBrokerKey(k) {
					v = "[hidden]" // as Kafka logs a secret
				}
				b.log.Warn("ignoring invalid dynamic broker config", "layer", layer, "key", k, "value", v, "err", err)
				delete(m, k)
			}
		}
		return m
	}
	b.cfgs.dynamic.Store(&config.DynamicConfigs{
		Node:    valid("broker "+strconv.Itoa(int(b.cfg.ID)), b.coord.NodeConfigs(b.cfg.ID)),
		Cluster: valid("cluster default", b.coord.BrokerConfigs()),
	})
}

// layers are the broker's layers now, for reading effective values
// through config (config/effective.go).
func (s *configState) layers() config.Layers {
	return config.Layers{Static: s.static, Dynamic: s.dynamic.Load()}
}

// logOptions is the engine configuration of a topic's logs: the broker's
// configuration with its dynamic layers, overridden by the topic's configs;
// with metrics, the flushes timed.
func (b *Broker) logOptions(topicConfigs map[string]string) engine.Options {
	d := b.cfgs.dynamic.Load()
	o := b.cfg.LogOptions(d.WithDynamicDefaults(topicConfigs, b.cfg.StaticKeys))
	if e, ok := d.ProducerIDExpiration(); ok {
		o.ProducerIDExpiration = e
	}
	if b.metrics != nil {
		o.OnFlush = b.metrics.Flushed // read at a log's open only
	}
	return o
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
