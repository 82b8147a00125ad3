package controller

// Partition reassignment (KIP-455): an administrator's
// AlterPartitionReassignments (key 45), or the legacy znode
// /admin/reassign_partitions, moves a partition's replicas to a target set,
// as Kafka 3.9's ZooKeeper-mode KafkaController.onPartitionReassignment
// does. With RS the partition's replicas, ORS the original ones, TRS the
// target, AR = RS - ORS adding and RR = RS - TRS removing:
//
//  1. RS = TRS + ORS (target first), with AR and RR, is written to the
//     topic znode (/brokers/topics/<topic>: partitions, adding_replicas,
//     removing_replicas), and only then does anything else happen; the
//     request is answered once it is written.
//  2. The leader epoch is bumped (same leader and ISR), and every live
//     replica of RS gets LeaderAndIsr with it (the adding ones as new):
//     the leader learns its new followers, which start fetching.
//  3. Once every TRS member is in the committed ISR (the leader added
//     them, AlterPartition), one state write completes the move: the
//     leader kept if it is in TRS and live, else the first live TRS
//     member; the ISR less the RR members; the leader epoch bumped. (Kafka
//     writes the leader change, then removes each RR member from the ISR;
//     one write is fewer states, the same end.) The TRS replicas get
//     LeaderAndIsr with RS = TRS, the RR ones StopReplica with deletion,
//     every broker UpdateMetadata.
//  4. RS = TRS with no AR or RR is written to the topic znode last, and
//     the partition leaves /admin/reassign_partitions if it came from
//     there with this target.
//
// The original replicas are RS less AR in RS's order, as Kafka's
// ReplicaAssignment.originReplicas: a move of [1 2] to [3 2] cancelled
// returns to [2 1] (the preferred leader changes), as in Kafka.
//
// A new controller finds ongoing reassignments in the topic znodes and
// resumes them at step 2 (after step 3, whose write is done, it finishes
// at once). A broker that registers gets LeaderAndIsr for its replicas as
// for any partition; a removed replica on a broker that was down at step 3
// is sent StopReplica when the broker registers, while this controller
// lasts (after a failover it stays on disk, as in Kafka).
//
// A reassignment asked while another is in progress replaces it: the
// origin stays, the target changes; a cancellation (replicas null) returns
// to the origin. The replicas the old target added that the new one does
// not want stay until the new one completes (they may hold the only
// in-sync copy), as both adding and removing replicas: RS less RR is the
// target, RS less AR the origin. Kafka stops them at once.
//
// Per partition, as Kafka's processApiPartitionReassignment, in order:
// a target that is empty, names a broker twice or a negative id, or adds
// a broker that is not live: INVALID_REPLICA_ASSIGNMENT; a cancellation
// of a partition not being reassigned: NO_REASSIGNMENT_IN_PROGRESS; a
// partition that does not exist, or of a topic being deleted:
// UNKNOWN_TOPIC_OR_PARTITION. A target the partition has, or moves to,
// already changes nothing: answered once ZooKeeper has that assignment. A reassignment through the API
// removes the partition from /admin/reassign_partitions, as Kafka's
// ("the latest reassignment always takes precedence").
//
// Differences from Kafka: a topic queued for deletion drops its
// reassignments (every replica, added or removed, is deleted with it),
// where Kafka delays the deletion; entries of /admin/reassign_partitions
// are checked as API targets are (Kafka takes them unchecked) and those
// refused are removed from it with a warning, as Kafka removes those that
// fail.

import (
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/engine"
)

// ReassignTarget is one partition's target in a reassignment request.
type ReassignTarget struct {
	Partition engine.Partition
	// Replicas is the target replica set, the preferred leader first; nil
	// cancels the partition's reassignment (in RemoveReassignments: the
	// entry whatever its target).
	Replicas []int32
}

// AlterReassignments is an administrator's AlterPartitionReassignments
// as it reached the controller: an event of Step, answered by exactly one
// ReassignAnswer in a later Ready.
type AlterReassignments struct {
	// ID names the request in its answer: the driver's own numbering.
	ID uint64
	// Targets are the partitions to reassign; one named twice takes its
	// last target and is answered once.
	Targets []ReassignTarget
}

// ZkReassignments is the content of /admin/reassign_partitions, read when
// the znode was created or changed (each entry's target is taken unless
// the partition already moves to it).
type ZkReassignments struct {
	Targets []ReassignTarget
}

// ReassignResult is one partition's outcome.
type ReassignResult struct {
	Partition engine.Partition
	ErrorCode int16
	Message   *string
}

// ReassignAnswer answers the AlterReassignments of ID: ErrorCode for the
// whole request (NOT_CONTROLLER, with no Results), or one result per
// partition named, in the order they were first named.
type ReassignAnswer struct {
	ID        uint64
	ErrorCode int16
	Results   []ReassignResult
}

// Reassignment is an ongoing reassignment, as ListPartitionReassignments
// reports it.
type Reassignment struct {
	Partition                  engine.Partition
	Replicas, Adding, Removing []int32
}

func (AlterReassignments) event() {}
func (ZkReassignments) event()    {}

// reassignStep is the reassignment step a state write performs.
type reassignStep int8

const (
	noStep reassignStep = iota
	// stepBump bumps the leader epoch to tell RS of the assignment.
	stepBump
	// stepComplete moves the partition to its target.
	stepComplete
)

// reassignment is a partition's ongoing reassignment's progress.
type reassignment struct {
	// bumped: the leader epoch was bumped (RS told) since the assignment
	// last changed.
	bumped bool
	// reorder: the replicas changed order only (or a move that adds
	// nothing was cancelled): the bump alone tells the brokers, and ends
	// it, as Kafka's completion of such a reassignment bumps the leader
	// epoch. Not listed as ongoing (no adding or removing replicas).
	reorder bool
}

// reassignCall is a request being answered.
type reassignCall struct {
	id       uint64
	results  []ReassignResult
	awaiting int
}

// reassignWaiter is a partition of a request waiting for its topic's
// assignment to reach ZooKeeper: its sequence number seq.
type reassignWaiter struct {
	call *reassignCall
	slot int
	seq  uint64
}

var noSuchPartition = str("The partition does not exist.")

// alterReassignments takes a request: each partition is checked, and its
// reassignment started, replaced or cancelled; answered once every
// partition's assignment is written.
func (c *Controller) alterReassignments(ev AlterReassignments) {
	last := map[engine.Partition]int{}
	var order []engine.Partition
	for i, tg := range ev.Targets {
		if _, ok := last[tg.Partition]; !ok {
			order = append(order, tg.Partition)
		}
		last[tg.Partition] = i
	}
	call := &reassignCall{id: ev.ID, results: make([]ReassignResult, len(order))}
	for i, tp := range order {
		tg := ev.Targets[last[tp]]
		res := &call.results[i]
		res.Partition = tp
		if tg.Replicas != nil {
			if res.ErrorCode, res.Message = c.checkTarget(tp, tg.Replicas); res.ErrorCode != 0 {
				continue
			}
		}
		p := c.partition(tp)
		if tg.Replicas == nil && (p == nil || p.reassign == nil || p.reassign.reorder) {
			res.ErrorCode = kerr.NoReassignmentInProgress.Code
			continue
		}
		if p == nil || c.topics[tp.Topic].deletion != nil {
			res.ErrorCode, res.Message = kerr.UnknownTopicOrPartition.Code, noSuchPartition
			continue
		}
		if _, ok := c.zkTargets[tp]; ok {
			delete(c.zkTargets, tp)
			c.removeZkEntry(tp, nil)
		}
		target := tg.Replicas
		if target == nil {
			target = without(p.replicas, p.adding)
		}
		t := c.topics[tp.Topic]
		// Answered once ZooKeeper has the assignment: the one just
		// made, or the same target asked before and not yet written.
		if c.reassignTo(t, p, target) || p.assignSeq > t.writtenSeq {
			t.waiters = append(t.waiters, &reassignWaiter{call: call, slot: i, seq: p.assignSeq})
			call.awaiting++
		}
	}
	if call.awaiting == 0 {
		c.reassigned = append(c.reassigned, ReassignAnswer{ID: call.id, Results: call.results})
	}
}

// checkTarget is Kafka's validateReplicas: the target's replicas are
// distinct broker ids, and those it adds are live.
func (c *Controller) checkTarget(tp engine.Partition, replicas []int32) (int16, *string) {
	bad := kerr.InvalidReplicaAssignment.Code
	switch {
	case len(replicas) == 0:
		return bad, str("Empty replica list specified in partition reassignment.")
	case len(uniq(replicas)) != len(replicas):
		return bad, str(fmt.Sprintf("Duplicate replica ids in partition reassignment replica list: %v", replicas))
	case slices.ContainsFunc(replicas, func(r int32) bool { return r < 0 }):
		return bad, str(fmt.Sprintf("Invalid broker id in replica list: %v", replicas))
	}
	var cur []int32
	if p := c.partition(tp); p != nil {
		cur = p.replicas
	}
	for _, r := range replicas {
		if !slices.Contains(cur, r) && !c.live(r) {
			return bad, str(fmt.Sprintf("Replica assignment has brokers that are not alive. Replica list: %v, live broker list: %v",
				without(replicas, cur), c.sortedBrokers()))
		}
	}
	return 0, nil
}

// zkReassignments takes /admin/reassign_partitions: each entry not yet
// taken is started (or replaces the partition's reassignment); one refused
// is removed from the znode. An entry whose target the partition has
// reached already is removed too.
func (c *Controller) zkReassignments(ev ZkReassignments) {
	for _, tg := range ev.Targets {
		tp := tg.Partition
		if cur, ok := c.zkTargets[tp]; ok && slices.Equal(cur, tg.Replicas) {
			continue
		}
		code, _ := c.checkTarget(tp, tg.Replicas)
		p := c.partition(tp)
		if code == 0 && (p == nil || c.topics[tp.Topic].deletion != nil) {
			code = kerr.UnknownTopicOrPartition.Code
		}
		if code != 0 || tg.Replicas == nil {
			delete(c.zkTargets, tp)
			c.removeZkEntry(tp, tg.Replicas)
			continue
		}
		t := c.topics[tp.Topic]
		changed := c.reassignTo(t, p, tg.Replicas)
		c.zkTargets[tp] = slices.Clone(tg.Replicas)
		if !changed && p.reassign == nil {
			c.zkTargetReached(p) // nothing to move
		}
	}
}

// removeZkEntry queues the removal of tp's entry from
// /admin/reassign_partitions (of any target when replicas is nil).
func (c *Controller) removeZkEntry(tp engine.Partition, replicas []int32) {
	c.zkRemovals = append(c.zkRemovals, ReassignTarget{Partition: tp, Replicas: slices.Clone(replicas)})
}

// zkTargetReached removes p's entry from /admin/reassign_partitions once
// p has the target it gave.
func (c *Controller) zkTargetReached(p *partition) {
	if target, ok := c.zkTargets[p.tp]; ok && slices.Equal(target, p.replicas) {
		delete(c.zkTargets, p.tp)
		c.removeZkEntry(p.tp, target)
	}
}

// zkRemovalResult asks again for removals that failed.
func (c *Controller) zkRemovalResult(f *flight, r WriteResult) {
	if r.Err != nil {
		c.zkRemovals = append(slices.Clone(f.w.Reassignments), c.zkRemovals...)
	}
}

// reassignTo gives p the assignment moving it to target from its origin
// and queues its write; it reports whether the assignment changed.
func (c *Controller) reassignTo(t *topic, p *partition, target []int32) bool {
	origin := without(p.replicas, p.adding)
	full := uniq(slices.Concat(target, origin, p.replicas))
	adding, removing := without(full, origin), without(full, target)
	if slices.Equal(full, p.replicas) && slices.Equal(adding, p.adding) && slices.Equal(removing, p.removing) {
		return false
	}
	p.replicas, p.adding, p.removing = full, adding, removing
	p.reassign = &reassignment{reorder: len(adding)+len(removing) == 0}
	t.assignSeq++
	p.assignSeq = t.assignSeq
	c.setAssignment(t)
	c.reconcile(t, p) // a step decided on the old assignment goes
	return true
}

// assignmentWritten answers the requests whose assignments ZooKeeper now
// has and lets their partitions go on.
func (c *Controller) assignmentWritten(t *topic, prev uint64) {
	kept := t.waiters[:0]
	for _, w := range t.waiters {
		if w.seq <= t.writtenSeq {
			c.answerReassign(w, 0, nil)
		} else {
			kept = append(kept, w)
		}
	}
	t.waiters = kept
	if t.deletion != nil {
		return
	}
	for _, p := range t.parts {
		// Held while the assignment was written: the partition's decisions
		// (reconcile), the reassignment's next step, and leaders' and
		// administrators' requests (sendable).
		if p.assignSeq > prev || p.reassign != nil || len(c.alters[p.tp]) > 0 || len(c.elections[p.tp]) > 0 {
			c.reconcile(t, p)
		}
	}
}

// answerReassign answers one partition of a request.
func (c *Controller) answerReassign(w *reassignWaiter, code int16, msg *string) {
	res := &w.call.results[w.slot]
	res.ErrorCode, res.Message = code, msg
	w.call.awaiting--
	if w.call.awaiting == 0 {
		c.reassigned = append(c.reassigned, ReassignAnswer{ID: w.call.id, Results: w.call.results})
	}
}

// serveReassignment decides p's next reassignment step while p is quiet
// and ZooKeeper has its assignment: the leader epoch bump (step 2), or,
// once the target replicas are all in the ISR and one of them can lead,
// the completion (step 3).
func (c *Controller) serveReassignment(t *topic, p *partition) {
	r := p.reassign
	if r == nil || t.deletion != nil || !c.sendable(p.tp) || p.assignSeq > t.writtenSeq || p.state == nil {
		return
	}
	s := p.state
	w := Write{Op: UpdateState, Topic: p.tp.Topic, Partition: p.tp.Partition, State: PartitionState{
		Leader:              s.Leader,
		LeaderEpoch:         s.LeaderEpoch + 1,
		ISR:                 slices.Clone(s.ISR),
		ControllerEpoch:     c.epoch,
		LeaderRecoveryState: s.LeaderRecoveryState,
		PartitionEpoch:      s.PartitionEpoch,
	}}
	step := stepBump
	if r.bumped {
		target := without(p.replicas, p.removing)
		if slices.ContainsFunc(target, func(b int32) bool { return !slices.Contains(s.ISR, b) }) {
			return
		}
		live := c.liveFor(p)
		leader := int32(NoLeader)
		if slices.Contains(target, s.Leader) && live(s.Leader) {
			leader = s.Leader
		} else if i := slices.IndexFunc(target, live); i >= 0 {
			leader = target[i]
		}
		if leader == NoLeader {
			return // waits for a target replica to be live
		}
		w.State.Leader = leader
		w.State.ISR = slices.DeleteFunc(w.State.ISR, func(b int32) bool { return !slices.Contains(target, b) })
		step = stepComplete
	}
	c.pending[p.tp] = &flight{w: w, fences: maps.Clone(p.fenced), step: step, seq: p.assignSeq}
}

// reassignResult applies a reassignment step's successful write (the
// committed state already taken): the replicas are told, and a completion
// shrinks the replicas to the target, deletes the removed ones and writes
// the final assignment.
//
// A step decided for an assignment another reassignment replaced while it
// was in flight is an ordinary state change: the new one starts over.
func (c *Controller) reassignResult(t *topic, p *partition, f *flight) {
	if p.reassign == nil || f.seq != p.assignSeq {
		c.tellReplicas(t, p, false, NoLeader)
		return
	}
	if f.step == stepBump && p.reassign.reorder {
		p.reassign = nil
		c.tellReplicas(t, p, false, NoLeader)
		c.zkTargetReached(p)
		return
	}
	if f.step == stepBump {
		p.reassign.bumped = true
		for _, r := range p.replicas {
			if c.live(r) && !c.shuttingDown(r) {
				c.batch.addLeaderAndISR(r, p.tp, slices.Contains(p.adding, r))
			}
		}
		c.batch.addUpdateMetadata(p.tp)
		return
	}
	removed := p.removing
	p.replicas = without(p.replicas, removed)
	p.adding, p.removing, p.reassign = nil, nil, nil
	// The final assignment is written next; the target replicas are told
	// at once (a subset of the replicas ZooKeeper has: p stays sendable),
	// so the new leader leads before that write, as in Kafka.
	t.assignSeq++
	c.setAssignment(t)
	c.tellReplicas(t, p, false, NoLeader)
	for _, b := range removed {
		c.removeStray(b, p.tp)
	}
	c.zkTargetReached(p)
}

// removeStray sends StopReplica with deletion to broker b for a replica
// it no longer has, now or when it registers.
func (c *Controller) removeStray(b int32, tp engine.Partition) {
	if c.strays[b] == nil {
		c.strays[b] = map[engine.Partition]bool{}
	}
	c.strays[b][tp] = true
	if c.live(b) {
		c.batch.addStopReplica(b, tp, true)
	}
}

// strayDeleted forgets the strays broker b answered it deleted.
func (c *Controller) strayDeleted(b int32, codes map[engine.Partition]int16) {
	for tp, code := range codes {
		if code == 0 && c.strays[b][tp] {
			delete(c.strays[b], tp)
		}
	}
	if len(c.strays[b]) == 0 {
		delete(c.strays, b)
	}
}

// resendStrays sends StopReplica again for broker b's strays, when it
// registers: those of partitions it hosts again are forgotten.
func (c *Controller) resendStrays(b int32) {
	for tp := range c.strays[b] {
		if p := c.partition(tp); p != nil && slices.Contains(p.replicas, b) {
			delete(c.strays[b], tp)
			continue
		}
		c.batch.addStopReplica(b, tp, true)
	}
}

// dropReassignments abandons the reassignments of a topic queued for
// deletion: its replicas, added or removed, are all deleted with it.
func (c *Controller) dropReassignments(t *topic) {
	for _, w := range t.waiters {
		c.answerReassign(w, kerr.UnknownTopicOrPartition.Code, noSuchPartition)
	}
	t.waiters = nil
	for _, p := range t.parts {
		p.adding, p.removing, p.reassign = nil, nil, nil
		if _, ok := c.zkTargets[p.tp]; ok {
			delete(c.zkTargets, p.tp)
			c.removeZkEntry(p.tp, nil)
		}
	}
}

// reassignNotController answers every request still held NOT_CONTROLLER,
// when the controller resigns.
func (c *Controller) reassignNotController() {
	calls := map[*reassignCall]bool{}
	for _, t := range c.topics {
		for _, w := range t.waiters {
			calls[w.call] = true
		}
		t.waiters = nil
	}
	ids := make([]uint64, 0, len(calls))
	for call := range calls {
		ids = append(ids, call.id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		c.reassigned = append(c.reassigned, ReassignAnswer{ID: id, ErrorCode: kerr.NotController.Code})
	}
	c.zkRemovals = nil
}

// Reassignments returns the ongoing reassignments, by partition.
func (c *Controller) Reassignments() []Reassignment {
	var out []Reassignment
	for _, t := range c.sortedTopics() {
		for _, p := range t.parts {
			if p.reassign != nil && !p.reassign.reorder {
				out = append(out, Reassignment{Partition: p.tp, Replicas: slices.Clone(p.replicas),
					Adding: slices.Clone(p.adding), Removing: slices.Clone(p.removing)})
			}
		}
	}
	return out
}

// without returns rs less the members of drop, in rs's order; nil when
// empty.
func without(rs, drop []int32) []int32 {
	var out []int32
	for _, r := range rs {
		if !slices.Contains(drop, r) {
			out = append(out, r)
		}
	}
	return out
}

// uniq returns rs without repeats, in first-seen order.
func uniq(rs []int32) []int32 {
	out := make([]int32, 0, len(rs))
	for _, r := range rs {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// reassigning returns the members of rs among replicas, nil when none:
// a topic znode's adding or removing replicas as the controller takes
// them.
func reassigning(replicas, rs []int32) []int32 {
	var out []int32
	for _, r := range rs {
		if slices.Contains(replicas, r) && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}
