package controller

// The controller's decision core: a value built for one election, fed
// events by Step, its decisions taken by Ready and acknowledged by Advance,
// as etcd raft's RawNode. doc.go describes the loop that drives it and the
// invariants it keeps.

import (
	"maps"
	"slices"

	"github.com/sluice-io/sluice/engine"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Options configure a Controller. The zero value is Kafka's defaults.
type Options struct {
	// InterBrokerListener is inter.broker.listener.name: the listener
	// whose endpoints LeaderAndIsr's live leaders carry. Default
	// "PLAINTEXT" (Kafka's security.inter.broker.protocol default).
	InterBrokerListener string
	// DisableTopicDeletion is delete.topic.enable=false: deletion markers
	// are removed without deleting their topics. Default false (Kafka's
	// delete.topic.enable defaults to true).
	DisableTopicDeletion bool
	// Elect decides partitions' leaders and ISRs. Default Elect, this
	// package's rule.
	Elect ElectionRule
	// NewTopicID returns an id for a topic that has none (one created
	// before Kafka 2.8). Default engine.NewTopicID.
	NewTopicID func() engine.TopicID
}

// Event is an input of Step: Load, BrokersChanged, TopicsChanged,
// DeleteTopics, WriteResult, Response, AlterPartition (alter.go),
// ControlledShutdown (shutdown.go), ElectLeaders, TopicConfigs (elect.go),
// ImbalanceCheck (rebalance.go), AlterReassignments or ZkReassignments
// (reassign.go), LogDirEvent (events.go).
type Event interface{ event() }

// Load is the cluster as read from ZooKeeper after the election, before
// the watches' first events: it must be the first event Stepped.
type Load struct {
	// Brokers are the registrations under /brokers/ids.
	Brokers []BrokerInfo
	// Topics are the assignments under /brokers/topics.
	Topics []TopicAssignment
	// States are the partition state znodes that exist, with their
	// versions as PartitionEpoch.
	States map[engine.Partition]PartitionState
	// Deleting are the children of /admin/delete_topics.
	Deleting []string
}

// BrokersChanged is the set of registrations under /brokers/ids, read
// after its children changed: all live brokers, not a difference. A
// broker missing from it died; one present with another epoch bounced.
type BrokersChanged struct {
	Live []BrokerInfo
}

// TopicsChanged carries topic assignments read from /brokers/topics: of
// topics that appeared there, or whose znode changed (partitions added).
// Assignments of existing partitions never change here (the controller
// makes reassignments, reassign.go): only partitions beyond the known
// count are taken, and the znode's version.
type TopicsChanged struct {
	Topics []TopicAssignment
}

// DeleteTopics are the children of /admin/delete_topics, read after they
// changed. Names already being deleted are ignored.
type DeleteTopics struct {
	Topics []string
}

// WriteResult is the outcome of a Write of a Ready. Each Write is
// answered by exactly one WriteResult.
type WriteResult struct {
	Write Write
	// Version is the state znode's version after a successful CreateState
	// or UpdateState (0 after a create), or the topic znode's after a
	// SetAssignment.
	Version int32
	// Err is nil on success, or wraps ErrControllerMoved (the epoch check
	// failed: the controller resigns), ErrConflict (a state znode's version
	// differed, or it existed for CreateState or was missing for
	// UpdateState), or any other error (the write is asked for again).
	Err error
	// Current is, with ErrConflict, the state znode as read after the
	// conflict (version in PartitionEpoch), or nil if it does not exist.
	Current *PartitionState
}

// Response is the outcome of a Request of a Ready: the broker's response,
// or Err when it could not be delivered (the driver retries as Kafka's
// RequestSendThread does and reports Err only when it gives up while the
// broker is still registered). Responses for a broker that has since died
// or bounced are ignored.
type Response struct {
	Request  Request
	Response kmsg.Response
	Err      error
}

func (Load) event()           {}
func (BrokersChanged) event() {}
func (TopicsChanged) event()  {}
func (DeleteTopics) event()   {}
func (WriteResult) event()    {}
func (Response) event()       {}

// WriteOp is the kind of a Write.
type WriteOp int8

// Writes the controller asks for. Each is one ZooKeeper operation or a
// fixed sequence of them, done as the controller of this epoch: in a
// multi-op with the check of /controller_epoch's version.
const (
	// CreateState creates the partition's state znode (with its parents
	// /brokers/topics/<topic>/partitions and .../<p>) holding State.
	CreateState WriteOp = iota + 1
	// UpdateState sets the state znode to State if its version is
	// State.PartitionEpoch.
	UpdateState
	// SetAssignment writes /brokers/topics/<topic> (Assignment's id and
	// replicas) if its version is Assignment.Version: to give a topic its
	// id, or to undo partitions added to a topic being deleted. (Kafka
	// writes it unconditionally, which can undo a CreatePartitions made
	// meanwhile.) On ErrConflict it is not retried: the znode's data watch
	// brings the new assignment, which is decided on afresh.
	SetAssignment
	// DeleteTopic deletes the topic's znodes once every replica is
	// deleted: /brokers/topics/<topic> with everything under it, then
	// /config/topics/<topic>, then /admin/delete_topics/<topic>. Znodes
	// already gone are not an error.
	DeleteTopic
	// RemoveDeleteMarker deletes /admin/delete_topics/<topic> (of a topic
	// that does not exist, or with deletion disabled). A missing znode is
	// not an error.
	RemoveDeleteMarker
	// RemoveReassignments rewrites /admin/reassign_partitions without the
	// entries Reassignments names (one whose Replicas is nil matches its
	// partition whatever its target), deleting the znode once it lists no
	// partition, as Kafka's maybeRemoveFromZkReassignment: a read, then a
	// write conditional on the version read, again on a conflict. A
	// missing znode is not an error. Topic is empty.
	RemoveReassignments
)

var writeOpNames = [...]string{CreateState: "CreateState", UpdateState: "UpdateState", SetAssignment: "SetAssignment", DeleteTopic: "DeleteTopic",
	RemoveDeleteMarker: "RemoveDeleteMarker", RemoveReassignments: "RemoveReassignments"}

func (op WriteOp) String() string {
	if op > 0 && int(op) < len(writeOpNames) {
		return writeOpNames[op]
	}
	return "WriteOp(?)"
}

// Write is a ZooKeeper write the controller asks for.
type Write struct {
	Op    WriteOp
	Topic string
	// Partition is CreateState's and UpdateState's partition.
	Partition int32
	// State is what CreateState and UpdateState write.
	State PartitionState
	// Assignment is what SetAssignment writes.
	Assignment TopicAssignment
	// ISRChange says an UpdateState is a leader's AlterPartition: the
	// leader and its epoch stay, the ISR changes (alter.go).
	ISRChange bool
	// Reassignments are the entries RemoveReassignments removes.
	Reassignments []ReassignTarget
	// Unclean says an UpdateState elects a leader from outside the
	// committed ISR (an unclean election): records acknowledged by the old
	// ISR and not replicated to the new leader are lost. The driver logs
	// it as Kafka does, at WARN.
	Unclean bool
}

func (w Write) key() writeKey {
	switch w.Op {
	case CreateState, UpdateState:
		return writeKey{engine.Partition{Topic: w.Topic, Partition: w.Partition}, false}
	case RemoveReassignments:
		return zkReassignWrite
	}
	return writeKey{engine.Partition{Topic: w.Topic, Partition: -1}, true}
}

// zkReassignKey is the partition number of the key of RemoveReassignments,
// which changes no topic: one is in flight at a time.
const zkReassignKey = -2

var zkReassignWrite = writeKey{engine.Partition{Partition: zkReassignKey}, true}

// writeKey names what a write changes: a partition's state znode, or a
// topic's other znodes. At most one write per key is in flight.
type writeKey struct {
	tp         engine.Partition
	topicLevel bool
}

// Request is a control request to send to a broker.
type Request struct {
	Broker int32
	// BrokerEpoch is the epoch of the registration it is meant for (the
	// request carries it too).
	BrokerEpoch int64
	// Msg is a *kmsg.UpdateMetadataRequest (v8), *kmsg.LeaderAndISRRequest
	// (v7) or *kmsg.StopReplicaRequest (v4), the versions Kafka 3.9's
	// controller sends with its default inter.broker.protocol.version.
	Msg kmsg.Request
}

// Ready is what the controller decided: ZooKeeper writes to perform and
// requests to send. Writes may be performed in any order and pipelined;
// each must be answered by a WriteResult. Requests are in the order to
// deliver them: by broker, and for one broker LeaderAndIsr, then
// UpdateMetadata, then StopReplica (Kafka's order); a broker's requests, across Readys, must
// reach it in the order given (one connection, as Kafka's
// RequestSendThread), while different brokers' are independent.
type Ready struct {
	Writes   []Write
	Requests []Request
	// Answers are responses to AlterPartition requests, to send back
	// once Advance is called (after the requests of this Ready are
	// queued, as Kafka queues UpdateMetadata before answering).
	Answers []Answer
	// ShutdownAnswers are responses to ControlledShutdown requests
	// (shutdown.go), sent back as Answers are.
	ShutdownAnswers []ShutdownAnswer
	// Elections are the results of ElectLeaders requests, sent back
	// likewise (elect.go).
	Elections []ElectionAnswer
	// Reassignments are the results of AlterPartitionReassignments
	// requests, sent back likewise (reassign.go).
	Reassignments []ReassignAnswer
	// Resigned says the controller was deposed (a write failed on the
	// controller epoch, or another controller wrote a partition's state):
	// it asks for nothing more and ignores every later event.
	Resigned bool
}

// Empty reports whether rd asks for nothing.
func (rd Ready) Empty() bool {
	return len(rd.Writes) == 0 && len(rd.Requests) == 0 && len(rd.Answers) == 0 && len(rd.ShutdownAnswers) == 0 &&
		len(rd.Elections) == 0 && len(rd.Reassignments) == 0 && !rd.Resigned
}

// Controller is the decision core of the controller elected at one epoch.
// It is not safe for concurrent use. The zero value is not usable: see New.
type Controller struct {
	self  int32
	epoch int32
	opts  Options

	cluster
	loaded   bool
	resigned bool
	// told says Ready reported Resigned (it does so once).
	told bool
	// bounces numbers bounces, for partition.fenced.
	bounces uint64

	// pending are state writes decided and not yet handed out: at most
	// one per partition, replaced whenever the partition is reconsidered.
	pending map[engine.Partition]*flight
	// topicWrites are topic-level writes not yet handed out, in order.
	topicWrites map[string][]Write
	// inflight are writes handed out and not yet answered.
	inflight map[writeKey]*flight
	// alters are AlterPartition requests' partitions waiting for their
	// partition's write to be done, in arrival order (alter.go).
	alters map[engine.Partition][]*alterItem
	// answers are AlterPartition responses not yet handed out.
	answers []Answer
	// shutting are the brokers in controlled shutdown; shutdowns their
	// requests not yet answered, shutdownAnswers the answers not yet
	// handed out (shutdown.go).
	shutting        map[int32]bool
	shutdowns       []*shutdownCall
	shutdownAnswers []ShutdownAnswer
	// elections are elections' partitions waiting for their partition's
	// write to be done, in arrival order, and elected the ElectLeaders
	// results not yet handed out (elect.go).
	elections map[engine.Partition][]*electItem
	elected   []ElectionAnswer
	// reassigned are the AlterPartitionReassignments answers not yet
	// handed out; zkRemovals the entries of /admin/reassign_partitions to
	// remove, not yet handed out; zkTargets the targets taken from it, by
	// partition, removed from it once reached (reassign.go).
	reassigned []ReassignAnswer
	zkRemovals []ReassignTarget
	zkTargets  map[engine.Partition][]int32
	// strays are replicas a completed reassignment removed whose deletion
	// was not confirmed, by broker: sent StopReplica again when it
	// registers.
	strays map[int32]map[engine.Partition]bool

	batch batch

	// handed is the Ready returned and not yet Advanced.
	handed *Ready
}

// flight is a decided state write and the fences it was decided under.
type flight struct {
	w      Write
	fences map[int32]uint64
	// alter is the request partition an ISRChange write answers.
	alter *alterItem
	// elect is the election a write performs.
	elect *electItem
	// step is the reassignment step a state write performs (reassign.go);
	// seq is the assignment sequence number a SetAssignment holds.
	step reassignStep
	seq  uint64
}

// New returns the controller of broker self, elected at controller epoch
// epoch. Step(Load) must come first.
func New(self, epoch int32, opts Options) *Controller {
	if opts.InterBrokerListener == "" {
		opts.InterBrokerListener = "PLAINTEXT"
	}
	if opts.Elect == nil {
		opts.Elect = Elect
	}
	if opts.NewTopicID == nil {
		opts.NewTopicID = engine.NewTopicID
	}
	return &Controller{
		self:        self,
		epoch:       epoch,
		opts:        opts,
		cluster:     newCluster(),
		pending:     map[engine.Partition]*flight{},
		topicWrites: map[string][]Write{},
		inflight:    map[writeKey]*flight{},
		alters:      map[engine.Partition][]*alterItem{},
		shutting:    map[int32]bool{},
		elections:   map[engine.Partition][]*electItem{},
		zkTargets:   map[engine.Partition][]int32{},
		strays:      map[int32]map[engine.Partition]bool{},
		batch:       newBatch(),
	}
}

// ID is the controller's broker id.
func (c *Controller) ID() int32 { return c.self }

// Epoch is the controller epoch it was elected at.
func (c *Controller) Epoch() int32 { return c.epoch }

// Resigned reports whether the controller was deposed.
func (c *Controller) Resigned() bool { return c.resigned }

// Step feeds the controller one event. It panics if called between a
// non-empty Ready and its Advance, or with an event other than Load
// first: both are bugs of the caller.
func (c *Controller) Step(ev Event) {
	if c.handed != nil {
		panic("controller: Step before Advance")
	}
	if a, ok := ev.(AlterPartition); ok && (c.resigned || !c.loaded) {
		c.answers = append(c.answers, Answer{a.ID, &kmsg.AlterPartitionResponse{Version: a.Request.Version, ErrorCode: kerr.NotController.Code}})
		return
	}
	if a, ok := ev.(ControlledShutdown); ok && (c.resigned || !c.loaded) {
		c.shutdownAnswers = append(c.shutdownAnswers, ShutdownAnswer{a.ID, &kmsg.ControlledShutdownResponse{Version: a.Request.Version, ErrorCode: kerr.NotController.Code}})
		return
	}
	if e, ok := ev.(ElectLeaders); ok && (c.resigned || !c.loaded) {
		c.elected = append(c.elected, notControllerElection(e))
		return
	}
	if r, ok := ev.(AlterReassignments); ok && (c.resigned || !c.loaded) {
		c.reassigned = append(c.reassigned, ReassignAnswer{ID: r.ID, ErrorCode: kerr.NotController.Code})
		return
	}
	if c.resigned {
		return
	}
	if _, ok := ev.(Load); !ok && !c.loaded {
		panic("controller: Step before Load")
	}
	switch ev := ev.(type) {
	case Load:
		if c.loaded {
			panic("controller: Load twice")
		}
		c.loaded = true
		c.load(ev)
	case BrokersChanged:
		c.brokersChanged(ev.Live)
	case TopicsChanged:
		for _, a := range ev.Topics {
			c.topicChanged(a)
		}
	case DeleteTopics:
		c.deleteTopics(ev.Topics)
	case WriteResult:
		c.writeResult(ev)
	case Response:
		c.response(ev)
	case AlterPartition:
		c.alterPartition(ev)
	case ControlledShutdown:
		c.controlledShutdown(ev)
	case ElectLeaders:
		c.electLeaders(ev)
	case TopicConfigs:
		c.topicConfigs(ev)
	case ImbalanceCheck:
		c.imbalanceCheck(ev)
	case AlterReassignments:
		c.alterReassignments(ev)
	case ZkReassignments:
		c.zkReassignments(ev)
	case LogDirEvent:
		c.logDirEvent(ev)
	default:
		panic("controller: unknown event")
	}
}

// Ready returns what the controller decided since the last Advance. It
// does not change the controller: called again before Advance, it returns
// the same. After handling a non-empty Ready (the writes issued, the
// requests queued), call Advance with it before the next Step.
func (c *Controller) Ready() Ready {
	if c.handed != nil {
		return *c.handed
	}
	if c.resigned {
		c.notControllerShutdowns()
		rd := Ready{Resigned: !c.told, Answers: c.answers, ShutdownAnswers: c.shutdownAnswers, Elections: c.elected, Reassignments: c.reassigned}
		if len(rd.Answers) > 0 || len(rd.ShutdownAnswers) > 0 || len(rd.Elections) > 0 || len(rd.Reassignments) > 0 {
			c.handed = &rd
		}
		return rd
	}
	c.answerShutdowns()
	rd := Ready{Answers: c.answers, ShutdownAnswers: c.shutdownAnswers, Elections: c.elected, Reassignments: c.reassigned}
	for _, f := range c.pending {
		rd.Writes = append(rd.Writes, f.w)
	}
	slices.SortFunc(rd.Writes, func(a, b Write) int {
		return cmpPartition(a.key().tp, b.key().tp)
	})
	var names []string
	for name, ws := range c.topicWrites {
		if len(ws) > 0 && c.inflight[ws[0].key()] == nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		rd.Writes = append(rd.Writes, c.topicWrites[name][0])
	}
	if len(c.zkRemovals) > 0 && c.inflight[zkReassignWrite] == nil {
		rd.Writes = append(rd.Writes, Write{Op: RemoveReassignments, Reassignments: c.zkRemovals})
	}
	rd.Requests = c.buildRequests()
	if !rd.Empty() {
		c.handed = &rd
	}
	return rd
}

// Advance acknowledges rd, the last Ready: its writes are in flight (each
// to be answered by a WriteResult) and its requests sent.
func (c *Controller) Advance(rd Ready) {
	if rd.Resigned {
		c.told = true
	}
	if c.handed == nil {
		return
	}
	if len(rd.Writes) != len(c.handed.Writes) || len(rd.Requests) != len(c.handed.Requests) || len(rd.Answers) != len(c.handed.Answers) ||
		len(rd.ShutdownAnswers) != len(c.handed.ShutdownAnswers) || len(rd.Elections) != len(c.handed.Elections) ||
		len(rd.Reassignments) != len(c.handed.Reassignments) {
		panic("controller: Advance with another Ready")
	}
	c.handed = nil
	c.answers = nil
	c.shutdownAnswers = nil
	c.elected = nil
	c.reassigned = nil
	c.clearSent()
	for _, w := range rd.Writes {
		k := w.key()
		if w.Op == RemoveReassignments {
			c.inflight[k] = &flight{w: w}
			c.zkRemovals = nil
			continue
		}
		if k.topicLevel {
			c.topicWrites[w.Topic] = c.topicWrites[w.Topic][1:]
			if len(c.topicWrites[w.Topic]) == 0 {
				delete(c.topicWrites, w.Topic)
			}
			f := &flight{w: w}
			if t := c.topics[w.Topic]; t != nil && w.Op == SetAssignment {
				f.seq = t.queuedSeq
			}
			c.inflight[k] = f
			continue
		}
		c.inflight[k] = c.pending[k.tp]
		delete(c.pending, k.tp)
	}
}

// Topic returns a topic's assignment as the controller knows it.
func (c *Controller) Topic(name string) (TopicAssignment, bool) {
	t := c.topics[name]
	if t == nil {
		return TopicAssignment{}, false
	}
	a := TopicAssignment{Name: name, ID: t.id, Replicas: make([][]int32, len(t.parts)), UncleanLeaderElection: t.unclean}
	for i, p := range t.parts {
		a.Replicas[i] = slices.Clone(p.replicas)
	}
	return a, true
}

// Topics returns the names of the topics the controller knows, sorted,
// those being deleted included.
func (c *Controller) Topics() []string { return slices.Sorted(maps.Keys(c.topics)) }

// Deleting reports whether a topic is queued for deletion.
func (c *Controller) Deleting(name string) bool {
	t := c.topics[name]
	return t != nil && t.deletion != nil
}

// State returns a partition's committed state (ok false while it has
// none).
func (c *Controller) State(tp engine.Partition) (PartitionState, bool) {
	p := c.partition(tp)
	if p == nil || p.state == nil {
		return PartitionState{}, false
	}
	return p.state.clone(), true
}

// Broker returns a live broker.
func (c *Controller) Broker(id int32) (BrokerInfo, bool) {
	b := c.brokers[id]
	if b == nil {
		return BrokerInfo{}, false
	}
	return *b, true
}

// LiveBrokers returns the live brokers' ids, sorted.
func (c *Controller) LiveBrokers() []int32 { return c.sortedBrokers() }

// Online reports whether broker b is live and its replica of tp is not on
// an offline log directory (Kafka's isReplicaOnline).
func (c *Controller) Online(b int32, tp engine.Partition) bool { return c.online(b, tp) }
