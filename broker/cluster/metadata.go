package cluster

// The metadata cache: the cluster as the controller's UpdateMetadata
// requests describe it (Kafka's ZkMetadataCache): the live brokers with
// their endpoints and racks, every partition's leader, leader epoch, ISR,
// replicas, offline replicas and partition epoch (zk version), each
// topic's id, and the controller that sent the latest update. Metadata,
// DescribeCluster and FindCoordinator answer from it (directory.go),
// on the single node too (its own controller fills it).
//
// Concurrency: the cache is an immutable snapshot behind an atomic pointer.
// Waiters (wait) are woken at each update through a channel under mu.
// Only UpdateMetadata writes it, under ControlState.mu (one writer at a
// time); it builds a new snapshot and publishes it with one store, so a
// reader (a Metadata request) takes no lock and sees one whole update or
// the one before. The copy is per topic: topics an update does not mention
// share their partition maps with the previous snapshot, which nobody
// changes once published.
//
// Update rules, as ZkMetadataCache.updateMetadata:
//   - The live brokers are replaced by the request's list, always.
//   - The controller id is the request's (none when it is negative).
//   - Partition states are merged: a partition the request names is
//     replaced, or removed with its topic's last partition when its leader
//     is -2 (LeaderDuringDelete: the topic is being deleted); partitions
//     not named keep their state (updates may be partial).
//   - Topic ids (v7+): a topic state with a non-zero id sets the topic's
//     id, a zero id clears it.

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sluice-io/sluice/engine"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// LeaderDuringDelete is the leader of a partition whose topic is being
// deleted (Kafka's LeaderAndIsr.LEADER_DURING_DELETE).
const LeaderDuringDelete = -2

// Snapshot is one immutable view of the cache.
type Snapshot struct {
	ControllerID    int32 // -1: none known
	ControllerEpoch int32 // of the update that made this snapshot
	Brokers         []Node
	Topics          map[string]*Topic
}

type Node struct {
	ID        int32
	Rack      *string
	Endpoints []Endpoint
}

type Endpoint struct {
	Listener         string
	Host             string
	Port             int32
	SecurityProtocol int16
}

type Topic struct {
	ID         [16]byte
	Partitions map[int32]Partition
	// Count is the partition Count: the highest partition number plus one
	// (set when the update that made the topic is published).
	Count int32
}

type Partition struct {
	ControllerEpoch int32
	Leader          int32
	LeaderEpoch     int32
	ISR             []int32
	Replicas        []int32
	Offline         []int32
	ZKVersion       int32
}

// Cache is the metadata cache; NewCache makes an empty one.
type Cache struct {
	snap atomic.Pointer[Snapshot]

	mu      sync.Mutex
	changed chan struct{} // closed and replaced at each update; nil until waited on
}

// Wait returns once cond holds for the current snapshot (true), or when
// ctx ends (false). Admin requests Wait so for the controller to have
// applied their change, as Kafka's delayed CreateTopics waits for its
// metadata cache.
func (m *Cache) Wait(ctx context.Context, cond func(*Snapshot) bool) bool {
	for {
		m.mu.Lock()
		if m.changed == nil {
			m.changed = make(chan struct{})
		}
		ch := m.changed
		m.mu.Unlock()
		if cond(m.snap.Load()) {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// publish stores a new snapshot and wakes the waiters.
func (m *Cache) publish(s *Snapshot) {
	m.snap.Store(s)
	m.mu.Lock()
	if m.changed != nil {
		close(m.changed)
		m.changed = nil
	}
	m.mu.Unlock()
}

// HasPartition reports whether the cluster has a partition, as the
// controller last described it.
func (m *Cache) HasPartition(topic string, index int32) bool {
	t := m.snap.Load().Topics[topic]
	if t == nil {
		return false
	}
	_, ok := t.Partitions[index]
	return ok
}

// HasTopicID reports whether the cluster has a topic of that id.
func (m *Cache) HasTopicID(id [16]byte) bool {
	for _, t := range m.snap.Load().Topics {
		if t.ID == id {
			return true
		}
	}
	return false
}

// Load returns the current snapshot; it must not be changed.
func (m *Cache) Load() *Snapshot { return m.snap.Load() }

// securityProtocols names Kafka's security protocols by id, the listener
// names of endpoints sent before UpdateMetadata v3.
var securityProtocols = map[int16]string{0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}

// Update applies an UpdateMetadata request and returns the partitions it
// deleted. One writer at a time (the broker's ControlState.mu).
func (m *Cache) Update(req *kmsg.UpdateMetadataRequest) []engine.Partition {
	cur := m.snap.Load()
	next := &Snapshot{ControllerID: -1, ControllerEpoch: req.ControllerEpoch, Topics: maps.Clone(cur.Topics)}
	if req.ControllerID >= 0 {
		next.ControllerID = req.ControllerID
	}
	for _, lb := range req.LiveBrokers {
		cb := Node{ID: lb.ID, Rack: lb.Rack}
		if req.Version == 0 {
			cb.Endpoints = []Endpoint{{Listener: "PLAINTEXT", Host: lb.Host, Port: lb.Port}}
		}
		for _, ep := range lb.Endpoints {
			name := ep.ListenerName
			if req.Version < 3 {
				name = securityProtocols[ep.SecurityProtocol]
			}
			cb.Endpoints = append(cb.Endpoints, Endpoint{Listener: name, Host: ep.Host, Port: ep.Port, SecurityProtocol: ep.SecurityProtocol})
		}
		next.Brokers = append(next.Brokers, cb)
	}
	slices.SortFunc(next.Brokers, func(a, b Node) int { return int(a.ID) - int(b.ID) })

	// copied tracks the topics already copied from cur in this update.
	copied := map[string]*Topic{}
	topic := func(name string) *Topic {
		if t := copied[name]; t != nil {
			return t
		}
		t := &Topic{Partitions: map[int32]Partition{}}
		if old := next.Topics[name]; old != nil {
			t.ID, t.Partitions = old.ID, maps.Clone(old.Partitions)
		}
		copied[name] = t
		next.Topics[name] = t
		return t
	}
	var deleted []engine.Partition
	apply := func(name string, p *kmsg.UpdateMetadataRequestTopicPartition) {
		t := topic(name)
		if p.Leader == LeaderDuringDelete {
			delete(t.Partitions, p.Partition)
			deleted = append(deleted, engine.Partition{Topic: name, Partition: p.Partition})
			return
		}
		t.Partitions[p.Partition] = Partition{
			ControllerEpoch: p.ControllerEpoch, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
			ISR: p.ISR, Replicas: p.Replicas, Offline: p.OfflineReplicas, ZKVersion: p.ZKVersion,
		}
	}
	for i := range req.PartitionStates { // v0-v4
		apply(req.PartitionStates[i].Topic, &req.PartitionStates[i])
	}
	for i := range req.TopicStates { // v5+
		ts := &req.TopicStates[i]
		if req.Version >= 7 {
			topic(ts.Topic).ID = ts.TopicID
		}
		for j := range ts.PartitionStates {
			apply(ts.Topic, &ts.PartitionStates[j])
		}
	}
	for name, t := range copied {
		if len(t.Partitions) == 0 {
			delete(next.Topics, name)
			continue
		}
		t.Count = 0
		for i := range t.Partitions {
			t.Count = max(t.Count, i+1)
		}
	}
	m.publish(next)
	return deleted
}

// NewCache returns a cache of no broker, no topic and no controller.
func NewCache() *Cache {
	m := &Cache{}
	m.snap.Store(&Snapshot{ControllerID: -1, Topics: map[string]*Topic{}})
	return m
}

// LiveBroker returns a live broker of the snapshot, nil if it is not live.
func (s *Snapshot) LiveBroker(id int32) *Node {
	i, ok := slices.BinarySearchFunc(s.Brokers, id, func(b Node, id int32) int { return int(b.ID) - int(id) })
	if !ok {
		return nil
	}
	return &s.Brokers[i]
}

// Partitions lists every partition of the snapshot, as Kafka's
// metadataCache.getAllTopics().flatMap(getTopicPartitions).
func (s *Snapshot) Partitions() []engine.Partition {
	out := []engine.Partition{}
	for name, t := range s.Topics {
		for p := range t.Partitions {
			out = append(out, engine.Partition{Topic: name, Partition: p})
		}
	}
	return out
}

// OfflinePartitions counts the partitions without a leader, those of
// topics being deleted aside (the controller's OfflinePartitionsCount).
func (s *Snapshot) OfflinePartitions() int {
	n := 0
	for _, t := range s.Topics {
		for _, p := range t.Partitions {
			if p.Leader < 0 && p.Leader != LeaderDuringDelete {
				n++
			}
		}
	}
	return n
}
