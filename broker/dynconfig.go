package broker

// The broker's run-time configuration is config/dynamic's Service (b.cfgs:
// its layers, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs and
// the changes other brokers make); here the broker builds it and applies
// its changes to what the broker keeps: the open logs (Store.ReloadOptions)
// and each partition's settings (refreshPartition). A change holds
// Broker.admin from validation until applied: one at a time, and none
// while topics or partitions are created or deleted.

import (
	"errors"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/config/dynamic"
	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/replication/host"
)

// loadConfigs builds the configuration service: the static layer from the
// configuration as given (before defaults), the dynamic layers from the
// coordinator.
func (b *Broker) loadConfigs(raw config.Config) {
	b.cfgs = dynamic.New(dynamic.Options{
		ID:             b.cfg.ID,
		Static:         config.StaticBrokerConfigs(raw),
		Store:          b.coord,
		Admin:          &b.admin,
		ValidTopicName: cluster.ValidateTopicName,
		TopicExists:    b.topicExists,
		ApplyTopic:     b.applyTopicConfigsLocked,
		ApplyBroker:    b.refreshAllLocked,
		Log:            b.log,
	})
	b.applyReplicationRates()
}

// logOptions is the engine configuration of a topic's logs: the broker's
// configuration with its dynamic layers, overridden by the topic's configs;
// with metrics, the flushes timed. The Store calls it under its lock: the
// dynamic layers are read from an atomic pointer, with no lock.
func (b *Broker) logOptions(topicConfigs map[string]string) engine.Options {
	d := b.cfgs.Dynamic()
	o := b.cfg.LogOptions(d.WithDynamicDefaults(topicConfigs, b.cfg.StaticKeys))
	if e, ok := d.ProducerIDExpiration(); ok {
		o.ProducerIDExpiration = e
	}
	if b.metrics.reg != nil {
		o.OnFlush = b.metrics.reg.Flushed // read at a log's open only
	}
	return o
}

// topicExists reports whether a topic exists in the controller's
// metadata.
func (b *Broker) topicExists(name string) bool {
	_, _, ok := b.plane.dir.Topic(name)
	return ok
}

// refreshPartition brings the settings the broker keeps for p in line with
// its log's options and its topic's configs. Turning flush.messages=1 on
// flushes the log before the high watermark is bound to the recovery
// point, so the high watermark does not move back over what was readable
// (but for appends that race with the change: they become readable again
// once synced, which their producers wait for).
func (b *Broker) refreshPartition(p *host.Partition, topicConfigs map[string]string) {
	p.SetMinInsync(b.cfgs.Layers().MinInsyncReplicas(topicConfigs))
	p.Compacted.Store(p.Log.Options().Compaction.Policy != engine.PolicyDelete)
	b.refreshThrottles(p, topicConfigs)
	durable := p.Log.Options().FlushMessages == 1
	if durable && !p.DurableHW.Load() {
		if err := p.Log.Flush(); err != nil && !errors.Is(err, engine.ErrClosed) {
			b.log.Warn("flushing for flush.messages=1", "topic", p.Topic, "partition", p.Index, "err", err)
		}
	}
	p.DurableHW.Store(durable)
}

// applyTopicConfigsLocked makes a topic's new overrides current for its
// open logs: the topic of that id, or of that name when id is zero (the
// ZooKeeper backend's configs carry none). b.admin is held.
func (b *Broker) applyTopicConfigsLocked(name string, id engine.TopicID, configs map[string]string) {
	// The topic's state is replaced, not changed in place: readers hold it
	// without a lock.
	parts := b.replicas.SetTopicConfigs(name, id, configs)
	b.store.ReloadOptions(name)
	for _, p := range parts {
		if p != nil {
			b.refreshPartition(p, configs)
		}
	}
}

// refreshAllLocked applies the broker configs to every open log and to
// the replication throttles. b.admin is held.
func (b *Broker) refreshAllLocked() {
	b.applyReplicationRates()
	b.store.ReloadAllOptions()
	type part struct {
		p       *host.Partition
		configs map[string]string
	}
	var parts []part
	for _, ts := range b.replicas.Topics() {
		for _, p := range ts.Partitions {
			if p != nil {
				parts = append(parts, part{p, ts.Configs})
			}
		}
	}
	for _, x := range parts {
		b.refreshPartition(x.p, x.configs)
	}
}

// remoteConfigChange is told of a configuration another broker changed, in
// ZooKeeper mode: the backend (coordinator/zk's Backend) follows
// /config/changes, re-reads the entity a notification names into its
// cache and calls this from its watcher's goroutine. A topic's or the
// brokers' configs are the Service's (dynamic.Service.Changed, under
// Broker.admin); a user's or a client id's go to clientEntityHooks.
func (b *Broker) remoteConfigChange(entityType, name string) {
	if entityType == "users" || entityType == "clients" {
		for _, fn := range clientEntityHooks {
			fn(b, entityType+"/"+name)
		}
		return
	}
	b.cfgs.Changed(entityType, name)
}

// clientEntityHooks are told the entity path of a user or client-id
// entity another broker changed (SCRAM credentials, quotas), on the
// configuration watcher's goroutine; the files that cache those entities
// add theirs in init. On the single node nothing else changes them: a
// broker applies its own changes itself.
var clientEntityHooks []func(b *Broker, path string)
