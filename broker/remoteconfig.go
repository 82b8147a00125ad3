package broker

// Configuration changed by another broker, in ZooKeeper mode: the backend
// (coordinator/zk's Backend) follows /config/changes, re-reads the entity
// a notification names into its cache and calls remoteConfigChange, from
// its watcher's goroutine, which applies it as a local change is applied
// (configchange.go), under Broker.admin.

import "github.com/sluice-io/sluice/engine"

func (b *Broker) remoteConfigChange(entityType, name string) {
	if entityType == "users" || entityType == "clients" {
		for _, fn := range clientEntityHooks {
			fn(b, entityType+"/"+name)
		}
		return
	}
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

// clientEntityHooks are told the entity path of a user or client-id
// entity another broker changed (SCRAM credentials, quotas), on the
// configuration watcher's goroutine; the files that cache those entities
// add theirs in init. On the single node nothing else changes them: a
// broker applies its own changes itself.
var clientEntityHooks []func(b *Broker, path string)
