package controller

// AlterPartition (key 56): a partition leader asks the controller to change
// its partition's ISR (Kafka 3.9's KafkaController.processAlterPartition in
// ZooKeeper mode). The controller checks the request against the committed
// state and either answers at once or writes the new state, conditional on
// the partition epoch (the state znode's version), answering once the
// write's result is in. An ISR change keeps the leader and its epoch and
// bumps only the partition epoch; every live broker gets UpdateMetadata for
// the partitions the request named (the leader too, which also learns the
// new state from the answer).
//
// Kafka's checks, in its order, per partition:
//
//   - no committed state (unknown partition): UNKNOWN_TOPIC_OR_PARTITION;
//     in v2+ a topic id the controller does not know: UNKNOWN_TOPIC_ID.
//   - a leader or partition epoch above the committed one: NOT_CONTROLLER
//     (ZooKeeper has a state this controller has not seen).
//   - a leader epoch below the committed one: FENCED_LEADER_EPOCH.
//   - the committed leader, leader epoch, ISR and recovery state already:
//     answered with the committed state (idempotent, whatever the partition
//     epoch).
//   - a partition epoch below the committed one: INVALID_UPDATE_VERSION (as
//     is a write that finds the znode's version changed).
//   - a recovering leader (KIP-704) with more than itself in the ISR, or a
//     recovered one going back to recovering: INVALID_REQUEST.
//   - an ISR member not live, or in controlled shutdown (other than the
//     leader asking): INELIGIBLE_REPLICA (v2+; OPERATION_NOT_ATTEMPTED
//     before), KIP-841.
//
// For the whole request: NOT_CONTROLLER when this controller resigned, and
// STALE_BROKER_EPOCH when the requesting broker is not registered at the
// request's broker epoch.
//
// Differences from Kafka, where its ZooKeeper-mode controller trusts the
// leader: a request from a broker that is not the partition's leader, or
// whose ISR is empty, names a broker twice or outside the replicas, or
// leaves out the leader, is answered INVALID_REQUEST (KRaft's controller
// refuses these too); an ISR member whose replica is on an offline log
// directory is ineligible like a dead one; a partition of a topic being
// deleted is answered OPERATION_NOT_ATTEMPTED (Kafka would write it). A
// partition whose state write the controller decided or has in flight is
// looked at once that write is done, as if the controller's decision had
// come first (Kafka's controller handles events one at a time, and writes
// synchronously). A controller that resigns with requests outstanding
// answers them NOT_CONTROLLER as a whole, so the leader asks the next one.

import (
	"cmp"
	"errors"
	"slices"

	"github.com/sluice-io/sluice/engine"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterPartition is a partition leader's AlterPartition request as it
// reached the controller: an event of Step, answered by exactly one Answer
// in a later Ready.
type AlterPartition struct {
	// ID names the request in its Answer: the driver's own numbering.
	ID      uint64
	Request *kmsg.AlterPartitionRequest
}

// Answer is the response to the AlterPartition of ID, in the request's
// version, to send back to the leader.
type Answer struct {
	ID       uint64
	Response *kmsg.AlterPartitionResponse
}

func (AlterPartition) event() {}

// alterCall is a request being answered: its response, filled in as its
// partitions are decided.
type alterCall struct {
	id       uint64
	resp     *kmsg.AlterPartitionResponse
	awaiting int // partitions not yet answered
}

// alterItem is one partition of a request, waiting for its answer.
type alterItem struct {
	call    *alterCall
	slot    *kmsg.AlterPartitionResponseTopicPartition // in call.resp, owned by it
	version int16
	broker  int32
	req     kmsg.AlterPartitionRequestTopicPartition
}

// isr is the ISR the item asks for.
func (it *alterItem) isr() []int32 {
	if it.version < 3 {
		return it.req.NewISR
	}
	out := make([]int32, len(it.req.NewEpochISR))
	for i, b := range it.req.NewEpochISR {
		out[i] = b.BrokerID
	}
	return out
}

// alterPartition takes a request: the whole-request checks, then each
// partition is queued behind its partition's write, if any, and decided
// when the partition is quiet.
func (c *Controller) alterPartition(ev AlterPartition) {
	req := ev.Request
	resp := &kmsg.AlterPartitionResponse{Version: req.Version}
	if b := c.brokers[req.BrokerID]; b == nil || b.Epoch != req.BrokerEpoch {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		c.answers = append(c.answers, Answer{ev.ID, resp})
		return
	}
	call := &alterCall{id: ev.ID, resp: resp}
	type queued struct {
		t    *topic
		p    *partition
		item *alterItem
	}
	var items []queued
	seen := map[engine.Partition]*alterItem{}
	resp.Topics = make([]kmsg.AlterPartitionResponseTopic, len(req.Topics))
	for i, rt := range req.Topics {
		var t *topic
		if req.Version >= 2 {
			t = c.byID[rt.TopicID]
		} else {
			t = c.topics[rt.Topic]
		}
		out := &resp.Topics[i]
		out.Topic, out.TopidID = rt.Topic, rt.TopicID
		out.Partitions = make([]kmsg.AlterPartitionResponseTopicPartition, 0, len(rt.Partitions))
		for _, rp := range rt.Partitions {
			var p *partition
			if t != nil {
				p = c.partition(engine.Partition{Topic: t.name, Partition: rp.Partition})
			}
			if p != nil {
				if it := seen[p.tp]; it != nil {
					it.req = rp // Kafka keeps a partition's last entry, answered once
					continue
				}
			}
			out.Partitions = append(out.Partitions, kmsg.AlterPartitionResponseTopicPartition{Partition: rp.Partition})
			slot := &out.Partitions[len(out.Partitions)-1]
			switch {
			case t == nil && req.Version >= 2:
				slot.ErrorCode = kerr.UnknownTopicID.Code
			case p == nil || p.state == nil && t.deletion == nil:
				slot.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				it := &alterItem{call: call, slot: slot, version: req.Version, broker: req.BrokerID, req: rp}
				seen[p.tp] = it
				items = append(items, queued{t, p, it})
			}
		}
	}
	call.awaiting = len(items)
	if call.awaiting == 0 {
		c.answers = append(c.answers, Answer{ev.ID, resp})
		return
	}
	for _, q := range items {
		c.alters[q.p.tp] = append(c.alters[q.p.tp], q.item)
	}
	for _, q := range items {
		c.serveAlters(q.t, q.p)
	}
}

// serveAlters decides p's queued requests, in order, while p is quiet (no
// state write decided or in flight): the first one accepted becomes p's
// write, and those after it wait for its result. Those of a topic being
// deleted are refused at once.
func (c *Controller) serveAlters(t *topic, p *partition) {
	for len(c.alters[p.tp]) > 0 {
		if t.deletion == nil && !c.sendable(p.tp) {
			return
		}
		it := pop(c.alters, p.tp)
		if t.deletion != nil {
			c.answerAlter(it, kerr.OperationNotAttempted.Code, nil)
			continue
		}
		c.decideAlter(p, it)
	}
}

// pop removes and returns the head of tp's queue in q, which must not be
// empty.
func pop[T any](q map[engine.Partition][]T, tp engine.Partition) T {
	it := q[tp][0]
	q[tp] = q[tp][1:]
	if len(q[tp]) == 0 {
		delete(q, tp)
	}
	return it
}

// decideAlter answers it from p's committed state, or makes its write p's
// pending one.
func (c *Controller) decideAlter(p *partition, it *alterItem) {
	cur := p.state
	if cur == nil {
		c.answerAlter(it, kerr.UnknownTopicOrPartition.Code, nil)
		return
	}
	// Kafka sends UpdateMetadata for every partition of the request it
	// knows, refused or not.
	c.batch.addUpdateMetadata(p.tp)
	rq, isr := it.req, it.isr()
	const recovering = 1
	var code int16
	switch {
	case rq.PartitionEpoch > cur.PartitionEpoch || rq.LeaderEpoch > cur.LeaderEpoch:
		code = kerr.NotController.Code
	case rq.LeaderEpoch < cur.LeaderEpoch:
		code = kerr.FencedLeaderEpoch.Code
	case it.broker == cur.Leader && slices.Equal(isr, cur.ISR) && rq.LeaderRecoveryState == cur.LeaderRecoveryState:
		c.answerAlter(it, 0, cur)
		return
	case rq.PartitionEpoch < cur.PartitionEpoch:
		code = kerr.InvalidUpdateVersion.Code
	case rq.LeaderRecoveryState == recovering && len(isr) > 1,
		cur.LeaderRecoveryState != recovering && rq.LeaderRecoveryState == recovering,
		it.broker != cur.Leader, !validISR(isr, p.replicas, it.broker):
		code = kerr.InvalidRequest.Code
	case slices.ContainsFunc(isr, func(b int32) bool { return !c.online(b, p.tp) || b != it.broker && c.shuttingDown(b) }):
		code = kerr.IneligibleReplica.Code
		if it.version < 2 {
			code = kerr.OperationNotAttempted.Code
		}
	}
	if code != 0 {
		c.answerAlter(it, code, nil)
		return
	}
	w := Write{Op: UpdateState, Topic: p.tp.Topic, Partition: p.tp.Partition, ISRChange: true, State: PartitionState{
		Leader:              it.broker,
		LeaderEpoch:         cur.LeaderEpoch,
		ISR:                 slices.Clone(isr),
		ControllerEpoch:     c.epoch,
		LeaderRecoveryState: rq.LeaderRecoveryState,
		PartitionEpoch:      cur.PartitionEpoch,
	}}
	c.pending[p.tp] = &flight{w: w, alter: it}
}

// validISR reports whether isr is a non-empty set of replicas holding the
// leader.
func validISR(isr, replicas []int32, leader int32) bool {
	if !slices.Contains(isr, leader) {
		return false
	}
	for i, r := range isr {
		if !slices.Contains(replicas, r) || slices.Contains(isr[:i], r) {
			return false
		}
	}
	return true
}

// answerAlter answers one partition of a request: with code, or with state
// s when code is 0. The request is answered once all its partitions are.
func (c *Controller) answerAlter(it *alterItem, code int16, s *PartitionState) {
	it.slot.ErrorCode = code
	if code == 0 {
		it.slot.LeaderID = s.Leader
		it.slot.LeaderEpoch = s.LeaderEpoch
		it.slot.ISR = slices.Clone(s.ISR)
		it.slot.LeaderRecoveryState = s.LeaderRecoveryState
		it.slot.PartitionEpoch = s.PartitionEpoch
	}
	it.call.awaiting--
	if it.call.awaiting == 0 {
		c.answers = append(c.answers, Answer{it.call.id, it.call.resp})
	}
}

// alterResult answers the request whose write f was, with the write's
// result r: the state written, INVALID_UPDATE_VERSION when the znode
// changed meanwhile, or UNKNOWN_SERVER_ERROR (the leader retries).
func (c *Controller) alterResult(p *partition, f *flight, r WriteResult) {
	switch {
	case r.Err == nil:
		c.answerAlter(f.alter, 0, p.state)
		c.batch.addUpdateMetadata(p.tp)
	case errors.Is(r.Err, ErrConflict):
		c.answerAlter(f.alter, kerr.InvalidUpdateVersion.Code, nil)
	default:
		c.answerAlter(f.alter, kerr.UnknownServerError.Code, nil)
	}
}

// dropPending drops p's decision not yet handed out; a request's or an
// election's write goes back to the head of p's queue, to be decided
// again.
func (c *Controller) dropPending(tp engine.Partition) {
	f := c.pending[tp]
	if f == nil {
		return
	}
	delete(c.pending, tp)
	if f.alter != nil {
		c.alters[tp] = append([]*alterItem{f.alter}, c.alters[tp]...)
	}
	if f.elect != nil {
		c.elections[tp] = append([]*electItem{f.elect}, c.elections[tp]...)
	}
}

// notController answers every outstanding request NOT_CONTROLLER as a
// whole, when the controller resigns.
func (c *Controller) notController() {
	calls := map[*alterCall]bool{}
	for _, q := range c.alters {
		for _, it := range q {
			calls[it.call] = true
		}
	}
	for _, f := range c.pending {
		if f.alter != nil {
			calls[f.alter.call] = true
		}
	}
	for _, f := range c.inflight {
		if f.alter != nil {
			calls[f.alter.call] = true
		}
	}
	var out []*alterCall
	for call := range calls {
		out = append(out, call)
	}
	slices.SortFunc(out, func(a, b *alterCall) int { return cmp.Compare(a.id, b.id) })
	for _, call := range out {
		c.answers = append(c.answers, Answer{call.id, &kmsg.AlterPartitionResponse{Version: call.resp.Version, ErrorCode: kerr.NotController.Code}})
	}
	c.alters = map[engine.Partition][]*alterItem{}
}
