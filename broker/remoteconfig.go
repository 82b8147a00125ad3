package broker

// Configuration changed by another broker, in ZooKeeper mode: the backend
// (coordinator/zk's Backend) follows /config/changes, re-reads the entity
// a notification names into its cache and calls remoteConfigChange, from
// its watcher's goroutine, which applies it as a local change is applied
// (configchange.go), under Broker.admin.

import "github.com/sluice-io/sluice/engine"

func (b *Broker) remoteConfigChange(entityType, name string) {
	b.admin.Lock()
	defer b.admin.Unlock()
	switch entityType {
	case "topics":
		t, _ := b.coord.Topic(name)
		b.applyTopicConfigsLocked(name, engine.TopicID{}, t.Configs)
		b.log.Info("topic configs changed", "topic", name, "configs", t.Configs)
	case "brokers":
		b.loadDynamicConfigs()
		b.refreshAllLocked()
		b.log.Info("dynamic broker configs changed", "entity", name)
	}
}
