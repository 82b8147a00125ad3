package zk

// The ZooKeeper backend of coordinator.Coordinator: what a broker reads
// and writes of the cluster's metadata outside the controller's requests.
// Topic and broker configurations are cached here and kept current from
// /config/changes (as every Kafka broker's DynamicConfigManager keeps
// them), so that a broker reading them under its own locks (the engine's
// LogOptions under the Store's lock) never waits for ZooKeeper; a topic's
// configuration enters the cache with LoadTopic, called before its logs
// are opened. Topic administration goes to ZooKeeper (admin.go) for the
// controller to act on; producer id blocks come from
// /latest_producer_id_block.
//
// Partition state and the live brokers are not here: they reach the
// broker in the controller's UpdateMetadata and LeaderAndIsr.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"

	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/security/acl"
)

// Backend is a broker's coordinator.Coordinator in ZooKeeper mode.
type Backend struct {
	c         *Client
	id        int32
	log       *slog.Logger
	clusterID string
	watcher   *ChangeWatcher

	mu struct {
		sync.Mutex
		topics   map[string]map[string]string // topic configs loaded, by topic
		cluster  map[string]string            // /config/brokers/<default>
		node     map[string]string            // /config/brokers/<id>
		onChange func(entityType, name string)
		onNotice func(ConfigChange)
		aclWatch *ACLWatcher // set by OnACLChange
	}
}

var (
	_ coordinator.Coordinator = (*Backend)(nil)
	_ coordinator.ACLStore    = (*Backend)(nil)
)

// OpenBackend reads (creating) the cluster id and the dynamic broker
// configurations of broker id, and starts following /config/changes.
func OpenBackend(c *Client, id int32, log *slog.Logger) (*Backend, error) {
	if log == nil {
		log = slog.Default()
	}
	clusterID, err := c.ClusterID()
	if err != nil {
		return nil, err
	}
	b := &Backend{c: c, id: id, log: log, clusterID: clusterID}
	b.mu.topics = map[string]map[string]string{}
	if b.mu.cluster, err = c.Config(ConfigBrokers, DefaultEntity); err != nil {
		return nil, err
	}
	if b.mu.node, err = c.Config(ConfigBrokers, strconv.Itoa(int(id))); err != nil {
		return nil, err
	}
	b.watcher = WatchConfigChanges(context.Background(), c, b.changed)
	return b, nil
}

// OnConfigChange sets fn to be called after a configuration entity
// changed in the cache ("topics" and a topic, "brokers" and "<default>"
// or an id), from the watcher's goroutine.
func (b *Backend) OnConfigChange(fn func(entityType, name string)) {
	b.mu.Lock()
	b.mu.onChange = fn
	b.mu.Unlock()
}

// OnNotice sets fn to be called with every config change notification of
// a topic or a broker entity, after the cache and OnConfigChange's fn have
// taken it, whether this broker caches the entity or not (Kafka's config
// handlers tell the controller of every topic's change): the controller
// driver's ConfigChanged. It runs on the watcher's goroutine and must not
// block.
func (b *Backend) OnNotice(fn func(ConfigChange)) {
	b.mu.Lock()
	b.mu.onNotice = fn
	b.mu.Unlock()
}

// changed re-reads the entity a notification names.
func (b *Backend) changed(ch ConfigChange) {
	defer b.notice(ch)
	self := strconv.Itoa(int(b.id))
	switch {
	case ch.EntityType == ConfigTopics:
		b.mu.Lock()
		_, loaded := b.mu.topics[ch.EntityName]
		b.mu.Unlock()
		if !loaded {
			return // read when the broker first hosts the topic
		}
		if err := b.LoadTopic(ch.EntityName); err != nil {
			b.log.Warn("reading a changed topic config", "topic", ch.EntityName, "err", err)
			return
		}
	case ch.EntityType == ConfigBrokers && (ch.EntityName == DefaultEntity || ch.EntityName == self):
		m, err := b.c.Config(ConfigBrokers, ch.EntityName)
		if err != nil {
			b.log.Warn("reading a changed broker config", "entity", ch.EntityName, "err", err)
			return
		}
		b.mu.Lock()
		if ch.EntityName == DefaultEntity {
			b.mu.cluster = m
		} else {
			b.mu.node = m
		}
		b.mu.Unlock()
	case ch.EntityType == ConfigUsers || ch.EntityType == ConfigClients:
		// Not cached here: the broker's credential and quota caches
		// re-read the entity.
	default:
		return
	}
	b.mu.Lock()
	fn := b.mu.onChange
	b.mu.Unlock()
	if fn != nil {
		fn(ch.EntityType, ch.EntityName)
	}
}

// notice hands ch to OnNotice's fn.
func (b *Backend) notice(ch ConfigChange) {
	b.mu.Lock()
	fn := b.mu.onNotice
	b.mu.Unlock()
	if fn != nil && (ch.EntityType == ConfigTopics || ch.EntityType == ConfigBrokers) {
		fn(ch)
	}
}

// LoadTopic reads a topic's configuration into the cache.
func (b *Backend) LoadTopic(name string) error {
	m, err := b.c.Config(ConfigTopics, name)
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.mu.topics[name] = m
	b.mu.Unlock()
	return nil
}

// ClusterID implements coordinator.Coordinator.
func (b *Backend) ClusterID() string { return b.clusterID }

// Topics implements coordinator.Coordinator: every topic with its
// assignment's partition count, read from ZooKeeper (nil if that fails).
func (b *Backend) Topics() []coordinator.Topic {
	names, _, err := b.c.conn.Children(b.c.abs(TopicsPath))
	if err != nil {
		b.log.Warn("listing topics", "err", err)
		return nil
	}
	slices.Sort(names)
	out := make([]coordinator.Topic, 0, len(names))
	for _, name := range names {
		data, _, err := b.c.Get(TopicPath(name))
		if err != nil {
			continue
		}
		a, err := DecodeTopic(name, data)
		if err != nil {
			continue
		}
		t := coordinator.Topic{Name: name, ID: a.ID, Partitions: int32(len(a.Replicas))}
		if len(a.Replicas) > 0 {
			t.ReplicationFactor = int16(len(a.Replicas[0]))
		}
		cached, _ := b.Topic(name)
		t.Configs = cached.Configs
		out = append(out, t)
	}
	return out
}

// Topic implements coordinator.Coordinator from the cache: only the
// configuration is known (LoadTopic), ok false before it is loaded.
func (b *Backend) Topic(name string) (coordinator.Topic, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, ok := b.mu.topics[name]
	return coordinator.Topic{Name: name, Configs: maps.Clone(m)}, ok
}

// CreateTopic implements coordinator.Coordinator: placed over the live
// brokers and written for the controller (admin.go). ErrTopicExists also
// matches coordinator.ErrTopicExists.
func (b *Backend) CreateTopic(name string, req controller.TopicRequest, configs map[string]string) (coordinator.Assignment, error) {
	a, err := b.c.CreateTopic(name, req, controller.Defaults{}, configs, rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())))
	if errors.Is(err, ErrTopicExists) {
		return coordinator.Assignment{}, fmt.Errorf("%w: %w", coordinator.ErrTopicExists, err)
	}
	return coordinator.Assignment{ID: a.ID, Replicas: a.Replicas}, err
}

// DeleteTopic implements coordinator.Coordinator: the topic is marked for
// deletion by the controller.
func (b *Backend) DeleteTopic(name string) error {
	err := b.c.DeleteTopic(name)
	if errors.Is(err, ErrUnknownTopic) {
		return fmt.Errorf("%w: %w", coordinator.ErrUnknownTopic, err)
	}
	return err
}

// AddPartitions implements coordinator.Coordinator (admin.go's
// AddPartitions). ErrUnknownTopic and ErrTopicDeleting also match
// coordinator's.
func (b *Backend) AddPartitions(name string, count int32, assignments [][]int32) (coordinator.Assignment, error) {
	a, err := b.c.AddPartitions(name, count, assignments)
	switch {
	case errors.Is(err, ErrUnknownTopic):
		return coordinator.Assignment{}, fmt.Errorf("%w: %w", coordinator.ErrUnknownTopic, err)
	case errors.Is(err, ErrTopicDeleting):
		return coordinator.Assignment{}, fmt.Errorf("%w: %w", coordinator.ErrTopicDeleting, err)
	}
	return coordinator.Assignment{ID: a.ID, Replicas: a.Replicas}, err
}

// AwaitDeleted implements coordinator.Coordinator: a cluster's deletion
// is followed in the brokers' metadata, not here.
func (b *Backend) AwaitDeleted(context.Context, string) error { return nil }

// SetTopicConfigs implements coordinator.Coordinator: written to
// /config/topics/<name> with a change notification for every broker.
func (b *Backend) SetTopicConfigs(name string, configs map[string]string) (coordinator.Topic, error) {
	exists, _, err := b.c.conn.Exists(b.c.abs(TopicPath(name)))
	if err != nil {
		return coordinator.Topic{}, fmt.Errorf("zk: read %s: %w", TopicPath(name), err)
	}
	if !exists {
		return coordinator.Topic{}, coordinator.ErrUnknownTopic
	}
	if err := b.c.SetConfig(ConfigTopics, name, configs); err != nil {
		return coordinator.Topic{}, err
	}
	b.mu.Lock()
	b.mu.topics[name] = maps.Clone(configs)
	b.mu.Unlock()
	return coordinator.Topic{Name: name, Configs: maps.Clone(configs)}, nil
}

// BrokerConfigs implements coordinator.Coordinator.
func (b *Backend) BrokerConfigs() map[string]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.mu.cluster)
}

// SetBrokerConfigs implements coordinator.Coordinator.
func (b *Backend) SetBrokerConfigs(configs map[string]string) error {
	if err := b.c.SetConfig(ConfigBrokers, DefaultEntity, configs); err != nil {
		return err
	}
	b.mu.Lock()
	b.mu.cluster = maps.Clone(configs)
	b.mu.Unlock()
	return nil
}

// NodeConfigs implements coordinator.Coordinator; another broker's are read
// from ZooKeeper.
func (b *Backend) NodeConfigs(id int32) map[string]string {
	if id == b.id {
		b.mu.Lock()
		defer b.mu.Unlock()
		return maps.Clone(b.mu.node)
	}
	m, err := b.c.Config(ConfigBrokers, strconv.Itoa(int(id)))
	if err != nil {
		b.log.Warn("reading a broker's config", "broker", id, "err", err)
	}
	return m
}

// SetNodeConfigs implements coordinator.Coordinator.
func (b *Backend) SetNodeConfigs(id int32, configs map[string]string) error {
	if err := b.c.SetConfig(ConfigBrokers, strconv.Itoa(int(id)), configs); err != nil {
		return err
	}
	if id == b.id {
		b.mu.Lock()
		b.mu.node = maps.Clone(configs)
		b.mu.Unlock()
	}
	return nil
}

// EntityConfigs implements coordinator.Coordinator from ZooKeeper
// (cliententity.go).
func (b *Backend) EntityConfigs(path string) (map[string]string, error) {
	return b.c.EntityConfig(path)
}

// AlterEntityConfigs implements coordinator.Coordinator; the notification
// reaches every broker, this one too.
func (b *Backend) AlterEntityConfigs(path string, alter func(map[string]string) (map[string]string, error)) error {
	return b.c.AlterEntityConfig(path, alter)
}

// Entities implements coordinator.Coordinator.
func (b *Backend) Entities(entityType string) ([]string, error) {
	return b.c.Entities(entityType)
}

// AllocateProducerIDs implements coordinator.Coordinator with a block of
// /latest_producer_id_block.
func (b *Backend) AllocateProducerIDs(n int64) (int64, error) {
	return b.c.AllocateProducerIDBlock(b.id, n)
}

// LoadACLs implements coordinator.ACLStore from ZooKeeper (acls.go),
// creating the ACL paths first as Kafka's authorizer does at start.
func (b *Backend) LoadACLs() (map[acl.Resource][]acl.Entry, error) {
	if err := b.c.CreateACLPaths(); err != nil {
		return nil, err
	}
	return b.c.LoadACLs()
}

// ACLs implements coordinator.ACLStore.
func (b *Backend) ACLs(r acl.Resource) ([]acl.Entry, error) { return b.c.ACLs(r) }

// UpdateACLs implements coordinator.ACLStore; the notification reaches
// every broker, this one too.
func (b *Backend) UpdateACLs(r acl.Resource, change func([]acl.Entry) ([]acl.Entry, error)) ([]acl.Entry, error) {
	return b.c.UpdateACLs(r, change)
}

// OnACLChange implements coordinator.ACLStore: it starts following both
// ACL change paths, first delivering the notifications there already; a
// broker calls it once, after LoadACLs.
func (b *Backend) OnACLChange(fn func(acl.Resource)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.aclWatch != nil {
		b.log.Error("OnACLChange called twice; the first watcher stays")
		return
	}
	b.mu.aclWatch = WatchACLChanges(context.Background(), b.c, fn)
}

// Close stops following /config/changes and the ACL change paths; the
// session is the caller's.
func (b *Backend) Close() error {
	b.watcher.Close()
	b.mu.Lock()
	w := b.mu.aclWatch
	b.mu.Unlock()
	if w != nil {
		w.Close()
	}
	return nil
}
