package coordinator

// The embedded backend keeps the metadata of a single-node cluster in one
// JSON file, <data>/cluster-metadata.json, replaced atomically (temp file,
// fsync, rename, fsync dir) on every change:
//
//	{"version": 1, "cluster_id": "...", "topics": [{"name": ..., "id": ..., "partitions": N,
//	  "replication_factor": 1, "configs": {...}}], "broker_configs": {...},
//	  "node_configs": {"<broker id>": {...}}}

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

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
	// BrokerConfigs are the dynamic cluster-wide broker defaults.
	BrokerConfigs map[string]string `json:"broker_configs,omitempty"`
	// NodeConfigs are each broker's own dynamic configuration, by id.
	NodeConfigs map[string]map[string]string `json:"node_configs,omitempty"`
}

// Embedded is the single-node backend.
type Embedded struct {
	path string
	self Broker

	mu struct {
		sync.Mutex
		clusterID     string
		topics        map[string]Topic
		brokerConfigs map[string]string
		nodeConfigs   map[string]map[string]string // by decimal broker id
		closed        bool
	}
}

// OpenEmbedded opens (creating) the metadata of the single node self in
// dataDir.
func OpenEmbedded(dataDir string, self Broker) (*Embedded, error) {
	e := &Embedded{path: filepath.Join(dataDir, metadataFile), self: self}
	e.mu.topics = map[string]Topic{}
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
		for _, ft := range m.Topics {
			id, err := engine.ParseTopicID(ft.ID)
			if err != nil {
				return nil, fmt.Errorf("coordinator: %s: topic %q: %w", e.path, ft.Name, err)
			}
			e.mu.topics[ft.Name] = Topic{Name: ft.Name, ID: id, Partitions: ft.Partitions, ReplicationFactor: ft.ReplicationFactor, Configs: ft.Configs}
		}
	}
	return e, nil
}

func (e *Embedded) saveLocked() error {
	m := fileMetadata{Version: 1, ClusterID: e.mu.clusterID, Topics: []fileTopic{}, BrokerConfigs: e.mu.brokerConfigs, NodeConfigs: e.mu.nodeConfigs}
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

// ControllerID implements Coordinator: the single node.
func (e *Embedded) ControllerID() int32 { return e.self.ID }

// Brokers implements Coordinator: the single node.
func (e *Embedded) Brokers() []Broker { return []Broker{e.self} }

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

// CreateTopic implements Coordinator.
func (e *Embedded) CreateTopic(t Topic) (Topic, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.closed {
		return Topic{}, ErrClosed
	}
	if _, ok := e.mu.topics[t.Name]; ok {
		return Topic{}, fmt.Errorf("%w: %s", ErrTopicExists, t.Name)
	}
	if t.ID == (engine.TopicID{}) {
		t.ID = engine.NewTopicID()
	}
	e.mu.topics[t.Name] = t
	if err := e.saveLocked(); err != nil {
		delete(e.mu.topics, t.Name)
		return Topic{}, err
	}
	return t, nil
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

// DeleteTopic implements Coordinator.
func (e *Embedded) DeleteTopic(name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.closed {
		return ErrClosed
	}
	old, ok := e.mu.topics[name]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	delete(e.mu.topics, name)
	if err := e.saveLocked(); err != nil {
		e.mu.topics[name] = old
		return err
	}
	return nil
}

// SetPartitions implements Coordinator.
func (e *Embedded) SetPartitions(name string, n int32) (Topic, error) {
	return e.update(name, func(t *Topic) error {
		if n <= t.Partitions {
			return fmt.Errorf("%w: topic %s has %d partitions, asked for %d", ErrInvalidPartitions, name, t.Partitions, n)
		}
		t.Partitions = n
		return nil
	})
}

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

// Close implements Coordinator.
func (e *Embedded) Close() error {
	e.mu.Lock()
	e.mu.closed = true
	e.mu.Unlock()
	return nil
}
