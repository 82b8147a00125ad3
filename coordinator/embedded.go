package coordinator

// The embedded backend is a one-broker cluster: it keeps the metadata in
// one JSON file, <data>/cluster-metadata.json, replaced atomically (temp
// file, fsync, rename, fsync dir) on every change:
//
//	{"version": 1, "cluster_id": "...", "topics": [{"name": ..., "id": ..., "partitions": N,
//	  "replication_factor": 1, "configs": {...}}], "deleting": ["<topic>", ...],
//	  "broker_configs": {...}, "node_configs": {"<broker id>": {...}}}
//
// "deleting" (optional) lists topics marked for deletion whose deletion
// the controller has not finished. Every partition's replicas are the
// single broker. The controller is the same decision core as a ZooKeeper
// cluster's (coordinator/controller), driven in-process
// (localcontroller.go); the partition states it writes are kept in
// memory: with one broker, each start elects it again at leader epoch 0.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/engine"
)

const metadataFile = "cluster-metadata.json"

type fileTopic struct {
	Name              string            `json:"name"`
	ID                string            `json:"id"`
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replication_factor"`
	Configs           map[string]string `json:"configs,omitempty"`
}

type fileMetadata struct {
	Version   int         `json:"version"`
	ClusterID string      `json:"cluster_id"`
	Topics    []fileTopic `json:"topics"`
	// Deleting are topics marked for deletion, not yet deleted.
	Deleting []string `json:"deleting,omitempty"`
	// BrokerConfigs are the dynamic cluster-wide broker defaults.
	BrokerConfigs map[string]string `json:"broker_configs,omitempty"`
	// NodeConfigs are each broker's own dynamic configuration, by id.
	NodeConfigs map[string]map[string]string `json:"node_configs,omitempty"`
	// EntityConfigs are the client entities' configs (SCRAM credentials,
	// quotas), by entity path ("users/alice", "users/alice/clients/c1",
	// "clients/<default>"; names sanitized as in ZooKeeper).
	EntityConfigs map[string]map[string]string `json:"entity_configs,omitempty"`
}

// Embedded is the single-node backend.
type Embedded struct {
	path string
	self Broker

	mu struct {
		sync.Mutex
		clusterID     string
		topics        map[string]Topic
		deleting      map[string]bool // marked for deletion
		states        map[engine.Partition]controller.PartitionState
		changed       chan struct{}    // closed and replaced at each change of topics
		ctl           *localController // the single node's controller, once started
		brokerConfigs map[string]string
		nodeConfigs   map[string]map[string]string // by decimal broker id
		entities      map[string]map[string]string // by entity path
		closed        bool
	}
}

// OpenEmbedded opens (creating) the metadata of the single node self in
// dataDir.
func OpenEmbedded(dataDir string, self Broker) (*Embedded, error) {
	e := &Embedded{path: filepath.Join(dataDir, metadataFile), self: self}
	e.mu.topics = map[string]Topic{}
	e.mu.deleting = map[string]bool{}
	e.mu.states = map[engine.Partition]controller.PartitionState{}
	e.mu.changed = make(chan struct{})
	data, err := os.ReadFile(e.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		var id [16]byte
		rand.Read(id[:])
		e.mu.clusterID = base64.RawURLEncoding.EncodeToString(id[:])
		if err := os.MkdirAll(dataDir, 0o755); err != nil {
			return nil, fmt.Errorf("coordinator: %w", err)
		}
		if err := e.saveLocked(); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("coordinator: read %s: %w", e.path, err)
	default:
		var m fileMetadata
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("coordinator: parse %s: %w", e.path, err)
		}
		if m.Version != 1 {
			return nil, fmt.Errorf("coordinator: %s has unknown version %d", e.path, m.Version)
		}
		e.mu.clusterID = m.ClusterID
		e.mu.brokerConfigs = m.BrokerConfigs
		e.mu.nodeConfigs = m.NodeConfigs
		e.mu.entities = m.EntityConfigs
		for _, ft := range m.Topics {
			id, err := engine.ParseTopicID(ft.ID)
			if err != nil {
				return nil, fmt.Errorf("coordinator: %s: topic %q: %w", e.path, ft.Name, err)
			}
			e.mu.topics[ft.Name] = Topic{Name: ft.Name, ID: id, Partitions: ft.Partitions, ReplicationFactor: ft.ReplicationFactor, Configs: ft.Configs}
		}
		for _, name := range m.Deleting {
			if _, ok := e.mu.topics[name]; ok {
				e.mu.deleting[name] = true
			}
		}
	}
	return e, nil
}

func (e *Embedded) saveLocked() error {
	m := fileMetadata{Version: 1, ClusterID: e.mu.clusterID, Topics: []fileTopic{}, BrokerConfigs: e.mu.brokerConfigs, NodeConfigs: e.mu.nodeConfigs, EntityConfigs: e.mu.entities,
		Deleting: slices.Sorted(maps.Keys(e.mu.deleting))}
	for _, t := range e.mu.topics {
		m.Topics = append(m.Topics, fileTopic{Name: t.Name, ID: t.ID.String(), Partitions: t.Partitions, ReplicationFactor: t.ReplicationFactor, Configs: t.Configs})
	}
	slices.SortFunc(m.Topics, func(a, b fileTopic) int {
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	return engine.WriteFileAtomic(e.path, data)
}

// ClusterID implements Coordinator.
func (e *Embedded) ClusterID() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.mu.clusterID
}

// Topics implements Coordinator.
func (e *Embedded) Topics() []Topic {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Topic, 0, len(e.mu.topics))
	for _, t := range e.mu.topics {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b Topic) int {
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	return out
}

// Topic implements Coordinator.
func (e *Embedded) Topic(name string) (Topic, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.mu.topics[name]
	return t, ok
}

// CreateTopic implements Coordinator: every replica is the single broker,
// so a replication factor above 1 is INVALID_REPLICATION_FACTOR and an
// assignment naming another broker INVALID_REPLICA_ASSIGNMENT.
func (e *Embedded) CreateTopic(name string, req controller.TopicRequest, configs map[string]string) (Assignment, error) {
	replicas, err := controller.PlaceTopic(req, controller.Defaults{Partitions: 1, ReplicationFactor: 1},
		[]controller.Broker{{ID: e.self.ID}}, mrand.New(mrand.NewPCG(1, 1)))
	if err != nil {
		return Assignment{}, err
	}
	if err := e.onlySelf(replicas, 0); err != nil {
		return Assignment{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.closed {
		return Assignment{}, ErrClosed
	}
	if _, ok := e.mu.topics[name]; ok {
		what := "already exists"
		if e.mu.deleting[name] {
			what = "is marked for deletion"
		}
		return Assignment{}, fmt.Errorf("%w: topic '%s' %s", ErrTopicExists, name, what)
	}
	t := Topic{Name: name, ID: engine.NewTopicID(), Partitions: int32(len(replicas)), ReplicationFactor: 1, Configs: maps.Clone(configs)}
	if len(t.Configs) == 0 {
		t.Configs = nil
	}
	e.mu.topics[name] = t
	if err := e.saveLocked(); err != nil {
		delete(e.mu.topics, name)
		return Assignment{}, err
	}
	e.changedLocked()
	e.postLocked(controller.TopicsChanged{Topics: []controller.TopicAssignment{e.assignment(t)}})
	return Assignment{ID: t.ID, Replicas: replicas}, nil
}

// onlySelf refuses replicas (of partitions from first on) other than the
// single broker's.
func (e *Embedded) onlySelf(replicas [][]int32, first int) error {
	for i, r := range replicas {
		if len(r) != 1 || r[0] != e.self.ID {
			return controller.Fail(controller.ErrInvalidReplicaAssignment, "partition %d: replicas %v: every partition must be on broker %d alone", first+i, r, e.self.ID)
		}
	}
	return nil
}

// assignment is t's assignment: every partition on the single broker.
func (e *Embedded) assignment(t Topic) controller.TopicAssignment {
	a := controller.TopicAssignment{Name: t.Name, ID: t.ID, Replicas: make([][]int32, t.Partitions)}
	for i := range a.Replicas {
		a.Replicas[i] = []int32{e.self.ID}
	}
	return a
}

// changedLocked wakes AwaitDeleted's waiters. e.mu is held.
func (e *Embedded) changedLocked() {
	close(e.mu.changed)
	e.mu.changed = make(chan struct{})
}

// update applies change to a copy of the named topic and saves it; the
// change is dropped if saving fails.
func (e *Embedded) update(name string, change func(t *Topic) error) (Topic, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.closed {
		return Topic{}, ErrClosed
	}
	old, ok := e.mu.topics[name]
	if !ok {
		return Topic{}, fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	t := old
	if err := change(&t); err != nil {
		return Topic{}, err
	}
	e.mu.topics[name] = t
	if err := e.saveLocked(); err != nil {
		e.mu.topics[name] = old
		return Topic{}, err
	}
	return t, nil
}

// DeleteTopic implements Coordinator: the topic is marked, and the
// controller deletes it.
func (e *Embedded) DeleteTopic(name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.closed {
		return ErrClosed
	}
	if _, ok := e.mu.topics[name]; !ok {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	if e.mu.deleting[name] {
		return nil // as Kafka: marked already is not an error
	}
	e.mu.deleting[name] = true
	if err := e.saveLocked(); err != nil {
		delete(e.mu.deleting, name)
		return err
	}
	e.postLocked(controller.DeleteTopics{Topics: slices.Sorted(maps.Keys(e.mu.deleting))})
	return nil
}

// AwaitDeleted implements Coordinator.
func (e *Embedded) AwaitDeleted(ctx context.Context, name string) error {
	for {
		e.mu.Lock()
		_, exists := e.mu.topics[name]
		ch := e.mu.changed
		e.mu.Unlock()
		if !exists {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// AddPartitions implements Coordinator.
func (e *Embedded) AddPartitions(name string, count int32, assignments [][]int32) (Assignment, error) {
	e.mu.Lock()
	cur, ok := e.mu.topics[name]
	deleting := e.mu.deleting[name]
	e.mu.Unlock()
	switch {
	case !ok:
		return Assignment{}, fmt.Errorf("%w: The topic '%s' does not exist", ErrUnknownTopic, name)
	case deleting:
		return Assignment{}, fmt.Errorf("%w: The topic '%s' is queued for deletion", ErrTopicDeleting, name)
	}
	existing := e.assignment(cur).Replicas
	added, err := controller.PlaceNewPartitions(existing, count, assignments, []controller.Broker{{ID: e.self.ID}})
	if err != nil {
		return Assignment{}, err
	}
	if err := e.onlySelf(added, len(existing)); err != nil {
		return Assignment{}, err
	}
	t, err := e.update(name, func(t *Topic) error {
		if t.Partitions != cur.Partitions {
			return fmt.Errorf("coordinator: topic %s changed meanwhile", name)
		}
		t.Partitions = count
		return nil
	})
	if err != nil {
		return Assignment{}, err
	}
	a := e.assignment(t)
	e.post(controller.TopicsChanged{Topics: []controller.TopicAssignment{a}})
	return Assignment{ID: t.ID, Replicas: a.Replicas}, nil
}

// LoadTopic implements Coordinator: the single node knows every topic.
func (e *Embedded) LoadTopic(string) error { return nil }

// OnConfigChange implements Coordinator: no other broker changes configs.
func (e *Embedded) OnConfigChange(func(entityType, name string)) {}

// SetTopicConfigs implements Coordinator.
func (e *Embedded) SetTopicConfigs(name string, configs map[string]string) (Topic, error) {
	return e.update(name, func(t *Topic) error {
		t.Configs = maps.Clone(configs)
		if len(t.Configs) == 0 {
			t.Configs = nil
		}
		return nil
	})
}

// BrokerConfigs implements Coordinator.
func (e *Embedded) BrokerConfigs() map[string]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.mu.brokerConfigs)
}

// SetBrokerConfigs implements Coordinator.
func (e *Embedded) SetBrokerConfigs(configs map[string]string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.closed {
		return ErrClosed
	}
	old := e.mu.brokerConfigs
	e.mu.brokerConfigs = maps.Clone(configs)
	if len(e.mu.brokerConfigs) == 0 {
		e.mu.brokerConfigs = nil
	}
	if err := e.saveLocked(); err != nil {
		e.mu.brokerConfigs = old
		return err
	}
	return nil
}

// NodeConfigs implements Coordinator.
func (e *Embedded) NodeConfigs(id int32) map[string]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.mu.nodeConfigs[strconv.Itoa(int(id))])
}

// SetNodeConfigs implements Coordinator.
func (e *Embedded) SetNodeConfigs(id int32, configs map[string]string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.closed {
		return ErrClosed
	}
	old := e.mu.nodeConfigs
	next := maps.Clone(old)
	if next == nil {
		next = map[string]map[string]string{}
	}
	key := strconv.Itoa(int(id))
	if len(configs) == 0 {
		delete(next, key)
	} else {
		next[key] = maps.Clone(configs)
	}
	if len(next) == 0 {
		next = nil
	}
	e.mu.nodeConfigs = next
	if err := e.saveLocked(); err != nil {
		e.mu.nodeConfigs = old
		return err
	}
	return nil
}

// EntityConfigs implements Coordinator.
func (e *Embedded) EntityConfigs(path string) (map[string]string, error) {
	if _, err := ParseEntityPath(path); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	m := maps.Clone(e.mu.entities[path])
	if m == nil {
		m = map[string]string{}
	}
	return m, nil
}

// AlterEntityConfigs implements Coordinator; alter runs under the lock.
func (e *Embedded) AlterEntityConfigs(path string, alter func(map[string]string) (map[string]string, error)) error {
	if _, err := ParseEntityPath(path); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.closed {
		return ErrClosed
	}
	cur := maps.Clone(e.mu.entities[path])
	if cur == nil {
		cur = map[string]string{}
	}
	next, err := alter(cur)
	if err != nil {
		return err
	}
	old := e.mu.entities
	all := maps.Clone(old)
	if all == nil {
		all = map[string]map[string]string{}
	}
	if len(next) == 0 {
		delete(all, path)
	} else {
		all[path] = maps.Clone(next)
	}
	if len(all) == 0 {
		all = nil
	}
	e.mu.entities = all
	if err := e.saveLocked(); err != nil {
		e.mu.entities = old
		return err
	}
	return nil
}

// Entities implements Coordinator.
func (e *Embedded) Entities(entityType string) ([]string, error) {
	if entityType != "users" && entityType != "clients" {
		return nil, fmt.Errorf("coordinator: entity type %q is not users or clients", entityType)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for p := range e.mu.entities {
		if strings.HasPrefix(p, entityType+"/") {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Close implements Coordinator; it stops the controller first.
func (e *Embedded) Close() error {
	e.stopController()
	e.mu.Lock()
	e.mu.closed = true
	e.mu.Unlock()
	return nil
}
