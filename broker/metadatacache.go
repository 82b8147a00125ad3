package broker

// The metadata cache: the cluster as the controller's UpdateMetadata
// requests describe it (Kafka's ZkMetadataCache): the live brokers with
// their endpoints and racks, every partition's leader, leader epoch, ISR,
// replicas, offline replicas and partition epoch (zk version), each
// topic's id, and the controller that sent the latest update. Metadata,
// DescribeCluster and FindCoordinator answer from it (clustermetadata.go),
// on the single node too (its own controller fills it).
//
// Concurrency: the cache is an immutable snapshot behind an atomic pointer.
// Waiters (wait) are woken at each update through a channel under mu.
// Only UpdateMetadata writes it, under controlState.mu (one writer at a
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

	"github.com/twmb/franz-go/pkg/kmsg"
)

// leaderDuringDelete is the leader of a partition whose topic is being
// deleted (Kafka's LeaderAndIsr.LEADER_DURING_DELETE).
const leaderDuringDelete = -2

// metadataSnapshot is one immutable view of the cache.
type metadataSnapshot struct {
	controllerID    int32 // -1: none known
	controllerEpoch int32 // of the update that made this snapshot
	brokers         []cachedBroker
	topics          map[string]*cachedTopic
}

type cachedBroker struct {
	id        int32
	rack      *string
	endpoints []cachedEndpoint
}

type cachedEndpoint struct {
	listener         string
	host             string
	port             int32
	securityProtocol int16
}

type cachedTopic struct {
	id         [16]byte
	partitions map[int32]cachedPartition
	// count is the partition count: the highest partition number plus one
	// (set when the update that made the topic is published).
	count int32
}

type cachedPartition struct {
	controllerEpoch int32
	leader          int32
	leaderEpoch     int32
	isr             []int32
	replicas        []int32
	offline         []int32
	zkVersion       int32
}

type metadataCache struct {
	snap atomic.Pointer[metadataSnapshot]

	mu      sync.Mutex
	changed chan struct{} // closed and replaced at each update; nil until waited on
}

// wait returns once cond holds for the current snapshot (true), or when
// ctx ends (false). Admin requests wait so for the controller to have
// applied their change, as Kafka's delayed CreateTopics waits for its
// metadata cache.
func (m *metadataCache) wait(ctx context.Context, cond func(*metadataSnapshot) bool) bool {
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
func (m *metadataCache) publish(s *metadataSnapshot) {
	m.snap.Store(s)
	m.mu.Lock()
	if m.changed != nil {
		close(m.changed)
		m.changed = nil
	}
	m.mu.Unlock()
}

// hasPartition reports whether the cluster has a partition, as the
// controller last described it.
func (m *metadataCache) hasPartition(topic string, index int32) bool {
	t := m.snap.Load().topics[topic]
	if t == nil {
		return false
	}
	_, ok := t.partitions[index]
	return ok
}

// hasTopicID reports whether the cluster has a topic of that id.
func (m *metadataCache) hasTopicID(id [16]byte) bool {
	for _, t := range m.snap.Load().topics {
		if t.id == id {
			return true
		}
	}
	return false
}

// load returns the current snapshot; it must not be changed.
func (m *metadataCache) load() *metadataSnapshot { return m.snap.Load() }

// securityProtocols names Kafka's security protocols by id, the listener
// names of endpoints sent before UpdateMetadata v3.
var securityProtocols = map[int16]string{0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}

// update applies an UpdateMetadata request and returns the partitions it
// deleted. Callers hold controlState.mu.
func (m *metadataCache) update(req *kmsg.UpdateMetadataRequest) []topicPartition {
	cur := m.snap.Load()
	next := &metadataSnapshot{controllerID: -1, controllerEpoch: req.ControllerEpoch, topics: maps.Clone(cur.topics)}
	if req.ControllerID >= 0 {
		next.controllerID = req.ControllerID
	}
	for _, lb := range req.LiveBrokers {
		cb := cachedBroker{id: lb.ID, rack: lb.Rack}
		if req.Version == 0 {
			cb.endpoints = []cachedEndpoint{{listener: "PLAINTEXT", host: lb.Host, port: lb.Port}}
		}
		for _, ep := range lb.Endpoints {
			name := ep.ListenerName
			if req.Version < 3 {
				name = securityProtocols[ep.SecurityProtocol]
			}
			cb.endpoints = append(cb.endpoints, cachedEndpoint{listener: name, host: ep.Host, port: ep.Port, securityProtocol: ep.SecurityProtocol})
		}
		next.brokers = append(next.brokers, cb)
	}
	slices.SortFunc(next.brokers, func(a, b cachedBroker) int { return int(a.id) - int(b.id) })

	// copied tracks the topics already copied from cur in this update.
	copied := map[string]*cachedTopic{}
	topic := func(name string) *cachedTopic {
		if t := copied[name]; t != nil {
			return t
		}
		t := &cachedTopic{partitions: map[int32]cachedPartition{}}
		if old := next.topics[name]; old != nil {
			t.id, t.partitions = old.id, maps.Clone(old.partitions)
		}
		copied[name] = t
		next.topics[name] = t
		return t
	}
	var deleted []topicPartition
	apply := func(name string, p *kmsg.UpdateMetadataRequestTopicPartition) {
		t := topic(name)
		if p.Leader == leaderDuringDelete {
			delete(t.partitions, p.Partition)
			deleted = append(deleted, topicPartition{name, p.Partition})
			return
		}
		t.partitions[p.Partition] = cachedPartition{
			controllerEpoch: p.ControllerEpoch, leader: p.Leader, leaderEpoch: p.LeaderEpoch,
			isr: p.ISR, replicas: p.Replicas, offline: p.OfflineReplicas, zkVersion: p.ZKVersion,
		}
	}
	for i := range req.PartitionStates { // v0-v4
		apply(req.PartitionStates[i].Topic, &req.PartitionStates[i])
	}
	for i := range req.TopicStates { // v5+
		ts := &req.TopicStates[i]
		if req.Version >= 7 {
			topic(ts.Topic).id = ts.TopicID
		}
		for j := range ts.PartitionStates {
			apply(ts.Topic, &ts.PartitionStates[j])
		}
	}
	for name, t := range copied {
		if len(t.partitions) == 0 {
			delete(next.topics, name)
			continue
		}
		t.count = 0
		for i := range t.partitions {
			t.count = max(t.count, i+1)
		}
	}
	m.publish(next)
	return deleted
}
