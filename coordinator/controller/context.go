package controller

// The controller's view of the cluster, Kafka's ControllerContext: the live
// brokers with their epochs, the topics with their ids and replica
// assignments, and each partition's state as last written to (or read
// from) its state znode. The view changes only in Step; Ready reads it.

import (
	"maps"
	"slices"

	"github.com/sluice-io/sluice/engine"
)

// Endpoint is one advertised listener of a broker, as its registration
// /brokers/ids/<id> gives it.
type Endpoint struct {
	// Listener is the listener's name (PLAINTEXT, INTERNAL...).
	Listener string
	// SecurityProtocol is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
	SecurityProtocol string
	Host             string
	Port             int32
}

// BrokerInfo is a live broker: its registration and its broker epoch.
type BrokerInfo struct {
	ID int32
	// Epoch is the broker epoch (KIP-380): the registration znode's czxid.
	// A broker whose epoch changed has restarted ("bounced").
	Epoch int64
	// Rack is broker.rack; nil when not set.
	Rack *string
	// Endpoints are the advertised listeners, in registration order.
	Endpoints []Endpoint
}

// TopicAssignment is a topic's /brokers/topics/<topic> znode: its id and
// the replicas of each partition.
type TopicAssignment struct {
	Name string
	// ID is the topic id; zero for a topic created before Kafka 2.8, to
	// which the controller gives one (a SetAssignment write).
	ID engine.TopicID
	// Replicas holds partition p's replicas at index p, the preferred
	// leader first. During a reassignment (KIP-455) it is every replica
	// the partition has: the target ones first, then the others.
	Replicas [][]int32
	// Adding and Removing are the replicas an ongoing reassignment adds and
	// removes, by partition (the znode's adding_replicas and
	// removing_replicas); nil, or without the partition, when none. A
	// replica in both was added by a reassignment that another replaced or
	// cancelled before it completed. The target replicas are Replicas less
	// Removing, the original ones Replicas less Adding (reassign.go).
	Adding, Removing map[int32][]int32
	// Version is the znode's version as read; in a SetAssignment, the
	// version the write is conditional on.
	Version int32
	// UncleanLeaderElection is the topic's effective
	// unclean.leader.election.enable (its /config/topics override, else
	// the controller's broker default), read by the driver with the
	// assignment: taken for a topic the controller does not know yet
	// (Load, TopicsChanged); later changes come by TopicConfigs.
	UncleanLeaderElection bool
}

// NoLeader is a partition state's leader when no replica leads.
const NoLeader = -1

// Sentinels UpdateMetadata carries for the partitions of a topic being
// deleted (Kafka's LeaderAndIsr.LeaderDuringDelete and EpochDuringDelete):
// a broker drops such partitions from its metadata.
const (
	LeaderDuringDelete = -2
	EpochDuringDelete  = -2
)

// Leader recovery states (KIP-704): a PartitionState's
// LeaderRecoveryState.
const (
	// Recovered is every state but that of an unclean election's leader
	// that has not yet had its ISR grown.
	Recovered int8 = 0
	// Recovering marks the state an unclean election wrote: the leader was
	// not in the ISR. Its first ISR change (AlterPartition) sets Recovered.
	Recovering int8 = 1
)

// PartitionState is a partition's leader and ISR, Kafka's LeaderAndIsr
// with the controller epoch: the payload of its state znode
// /brokers/topics/<topic>/partitions/<p>/state, and the znode's version.
type PartitionState struct {
	// Leader is the leader's broker id, NoLeader when offline.
	Leader int32
	// LeaderEpoch rises with every change the controller writes.
	LeaderEpoch int32
	// ISR is the in-sync replicas.
	ISR []int32
	// ControllerEpoch is the epoch of the controller that wrote the state.
	ControllerEpoch int32
	// LeaderRecoveryState is 0 (recovered) or 1 (recovering, KIP-704).
	LeaderRecoveryState int8
	// PartitionEpoch is the state znode's version: in a state read from
	// ZooKeeper or reported written, its version then; in an update to
	// write, the version the update is conditional on. LeaderAndIsr and
	// UpdateMetadata carry it (as Kafka's ZkVersion).
	PartitionEpoch int32
}

func (s PartitionState) clone() PartitionState {
	s.ISR = slices.Clone(s.ISR)
	return s
}

// partition is one partition of a topic in the view.
type partition struct {
	tp       engine.Partition
	replicas []int32
	// state is the committed state (what the state znode holds, as far as
	// the controller knows); nil while the partition is new (no znode).
	state *PartitionState
	// nextEpoch is the leader epoch a CreateState starts at: 0, or past
	// the epoch of a state znode that vanished (so epochs never go back).
	nextEpoch int32
	// adding and removing are the partition's ongoing reassignment
	// (reassign.go), nil when none; reassign its progress.
	adding, removing []int32
	reassign         *reassignment
	// assignSeq is the topic's assignment sequence number at which
	// replicas, adding or removing last changed: ZooKeeper has them once
	// the topic's writtenSeq reaches it.
	assignSeq uint64
	// fenced are brokers that bounced while leading or in the ISR, with
	// the bounce's sequence number: the next decision for the partition
	// treats them as dead, as Kafka's onBrokerFailure does before the
	// bounced broker's onBrokerStartup.
	fenced map[int32]uint64
}

// topic is a topic in the view.
type topic struct {
	name  string
	id    engine.TopicID
	parts []*partition
	// deletion is non-nil once the topic is queued for deletion.
	deletion *deletion
	// recreated is a topic of the same name with another id, seen while
	// this one was being torn down; it is added once the teardown is done.
	recreated *TopicAssignment
	// unclean is the topic's unclean.leader.election.enable: a partition
	// with no live ISR member may be led by a live out-of-sync replica.
	unclean bool
	// version is the topic znode's version as last known (read, or after
	// the controller's own SetAssignment).
	version int32
	// assignSeq numbers the changes of its partitions' replicas the
	// controller made (reassignments); writtenSeq is the last one
	// ZooKeeper has, queuedSeq the one the queued SetAssignment holds.
	assignSeq, writtenSeq, queuedSeq uint64
	// waiters are AlterPartitionReassignments partitions waiting for their
	// assignment to be written (reassign.go).
	waiters []*reassignWaiter
}

// cluster is the controller's view.
type cluster struct {
	brokers map[int32]*BrokerInfo
	topics  map[string]*topic
	// byID finds topics by id, for LeaderAndIsr responses.
	byID map[engine.TopicID]*topic
	// offlineDirs are replicas a broker answered KAFKA_STORAGE_ERROR for
	// (Kafka's replicasOnOfflineDirs), until it answers them without
	// error or registers again.
	offlineDirs map[int32]map[engine.Partition]bool
}

func newCluster() cluster {
	return cluster{
		brokers:     map[int32]*BrokerInfo{},
		topics:      map[string]*topic{},
		byID:        map[engine.TopicID]*topic{},
		offlineDirs: map[int32]map[engine.Partition]bool{},
	}
}

func (c *cluster) live(b int32) bool { _, ok := c.brokers[b]; return ok }

// online is Kafka's isReplicaOnline: the broker is live and the replica's
// log directory is not offline.
func (c *cluster) online(b int32, tp engine.Partition) bool {
	return c.live(b) && !c.offlineDirs[b][tp]
}

func (c *cluster) partition(tp engine.Partition) *partition {
	t := c.topics[tp.Topic]
	if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.parts) {
		return nil
	}
	return t.parts[tp.Partition]
}

// addTopic adds a topic with new partitions (no state).
func (c *cluster) addTopic(a TopicAssignment) *topic {
	t := &topic{name: a.Name, id: a.ID, unclean: a.UncleanLeaderElection, version: a.Version}
	c.topics[a.Name] = t
	if a.ID != (engine.TopicID{}) {
		c.byID[a.ID] = t
	}
	for _, p := range c.addPartitions(t, a.Replicas) {
		p.adding = reassigning(p.replicas, a.Adding[p.tp.Partition])
		p.removing = reassigning(p.replicas, a.Removing[p.tp.Partition])
		switch {
		case len(without(p.replicas, p.removing)) == 0 || len(without(p.replicas, p.adding)) == 0:
			p.adding, p.removing = nil, nil // no target or no origin: not a reassignment
		case len(p.adding)+len(p.removing) > 0:
			p.reassign = &reassignment{}
		}
	}
	return t
}

// addPartitions appends partitions numbered from len(t.parts).
func (c *cluster) addPartitions(t *topic, replicas [][]int32) []*partition {
	first := len(t.parts)
	for i, rs := range replicas {
		t.parts = append(t.parts, &partition{
			tp:       engine.Partition{Topic: t.name, Partition: int32(first + i)},
			replicas: slices.Clone(rs),
		})
	}
	return t.parts[first:]
}

func (c *cluster) removeTopic(t *topic) {
	delete(c.topics, t.name)
	if c.byID[t.id] == t {
		delete(c.byID, t.id)
	}
	for _, dirs := range c.offlineDirs {
		for _, p := range t.parts {
			delete(dirs, p.tp)
		}
	}
}

// sortedBrokers returns the live brokers' ids in increasing order.
func (c *cluster) sortedBrokers() []int32 { return slices.Sorted(maps.Keys(c.brokers)) }

// sortedTopics returns the topics in name order.
func (c *cluster) sortedTopics() []*topic {
	ts := make([]*topic, 0, len(c.topics))
	for _, t := range c.topics {
		ts = append(ts, t)
	}
	slices.SortFunc(ts, func(a, b *topic) int { return cmpString(a.name, b.name) })
	return ts
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpPartition(a, b engine.Partition) int {
	if c := cmpString(a.Topic, b.Topic); c != 0 {
		return c
	}
	return int(a.Partition) - int(b.Partition)
}
