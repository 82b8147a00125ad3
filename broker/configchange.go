package broker

// Configuration changes (AlterConfigs, IncrementalAlterConfigs): a new
// override set of a topic, or a new dynamic broker layer, is validated as
// Kafka does, persisted in the coordinator, and applied to the open logs
// (Store.ReloadOptions) and to the settings the broker keeps for each
// partition (refreshPartition). A change holds Broker.admin from validation
// until applied: one at a time, and none while topics or partitions are
// created or deleted.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/replication/host"
)

// refreshPartition brings the settings the broker keeps for p in line with
// its log's options and its topic's configs. Turning flush.messages=1 on
// flushes the log before the high watermark is bound to the recovery
// point, so the high watermark does not move back over what was readable
// (but for appends that race with the change: they become readable again
// once synced, which their producers wait for).
func (b *Broker) refreshPartition(p *host.Partition, topicConfigs map[string]string) {
	p.SetMinInsync(b.cfgs.layers().MinInsyncReplicas(topicConfigs))
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

// setTopicConfigsLocked validates a topic's complete new override set and,
// unless validateOnly, persists and applies it. Errors in Kafka's order (its
// controller's): the name, the configs, then whether the topic exists.
// b.admin is held.
func (b *Broker) setTopicConfigsLocked(name string, configs map[string]string, validateOnly bool) (int16, string) {
	if name == "" {
		return kerr.InvalidRequest.Code, "Default topic resources are not allowed."
	}
	if err := cluster.ValidateTopicName(name); err != nil {
		return kerr.InvalidTopicException.Code, err.Error()
	}
	for _, k := range slices.Sorted(maps.Keys(configs)) { // the first error, in key order
		v := configs[k]
		nv, err := config.ValidateTopicConfig(k, &v)
		if err != nil {
			return kerr.InvalidConfig.Code, err.Error()
		}
		configs[k] = nv
	}
	if err := config.ValidateTopicConfigs(configs, func(k string) string { return b.cfgs.layers().TopicValue(k, nil) }); err != nil {
		return kerr.InvalidConfig.Code, err.Error()
	}
	if !b.topicExists(name) {
		return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("topic %s does not exist", name)
	}
	if validateOnly {
		return 0, ""
	}
	if len(configs) == 0 {
		configs = nil
	}
	t, err := b.coord.SetTopicConfigs(name, configs)
	if errors.Is(err, coordinator.ErrUnknownTopic) {
		return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("topic %s does not exist", name)
	}
	if err != nil {
		b.log.Error("saving topic configs", "topic", name, "err", err)
		return kerr.UnknownServerError.Code, err.Error()
	}
	b.applyTopicConfigsLocked(name, t.ID, t.Configs)
	b.log.Info("altered topic configs", "topic", name, "configs", t.Configs)
	return 0, ""
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

// topicExists reports whether a topic exists in the controller's
// metadata.
func (b *Broker) topicExists(name string) bool {
	_, _, ok := b.dir.Topic(name)
	return ok
}

// currentBrokerConfigs returns a copy of one dynamic broker layer.
func (b *Broker) currentBrokerConfigs(perBroker bool) map[string]string {
	d := b.cfgs.dynamic.Load()
	if perBroker {
		return maps.Clone(d.Node)
	}
	return maps.Clone(d.Cluster)
}

// setBrokerConfigsLocked validates one dynamic broker layer's complete new
// set and, unless validateOnly, persists it and applies it to every log.
// Kafka answers a broker config it refuses with INVALID_REQUEST, not
// INVALID_CONFIG (KAFKA-13609), and so does sluice. b.admin is held.
func (b *Broker) setBrokerConfigsLocked(perBroker bool, configs map[string]string, validateOnly bool) (int16, string) {
	var readOnly []string
	for k := range configs {
		if config.ReadOnlyBrokerKey(k) {
			readOnly = append(readOnly, k)
		}
	}
	if len(readOnly) > 0 {
		slices.Sort(readOnly)
		return kerr.InvalidRequest.Code, fmt.Sprintf("Cannot update these configs dynamically: %v", readOnly)
	}
	if !perBroker {
		var onlyPerBroker []string
		for k := range configs {
			if bk := config.BrokerKeyByName[k]; bk != nil && bk.PerBroker {
				onlyPerBroker = append(onlyPerBroker, k)
			}
		}
		if len(onlyPerBroker) > 0 {
			slices.Sort(onlyPerBroker)
			return kerr.InvalidRequest.Code, fmt.Sprintf("Cannot update these configs at default cluster level, broker id must be specified: %v", onlyPerBroker)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(configs)) { // the first error, in key order
		nv, err := config.ValidateBrokerConfig(k, configs[k])
		if err != nil {
			return kerr.InvalidRequest.Code, err.Error()
		}
		configs[k] = nv
	}
	if validateOnly {
		return 0, ""
	}
	if len(configs) == 0 {
		configs = nil
	}
	cur := b.cfgs.dynamic.Load()
	next := &config.DynamicConfigs{Node: cur.Node, Cluster: cur.Cluster}
	var err error
	if perBroker {
		err = b.coord.SetNodeConfigs(b.cfg.ID, configs)
		next.Node = configs
	} else {
		err = b.coord.SetBrokerConfigs(configs)
		next.Cluster = configs
	}
	if err != nil {
		b.log.Error("saving dynamic broker configs", "err", err)
		return kerr.UnknownServerError.Code, err.Error()
	}
	b.cfgs.dynamic.Store(next)
	b.refreshAllLocked()
	resource := "cluster default"
	if perBroker {
		resource = "broker " + strconv.Itoa(int(b.cfg.ID))
	}
	b.log.Info("altered dynamic broker configs", "resource", resource, "configs", configs)
	return 0, ""
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

// resourceID is a config resource, for finding one named twice.
type resourceID struct {
	kind kmsg.ConfigResourceType
	name string
}
