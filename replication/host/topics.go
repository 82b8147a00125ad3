package host

// The table of hosted topics (Kafka's ReplicaManager.allPartitions): each
// topic this broker hosts a partition of, by name and by id, with the
// configuration overrides its logs were opened with.
//
// A Topic is immutable once put in the table: a change (a partition
// opened or deleted, new configs) puts a new one, so a reader holds a
// Topic without a lock. The table's lock is taken after the engine Store's
// and before a partition's own locks (doc.go), and is held across no I/O.

import (
	"maps"
	"slices"
	"sync"

	"github.com/sluice-io/sluice/engine"
)

// Topic is one hosted topic.
type Topic struct {
	Name string
	ID   engine.TopicID
	// Configs are the topic's overrides of broker defaults, by Kafka key,
	// as its logs follow them.
	Configs map[string]string
	// Partitions are the hosted partitions by index; nil where this broker
	// hosts none.
	Partitions []*Partition
}

// Partition returns the topic's partition index, nil if not hosted.
func (t *Topic) Partition(index int32) *Partition {
	if t == nil || index < 0 || int(index) >= len(t.Partitions) {
		return nil
	}
	return t.Partitions[index]
}

// hosts reports whether t hosts any partition.
func (t *Topic) hosts() bool {
	return slices.ContainsFunc(t.Partitions, func(p *Partition) bool { return p != nil })
}

// topicTable is the Manager's table.
type topicTable struct {
	sync.RWMutex
	byName map[string]*Topic
	byID   map[engine.TopicID]*Topic
}

// Topic returns a hosted topic, nil if none.
func (m *Manager) Topic(name string) *Topic {
	m.topics.RLock()
	defer m.topics.RUnlock()
	return m.topics.byName[name]
}

// TopicByID returns the hosted topic of an id, nil if none.
func (m *Manager) TopicByID(id engine.TopicID) *Topic {
	m.topics.RLock()
	defer m.topics.RUnlock()
	return m.topics.byID[id]
}

// TopicNames lists the hosted topics, sorted.
func (m *Manager) TopicNames() []string {
	m.topics.RLock()
	defer m.topics.RUnlock()
	return slices.Sorted(maps.Keys(m.topics.byName))
}

// Partition returns a hosted partition, nil if none.
func (m *Manager) Partition(topic string, index int32) *Partition {
	return m.Topic(topic).Partition(index)
}

// Hosted lists every hosted partition.
func (m *Manager) Hosted() []*Partition {
	var out []*Partition
	m.eachTopic(func(t *Topic) {
		for _, p := range t.Partitions {
			if p != nil {
				out = append(out, p)
			}
		}
	})
	return out
}

// eachTopic calls f for every hosted topic under the table's lock (read):
// f takes no lock before the table's.
func (m *Manager) eachTopic(f func(*Topic)) {
	m.topics.RLock()
	defer m.topics.RUnlock()
	for _, t := range m.topics.byName {
		f(t)
	}
}

// Topics lists the hosted topics.
func (m *Manager) Topics() []*Topic {
	var out []*Topic
	m.eachTopic(func(t *Topic) { out = append(out, t) })
	return out
}

// SetTopic makes t the hosted topic of its name and id.
func (m *Manager) SetTopic(t *Topic) {
	m.topics.Lock()
	defer m.topics.Unlock()
	m.topics.byName[t.Name] = t
	m.topics.byID[t.ID] = t
}

// PublishTopic is SetTopic, or drops the topic when t hosts no partition
// any more (with its metrics, as Kafka drops a topic's metrics with its
// last partition).
func (m *Manager) PublishTopic(t *Topic) {
	m.topics.Lock()
	defer m.topics.Unlock()
	if !t.hosts() {
		m.dropLocked(t)
		return
	}
	m.topics.byName[t.Name] = t
	m.topics.byID[t.ID] = t
}

// DropTopic removes t from the table if it is still the hosted topic of
// its name.
func (m *Manager) DropTopic(t *Topic) {
	m.topics.Lock()
	defer m.topics.Unlock()
	if m.topics.byName[t.Name] == t {
		m.dropLocked(t)
	}
}

func (m *Manager) dropLocked(t *Topic) {
	delete(m.topics.byName, t.Name)
	delete(m.topics.byID, t.ID)
	m.o.Metrics.DropTopic(t.Name)
}

// SetTopicConfigs replaces the configs of the hosted topic of that id, or
// of that name when id is zero (the ZooKeeper backend's configs carry
// none), and returns its partitions; nil if it hosts no such topic.
func (m *Manager) SetTopicConfigs(name string, id engine.TopicID, configs map[string]string) []*Partition {
	m.topics.Lock()
	defer m.topics.Unlock()
	old := m.topics.byName[name]
	if old == nil || (old.ID != id && id != engine.TopicID{}) {
		return nil
	}
	next := *old
	next.Configs = configs
	m.topics.byName[name], m.topics.byID[old.ID] = &next, &next
	return slices.Clone(old.Partitions)
}

// topicID is the id of a hosted topic (AlterPartition names topics by id).
func (m *Manager) topicID(topic string) (engine.TopicID, bool) {
	if t := m.Topic(topic); t != nil {
		return t.ID, true
	}
	return engine.TopicID{}, false
}
