package controller

// The per-broker batches of control requests, Kafka's
// ControllerBrokerRequestBatch: what each broker is to be told is
// collected as events are stepped, and Ready turns it into at most one
// UpdateMetadata, one LeaderAndIsr and one StopReplica per live broker,
// with the state committed when Ready is called.
//
// Requests share their slices with the controller and with each other
// (a broker's ISR and replicas, the partition states of UpdateMetadata):
// they are read only.
//
// A partition whose state write is decided or in flight is left out of
// LeaderAndIsr and of the UpdateMetadata of changed partitions until the
// write's result (which queues them again), so brokers only ever hear of
// states ZooKeeper holds, with their partition epoch.
//
// Versions, as Kafka 3.9's controller sends them with its default
// inter.broker.protocol.version (3.9, above 3.4-IV0): LeaderAndIsr v7,
// UpdateMetadata v8, StopReplica v4.

import (
	"slices"

	"github.com/sluice-io/sluice/engine"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// noReplicas is an empty list of offline replicas, shared.
var noReplicas = []int32{}

// Request versions sent.
const (
	LeaderAndISRVersion   = 7
	UpdateMetadataVersion = 8
	StopReplicaVersion    = 4
)

// securityProtocolIDs are Kafka's SecurityProtocol ids, which
// UpdateMetadata's endpoints carry.
var securityProtocolIDs = map[string]int16{"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

// batch is what each broker is to be told.
type batch struct {
	// leaderAndISR holds, per broker, the partitions it gets
	// LeaderAndIsr for, with their isNew flag.
	leaderAndISR map[int32]map[engine.Partition]bool
	// updateMetadata are partitions every live broker gets in its
	// UpdateMetadata.
	updateMetadata map[engine.Partition]struct{}
	// umFull are brokers that get every partition (they just registered,
	// or lost a request).
	umFull map[int32]bool
	// umBrokers are brokers that get UpdateMetadata even with no
	// partitions, for its live broker list.
	umBrokers map[int32]bool
	// stopReplica holds, per broker, the partitions it is to stop, and
	// whether to delete them.
	stopReplica map[int32]map[engine.Partition]bool
}

func newBatch() batch {
	return batch{
		leaderAndISR:   map[int32]map[engine.Partition]bool{},
		updateMetadata: map[engine.Partition]struct{}{},
		umFull:         map[int32]bool{},
		umBrokers:      map[int32]bool{},
		stopReplica:    map[int32]map[engine.Partition]bool{},
	}
}

// addLeaderAndISR queues LeaderAndIsr for tp to broker b; isNew sticks
// until sent, as Kafka's alreadyNew.
func (b *batch) addLeaderAndISR(broker int32, tp engine.Partition, isNew bool) {
	m := b.leaderAndISR[broker]
	if m == nil {
		m = map[engine.Partition]bool{}
		b.leaderAndISR[broker] = m
	}
	m[tp] = m[tp] || isNew
}

func (b *batch) addUpdateMetadata(tp engine.Partition) { b.updateMetadata[tp] = struct{}{} }

// addStopReplica queues StopReplica for tp to broker, deleting its log if
// del (a deletion sticks until sent).
func (b *batch) addStopReplica(broker int32, tp engine.Partition, del bool) {
	m := b.stopReplica[broker]
	if m == nil {
		m = map[engine.Partition]bool{}
		b.stopReplica[broker] = m
	}
	m[tp] = m[tp] || del
}

// forget drops everything queued for a broker that died.
func (b *batch) forget(broker int32) {
	delete(b.leaderAndISR, broker)
	delete(b.umFull, broker)
	delete(b.umBrokers, broker)
	delete(b.stopReplica, broker)
}

// drop removes a partition of a topic that is gone.
func (b *batch) drop(tp engine.Partition) {
	delete(b.updateMetadata, tp)
	for _, m := range b.leaderAndISR {
		delete(m, tp)
	}
	for _, m := range b.stopReplica {
		delete(m, tp)
	}
}

// sendable reports whether queued LeaderAndIsr or UpdateMetadata for tp
// can go out now (and be cleared by Advance): no write for it is decided
// or in flight. Entries for partitions that are gone, or new, or of topics
// being deleted (for LeaderAndIsr) are dropped when sendable.
//
// A partition whose replicas a reassignment changed is not sendable either
// until ZooKeeper has its new assignment (reassign.go): brokers hear only
// of replicas ZooKeeper holds, so that a controller elected after a failed
// write tells (and deletes) the same ones.
func (c *Controller) sendable(tp engine.Partition) bool {
	if c.pending[tp] != nil || c.inflight[writeKey{tp, false}] != nil {
		return false
	}
	if t := c.topics[tp.Topic]; t != nil && t.assignSeq > t.writtenSeq {
		p := c.partition(tp)
		return p == nil || p.assignSeq <= t.writtenSeq
	}
	return true
}

// umSendable is sendable for UpdateMetadata, which for a topic being
// deleted does not depend on the partition's state.
func (c *Controller) umSendable(tp engine.Partition) bool {
	t := c.topics[tp.Topic]
	return c.sendable(tp) || t != nil && t.deletion != nil
}

// buildRequests builds every broker's requests from the batch.
func (c *Controller) buildRequests() []Request {
	ids := c.sortedBrokers()
	if len(ids) == 0 {
		return nil
	}
	live := c.liveBrokersMsg()
	var changed []engine.Partition
	for tp := range c.batch.updateMetadata {
		if c.umSendable(tp) {
			changed = append(changed, tp)
		}
	}
	slices.SortFunc(changed, cmpPartition)
	changedStates := c.umTopicStates(changed)
	var fullStates []kmsg.UpdateMetadataRequestTopicState
	var out []Request
	for _, id := range ids {
		epoch := c.brokers[id].Epoch
		states := changedStates
		if c.batch.umFull[id] {
			if fullStates == nil {
				fullStates = c.umTopicStates(c.allPartitions())
			}
			states = fullStates
		}
		// Kafka's order (ControllerBrokerRequestBatch.sendRequestsToBrokers):
		// a broker leads or follows a partition before its metadata names
		// it, so a client sent there by that metadata finds it served.
		if m := c.leaderAndISRMsg(id, epoch); m != nil {
			out = append(out, Request{Broker: id, BrokerEpoch: epoch, Msg: m})
		}
		if len(states) > 0 || c.batch.umFull[id] || c.batch.umBrokers[id] {
			out = append(out, Request{Broker: id, BrokerEpoch: epoch, Msg: &kmsg.UpdateMetadataRequest{
				Version:         UpdateMetadataVersion,
				ControllerID:    c.self,
				ControllerEpoch: c.epoch,
				BrokerEpoch:     epoch,
				TopicStates:     states,
				LiveBrokers:     live,
			}})
		}
		if m := c.stopReplicaMsg(id, epoch); m != nil {
			out = append(out, Request{Broker: id, BrokerEpoch: epoch, Msg: m})
		}
	}
	return out
}

// clearSent removes from the batch what buildRequests put in the Ready
// being advanced (the controller has not changed since).
func (c *Controller) clearSent() {
	for tp := range c.batch.updateMetadata {
		if c.umSendable(tp) {
			delete(c.batch.updateMetadata, tp)
		}
	}
	for id, m := range c.batch.leaderAndISR {
		for tp := range m {
			if c.sendable(tp) {
				delete(m, tp)
			}
		}
		if len(m) == 0 {
			delete(c.batch.leaderAndISR, id)
		}
	}
	clear(c.batch.umFull)
	clear(c.batch.umBrokers)
	clear(c.batch.stopReplica)
}

// run returns how many of the sorted tps from i on are of tps[i]'s topic,
// to size that topic's slice of partition states.
func run(tps []engine.Partition, i int) int {
	n := 1
	for i+n < len(tps) && tps[i+n].Topic == tps[i].Topic {
		n++
	}
	return n
}

// allPartitions lists every partition with a state, for brokers that get
// them all (Kafka's partitionsWithLeaders), and every partition of topics
// being deleted (with LeaderDuringDelete, which Kafka leaves out: these
// brokers may have them from an earlier controller).
func (c *Controller) allPartitions() []engine.Partition {
	var out []engine.Partition
	for _, t := range c.sortedTopics() {
		for _, p := range t.parts {
			if p.state != nil || t.deletion != nil {
				out = append(out, p.tp)
			}
		}
	}
	return out
}

// umTopicStates builds UpdateMetadata's topic states for tps (sorted),
// skipping partitions without a state. Kafka's
// addUpdateMetadataRequestForBrokers: a topic being deleted has its
// partitions' leader LeaderDuringDelete, leader epoch and zk version 0
// (sent here even for a partition whose state znode is gone, which a
// broker may still have in its metadata).
// The slices are shared by the requests of every broker: read only.
func (c *Controller) umTopicStates(tps []engine.Partition) []kmsg.UpdateMetadataRequestTopicState {
	var out []kmsg.UpdateMetadataRequestTopicState
	for i, tp := range tps {
		t := c.topics[tp.Topic]
		p := c.partition(tp)
		if p == nil || p.state == nil && t.deletion == nil {
			continue
		}
		if len(out) == 0 || out[len(out)-1].Topic != tp.Topic {
			out = append(out, kmsg.UpdateMetadataRequestTopicState{
				Topic: tp.Topic, TopicID: t.id,
				PartitionStates: make([]kmsg.UpdateMetadataRequestTopicPartition, 0, run(tps, i)),
			})
		}
		s := p.state
		if s == nil {
			s = &PartitionState{ControllerEpoch: c.epoch, ISR: []int32{}}
		}
		ps := kmsg.UpdateMetadataRequestTopicPartition{
			Partition:       tp.Partition,
			ControllerEpoch: s.ControllerEpoch,
			Leader:          s.Leader,
			LeaderEpoch:     s.LeaderEpoch,
			ISR:             s.ISR,
			ZKVersion:       s.PartitionEpoch,
			Replicas:        p.replicas,
		}
		if t.deletion != nil {
			ps.Leader, ps.LeaderEpoch, ps.ZKVersion = LeaderDuringDelete, 0, 0
		}
		for _, r := range p.replicas {
			if !c.online(r, tp) {
				ps.OfflineReplicas = append(ps.OfflineReplicas, r)
			}
		}
		if ps.OfflineReplicas == nil {
			ps.OfflineReplicas = noReplicas
		}
		last := &out[len(out)-1]
		last.PartitionStates = append(last.PartitionStates, ps)
	}
	return out
}

// liveBrokersMsg is UpdateMetadata's live brokers, by id.
func (c *Controller) liveBrokersMsg() []kmsg.UpdateMetadataRequestLiveBroker {
	var out []kmsg.UpdateMetadataRequestLiveBroker
	for _, id := range c.sortedBrokers() {
		b := c.brokers[id]
		lb := kmsg.UpdateMetadataRequestLiveBroker{ID: id, Rack: b.Rack}
		for _, e := range b.Endpoints {
			proto, ok := securityProtocolIDs[e.SecurityProtocol]
			if !ok {
				proto = -1
			}
			lb.Endpoints = append(lb.Endpoints, kmsg.UpdateMetadataRequestLiveBrokerEndpoint{
				Port: e.Port, Host: e.Host, ListenerName: e.Listener, SecurityProtocol: proto,
			})
		}
		out = append(out, lb)
	}
	return out
}

// leaderAndISRMsg builds broker id's LeaderAndIsr, nil if it gets none.
// LiveLeaders are the live leaders of its partitions, at their
// inter-broker listener (a leader without one is left out, where Kafka
// fails the whole batch).
func (c *Controller) leaderAndISRMsg(id int32, epoch int64) *kmsg.LeaderAndISRRequest {
	var tps []engine.Partition
	for tp := range c.batch.leaderAndISR[id] {
		t := c.topics[tp.Topic]
		p := c.partition(tp)
		// A replica a reassignment removed since it was queued is left out.
		if c.sendable(tp) && p != nil && p.state != nil && t.deletion == nil && slices.Contains(p.replicas, id) {
			tps = append(tps, tp)
		}
	}
	if len(tps) == 0 {
		return nil
	}
	slices.SortFunc(tps, cmpPartition)
	m := &kmsg.LeaderAndISRRequest{
		Version:         LeaderAndISRVersion,
		ControllerID:    c.self,
		ControllerEpoch: c.epoch,
		BrokerEpoch:     epoch,
	}
	var leaders []int32
	isNew := c.batch.leaderAndISR[id]
	for i, tp := range tps {
		t := c.topics[tp.Topic]
		p := t.parts[tp.Partition]
		if n := len(m.TopicStates); n == 0 || m.TopicStates[n-1].Topic != tp.Topic {
			m.TopicStates = append(m.TopicStates, kmsg.LeaderAndISRRequestTopicState{
				Topic: tp.Topic, TopicID: t.id,
				PartitionStates: make([]kmsg.LeaderAndISRRequestTopicPartition, 0, run(tps, i)),
			})
		}
		s := p.state
		ts := &m.TopicStates[len(m.TopicStates)-1]
		ts.PartitionStates = append(ts.PartitionStates, kmsg.LeaderAndISRRequestTopicPartition{
			Partition:           tp.Partition,
			ControllerEpoch:     s.ControllerEpoch,
			Leader:              s.Leader,
			LeaderEpoch:         s.LeaderEpoch,
			ISR:                 s.ISR,
			ZKVersion:           s.PartitionEpoch,
			Replicas:            p.replicas,
			AddingReplicas:      p.adding,
			RemovingReplicas:    p.removing,
			IsNew:               isNew[tp],
			LeaderRecoveryState: s.LeaderRecoveryState,
		})
		if c.live(s.Leader) && !slices.Contains(leaders, s.Leader) {
			leaders = append(leaders, s.Leader)
		}
	}
	slices.Sort(leaders)
	for _, l := range leaders {
		for _, e := range c.brokers[l].Endpoints {
			if e.Listener == c.opts.InterBrokerListener {
				m.LiveLeaders = append(m.LiveLeaders, kmsg.LeaderAndISRRequestLiveLeader{BrokerID: l, Host: e.Host, Port: e.Port})
				break
			}
		}
	}
	return m
}

// stopReplicaMsg builds broker id's StopReplica, nil if it gets none. A
// partition of a topic being deleted carries EpochDuringDelete as its
// leader epoch, as Kafka's.
func (c *Controller) stopReplicaMsg(id int32, epoch int64) *kmsg.StopReplicaRequest {
	q := c.batch.stopReplica[id]
	if len(q) == 0 {
		return nil
	}
	tps := make([]engine.Partition, 0, len(q))
	for tp := range q {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, cmpPartition)
	m := &kmsg.StopReplicaRequest{
		Version:         StopReplicaVersion,
		ControllerID:    c.self,
		ControllerEpoch: c.epoch,
		BrokerEpoch:     epoch,
	}
	for _, tp := range tps {
		leaderEpoch := int32(-1)
		if t := c.topics[tp.Topic]; t != nil && t.deletion != nil {
			leaderEpoch = EpochDuringDelete
		} else if p := c.partition(tp); p != nil && p.state != nil {
			leaderEpoch = p.state.LeaderEpoch
		}
		if n := len(m.Topics); n == 0 || m.Topics[n-1].Topic != tp.Topic {
			m.Topics = append(m.Topics, kmsg.StopReplicaRequestTopic{Topic: tp.Topic})
		}
		st := &m.Topics[len(m.Topics)-1]
		st.PartitionStates = append(st.PartitionStates, kmsg.StopReplicaRequestTopicPartitionState{
			Partition: tp.Partition, LeaderEpoch: leaderEpoch, Delete: q[tp],
		})
	}
	return m
}
