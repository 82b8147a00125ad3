package controller

// What the controller does on each event from ZooKeeper: its election's
// load (Kafka's onControllerFailover), broker changes (processBrokerChange,
// onBrokerStartup, onBrokerFailure), topic changes (processTopicChange,
// processPartitionModifications), and the results of its writes and
// requests.

import (
	"errors"
	"slices"

	"github.com/sluice-io/sluice/engine"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// load takes the cluster as the election read it. Every live broker gets
// UpdateMetadata with all partitions and LeaderAndIsr for its replicas;
// then new and offline partitions are elected and deletions resumed.
func (c *Controller) load(ev Load) {
	for _, b := range ev.Brokers {
		c.brokers[b.ID] = cloneBroker(b)
	}
	for _, a := range ev.Topics {
		if c.topics[a.Name] == nil {
			c.takeTopic(a)
		}
	}
	for tp, s := range ev.States {
		if s.ControllerEpoch > c.epoch {
			c.resign() // a later controller wrote it
			return
		}
		if p := c.partition(tp); p != nil {
			s := s.clone()
			p.state = &s
		}
	}
	for _, id := range c.sortedBrokers() {
		c.batch.umFull[id] = true
	}
	for _, name := range ev.Deleting {
		if t := c.topics[name]; t != nil && !c.opts.DisableTopicDeletion {
			c.dropReassignments(t)
			t.deletion = newDeletion(t)
		}
	}
	for _, t := range c.sortedTopics() {
		for _, p := range t.parts {
			if t.deletion != nil {
				c.batch.addUpdateMetadata(p.tp)
				continue
			}
			if p.state != nil {
				for _, r := range p.replicas {
					if c.live(r) {
						c.batch.addLeaderAndISR(r, p.tp, false)
					}
				}
			}
			c.reconcile(t, p)
		}
	}
	c.deleteTopics(ev.Deleting)
	for _, t := range c.sortedTopics() {
		if t.deletion != nil {
			c.resumeDeletion(t)
		}
	}
}

func cloneBroker(b BrokerInfo) *BrokerInfo {
	b.Endpoints = slices.Clone(b.Endpoints)
	if b.Rack != nil {
		r := *b.Rack
		b.Rack = &r
	}
	return &b
}

func sameRegistration(a *BrokerInfo, b BrokerInfo) bool {
	return slices.Equal(a.Endpoints, b.Endpoints) &&
		(a.Rack == nil) == (b.Rack == nil) && (a.Rack == nil || *a.Rack == *b.Rack)
}

// brokersChanged diffs the registrations against the live brokers, as
// Kafka's processBrokerChange: new brokers start up; a bounced broker
// (same id, new epoch) fails then starts up; missing ones fail. A broker
// whose endpoints or rack changed under the same epoch is announced to
// every live broker.
func (c *Controller) brokersChanged(live []BrokerInfo) {
	cur := make(map[int32]BrokerInfo, len(live))
	for _, b := range live {
		cur[b.ID] = b
	}
	var started, bounced, dead []int32
	updated := false
	for id, b := range cur {
		old := c.brokers[id]
		switch {
		case old == nil:
			started = append(started, id)
		case old.Epoch != b.Epoch:
			bounced = append(bounced, id)
		case !sameRegistration(old, b):
			c.brokers[id] = cloneBroker(b)
			updated = true
		}
	}
	for id := range c.brokers {
		if _, ok := cur[id]; !ok {
			dead = append(dead, id)
		}
	}
	slices.Sort(started)
	slices.Sort(bounced)
	slices.Sort(dead)
	if len(started) > 0 {
		for _, id := range started {
			c.brokers[id] = cloneBroker(cur[id])
		}
		c.startup(started)
	}
	for _, id := range slices.Concat(bounced, dead) {
		c.brokerGone(id)
	}
	if len(bounced) > 0 {
		c.fence(bounced)
		for _, id := range bounced {
			delete(c.brokers, id)
		}
		c.failure(bounced)
		for _, id := range bounced {
			c.brokers[id] = cloneBroker(cur[id])
		}
		c.startup(bounced)
	}
	if len(dead) > 0 {
		for _, id := range dead {
			delete(c.brokers, id)
		}
		c.failure(dead)
	}
	if updated {
		for id := range c.brokers {
			c.batch.umBrokers[id] = true
		}
	}
}

// fence marks the bounced brokers in the state of every partition they
// lead or are in the ISR of: its next decision treats them as dead, so a
// bounced leader's partition goes through Offline (a write) before its
// leader is elected again (another), as in Kafka, where the bounce is a
// failure then a startup.
func (c *Controller) fence(ids []int32) {
	c.bounces++
	for _, t := range c.topics {
		for _, p := range t.parts {
			if p.state == nil {
				continue
			}
			for _, id := range ids {
				if p.state.Leader == id || slices.Contains(p.state.ISR, id) {
					if p.fenced == nil {
						p.fenced = map[int32]uint64{}
					}
					p.fenced[id] = c.bounces
				}
			}
		}
	}
}

// startup is Kafka's onBrokerStartup for brokers just added to the live
// set: the other brokers learn of them (UpdateMetadata), they get every
// partition's state (UpdateMetadata) and LeaderAndIsr for all their
// replicas, partitions that can now be led are elected, and deletions
// waiting for them resume.
func (c *Controller) startup(ids []int32) {
	for _, id := range ids {
		delete(c.offlineDirs, id)
		c.resendStrays(id)
	}
	for id := range c.brokers {
		if slices.Contains(ids, id) {
			c.batch.umFull[id] = true
		} else {
			c.batch.umBrokers[id] = true
		}
	}
	for _, t := range c.sortedTopics() {
		hosts := false
		for _, p := range t.parts {
			on := false
			for _, r := range p.replicas {
				if slices.Contains(ids, r) {
					on = true
					if t.deletion == nil && p.state != nil {
						c.batch.addLeaderAndISR(r, p.tp, false)
						c.batch.addUpdateMetadata(p.tp)
					}
				}
			}
			if on {
				hosts = true
				c.reconcile(t, p)
			}
		}
		if hosts && t.deletion != nil {
			t.deletion.ineligible = false
			c.resumeDeletion(t)
		}
	}
}

// failure is Kafka's onBrokerFailure for brokers just removed from the
// live set: nothing more is sent to them, the others learn they are gone
// (UpdateMetadata, with the partitions whose offline replicas changed),
// partitions they led or were in the ISR of are decided again, and
// deletions of topics they host wait for their return.
func (c *Controller) failure(ids []int32) {
	for _, id := range ids {
		delete(c.offlineDirs, id)
		c.batch.forget(id)
	}
	for id := range c.brokers {
		c.batch.umBrokers[id] = true
	}
	for _, t := range c.sortedTopics() {
		hosts := false
		for _, p := range t.parts {
			if !slices.ContainsFunc(p.replicas, func(r int32) bool { return slices.Contains(ids, r) }) {
				continue
			}
			hosts = true
			if t.deletion == nil {
				if p.state != nil {
					c.batch.addUpdateMetadata(p.tp)
				}
				c.reconcile(t, p)
			}
		}
		if hosts && t.deletion != nil {
			t.deletion.fail(ids)
			c.resumeDeletion(t)
		}
	}
}

// takeTopic adds a topic of the assignment, giving it an id if it has
// none (Kafka's processTopicIds).
func (c *Controller) takeTopic(a TopicAssignment) *topic {
	read := a
	if a.ID == (engine.TopicID{}) {
		a.ID = c.opts.NewTopicID()
	}
	t := c.addTopic(a)
	if read.ID == (engine.TopicID{}) {
		c.setAssignment(t)
	}
	return t
}

// setAssignment queues the write of t's znode with t's id and its
// partitions' replicas and reassignments as the controller has them,
// conditional on the znode's version as last known; it replaces one
// queued before.
func (c *Controller) setAssignment(t *topic) {
	a := TopicAssignment{Name: t.name, ID: t.id, Replicas: make([][]int32, len(t.parts)), Version: t.version}
	for i, p := range t.parts {
		a.Replicas[i] = slices.Clone(p.replicas)
		if len(p.adding) > 0 {
			if a.Adding == nil {
				a.Adding = map[int32][]int32{}
			}
			a.Adding[int32(i)] = slices.Clone(p.adding)
		}
		if len(p.removing) > 0 {
			if a.Removing == nil {
				a.Removing = map[int32][]int32{}
			}
			a.Removing[int32(i)] = slices.Clone(p.removing)
		}
	}
	t.queuedSeq = t.assignSeq
	q := slices.DeleteFunc(c.topicWrites[t.name], func(w Write) bool { return w.Op == SetAssignment })
	c.topicWrites[t.name] = append(q, Write{Op: SetAssignment, Topic: t.name, Assignment: a})
}

// assignmentQueued reports whether a SetAssignment of t waits to be
// handed out, and inflight whether one is in flight.
func (c *Controller) assignmentQueued(t *topic) (queued, inflight bool) {
	queued = slices.ContainsFunc(c.topicWrites[t.name], func(w Write) bool { return w.Op == SetAssignment })
	f := c.inflight[writeKey{engine.Partition{Topic: t.name, Partition: -1}, true}]
	return queued, f != nil && f.w.Op == SetAssignment
}

// topicChanged takes a topic's assignment as read from ZooKeeper: a new
// topic, or partitions added to one (Kafka's processTopicChange and
// processPartitionModifications). Partitions added to a topic being
// deleted are undone (the znode rewritten without them), as Kafka does; a
// topic read without an id gets the one the controller gave it. A topic
// of a known name but another id is one re-created while the known one is
// torn down: it is taken once the teardown is done.
func (c *Controller) topicChanged(a TopicAssignment) {
	t := c.topics[a.Name]
	switch {
	case t == nil:
		t = c.takeTopic(a)
		for _, p := range t.parts {
			c.reconcile(t, p)
		}
	case a.ID != (engine.TopicID{}) && a.ID != t.id:
		if t.deletion != nil {
			cp := cloneAssignment(a)
			t.recreated = &cp
		}
	case t.deletion != nil:
		t.version = max(t.version, a.Version)
		if len(a.Replicas) > len(t.parts) && !t.deletion.tearingDown {
			c.setAssignment(t)
		}
	default:
		t.version = max(t.version, a.Version)
		if len(a.Replicas) > len(t.parts) {
			for _, p := range c.addPartitions(t, a.Replicas[len(t.parts):]) {
				c.reconcile(t, p)
			}
		}
		// The controller's own reassignments stand: a SetAssignment queued
		// is rebuilt (with the partitions just added and the version just
		// read), and one that failed on the version is asked for again.
		queued, inflight := c.assignmentQueued(t)
		switch {
		case queued:
			c.setAssignment(t)
		case inflight:
		case a.ID == (engine.TopicID{}) || t.assignSeq > t.writtenSeq:
			c.setAssignment(t)
		}
	}
}

func cloneAssignment(a TopicAssignment) TopicAssignment {
	rs := make([][]int32, len(a.Replicas))
	for i, r := range a.Replicas {
		rs[i] = slices.Clone(r)
	}
	a.Replicas = rs
	cloneMap := func(m map[int32][]int32) map[int32][]int32 {
		if m == nil {
			return nil
		}
		out := make(map[int32][]int32, len(m))
		for p, r := range m {
			out[p] = slices.Clone(r)
		}
		return out
	}
	a.Adding, a.Removing = cloneMap(a.Adding), cloneMap(a.Removing)
	return a
}

// queueTopicWrite queues a topic-level write; a topic's go out one at a
// time, in order.
func (c *Controller) queueTopicWrite(w Write) {
	c.topicWrites[w.Topic] = append(c.topicWrites[w.Topic], w)
}

// writeResult applies the result of a write handed out by Advance.
func (c *Controller) writeResult(r WriteResult) {
	k := r.Write.key()
	f := c.inflight[k]
	if f == nil {
		panic("controller: result of a write not in flight: " + r.Write.Op.String() + " " + r.Write.Topic)
	}
	delete(c.inflight, k)
	if errors.Is(r.Err, ErrControllerMoved) {
		if f.alter != nil {
			c.alters[k.tp] = append(c.alters[k.tp], f.alter) // answered by resign
		}
		if f.elect != nil {
			c.elections[k.tp] = append(c.elections[k.tp], f.elect)
		}
		c.resign()
		return
	}
	if !k.topicLevel {
		c.stateResult(r, f)
		return
	}
	if k.tp.Partition == zkReassignKey {
		c.zkRemovalResult(f, r)
		return
	}
	if f.w.Op == SetAssignment {
		c.assignmentResult(f, r)
		return
	}
	if r.Err != nil {
		// Asked for again, ahead of the topic's later writes.
		c.topicWrites[k.tp.Topic] = append([]Write{f.w}, c.topicWrites[k.tp.Topic]...)
		return
	}
	if f.w.Op == DeleteTopic {
		c.tornDown(f.w.Topic)
	}
}

// assignmentResult applies a SetAssignment's result. Written, the
// reassignments it holds go on (reassign.go). On a conflict the znode
// changed: its watch brings the new version, and the controller's
// assignment is written again then (at once if that version is known
// already). Another error asks for it again.
func (c *Controller) assignmentResult(f *flight, r WriteResult) {
	t := c.topics[f.w.Topic]
	if t == nil {
		return
	}
	queued, _ := c.assignmentQueued(t)
	switch {
	case r.Err == nil:
		t.version = max(t.version, r.Version)
		prev := t.writtenSeq
		t.writtenSeq = max(t.writtenSeq, f.seq)
		if queued {
			c.setAssignment(t) // at the version just written
		}
		c.assignmentWritten(t, prev)
	case errors.Is(r.Err, ErrConflict):
		if !queued && t.version > f.w.Assignment.Version && t.deletion == nil {
			c.setAssignment(t)
		}
	default:
		if !queued {
			c.topicWrites[t.name] = append([]Write{f.w}, c.topicWrites[t.name]...)
		}
	}
}

// response applies a broker's answer to a request (Kafka's
// LeaderAndIsrResponseReceived and TopicDeletionStopReplicaResponseReceived;
// UpdateMetadata's answers are only logged there, and ignored here).
func (c *Controller) response(r Response) {
	b := c.brokers[r.Request.Broker]
	if b == nil || b.Epoch != r.Request.BrokerEpoch {
		return // for a registration that is gone: its successor was told afresh
	}
	if r.Err != nil || r.Response == nil {
		c.resync(b.ID)
		return
	}
	switch resp := r.Response.(type) {
	case *kmsg.LeaderAndISRResponse:
		c.leaderAndISRResponse(b.ID, resp)
	case *kmsg.StopReplicaResponse:
		if req, ok := r.Request.Msg.(*kmsg.StopReplicaRequest); ok {
			c.stopReplicaResponse(b.ID, req, resp)
		}
	}
}

// resync tells broker b everything again, after a request to it was lost:
// all partitions' states, LeaderAndIsr for its replicas and StopReplica
// for its replicas being deleted. (Kafka's channel retries a request
// until the broker is removed; the driver does the same, so this is for
// a driver that gives up.)
func (c *Controller) resync(b int32) {
	c.batch.umFull[b] = true
	c.resendStrays(b)
	for _, t := range c.topics {
		for _, p := range t.parts {
			if !slices.Contains(p.replicas, b) {
				continue
			}
			switch {
			case t.deletion != nil:
				if t.deletion.replicas[replicaKey{p.tp.Partition, b}] == deletionStarted {
					c.batch.addStopReplica(b, p.tp, true)
				}
			case p.state != nil && !c.shuttingDown(b):
				c.batch.addLeaderAndISR(b, p.tp, false)
			}
		}
	}
}

// LogDirEvent says brokers found a log that cannot take writes (a full or
// failing disk), or one that takes them again: the notifications under
// /log_dir_event_notification (Kafka's LogDirEventNotification). Each live
// one is asked about every partition it hosts (a LeaderAndIsr of their
// current states, as Kafka's onBrokerLogDirFailure moves its replicas to
// OnlineReplica), whose answers mark its replicas offline or online
// (leaderAndISRResponse).
type LogDirEvent struct{ Brokers []int32 }

func (LogDirEvent) event() {}

func (c *Controller) logDirEvent(ev LogDirEvent) {
	for _, b := range ev.Brokers {
		if !c.live(b) {
			continue
		}
		for _, t := range c.sortedTopics() {
			if t.deletion != nil {
				continue
			}
			for _, p := range t.parts {
				if p.state != nil && slices.Contains(p.replicas, b) {
					c.batch.addLeaderAndISR(b, p.tp, false)
				}
			}
		}
	}
}

// leaderAndISRResponse marks replicas the broker answered
// KAFKA_STORAGE_ERROR for as offline (their log directory failed) and
// those it answered otherwise (without error, or refusing a state it
// already has) as online again, deciding their partitions again: a broker
// whose disk has room again answers a LogDirEvent's LeaderAndIsr so.
// Kafka marks them online only when the broker registers again.
func (c *Controller) leaderAndISRResponse(b int32, resp *kmsg.LeaderAndISRResponse) {
	if resp.ErrorCode != 0 {
		return
	}
	for _, rt := range resp.Topics {
		t := c.byID[rt.TopicID]
		if t == nil {
			continue
		}
		for _, rp := range rt.Partitions {
			if rp.Partition < 0 || int(rp.Partition) >= len(t.parts) {
				continue
			}
			p := t.parts[rp.Partition]
			offline := c.offlineDirs[b][p.tp]
			switch {
			case rp.ErrorCode == kerr.KafkaStorageError.Code && !offline:
				if c.offlineDirs[b] == nil {
					c.offlineDirs[b] = map[engine.Partition]bool{}
				}
				c.offlineDirs[b][p.tp] = true
			case rp.ErrorCode != kerr.KafkaStorageError.Code && offline:
				delete(c.offlineDirs[b], p.tp)
			default:
				continue
			}
			if t.deletion == nil {
				if p.state != nil {
					c.batch.addUpdateMetadata(p.tp)
				}
				c.reconcile(t, p)
			}
		}
	}
}

// resign stops the controller: Ready says so, and nothing else.
func (c *Controller) resign() {
	c.notController()
	c.electionsNotController()
	c.reassignNotController()
	c.resigned = true
	c.pending = map[engine.Partition]*flight{}
	c.topicWrites = map[string][]Write{}
	c.batch = newBatch()
}
