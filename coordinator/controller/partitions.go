package controller

// The partition state machine (Kafka's PartitionStateMachine and the ISR
// part of its ReplicaStateMachine): what state each partition should have,
// the write that gives it that state, and what follows once ZooKeeper has
// it.
//
// Kafka moves a partition between New (no state znode), Online and
// Offline, and writes its state znode synchronously at each step. Here
// the decision is one function of the committed state and the live
// brokers (reconcile, applying the ElectionRule), made whenever either
// changes; its write goes out in the next Ready, and the brokers are told
// once the WriteResult says ZooKeeper has it, with its new version as the
// partition epoch. At most one write per partition is in flight; a
// decision not yet handed out is replaced by the next one.

import (
	"errors"
	"maps"
	"slices"
)

// ElectionInput is what an ElectionRule decides from.
type ElectionInput struct {
	// Replicas is the partition's assignment, the preferred leader first.
	Replicas []int32
	// State is the committed state; nil for a new partition (no state
	// znode yet). The rule must not modify it.
	State *PartitionState
	// Live reports whether a replica's broker is live, its replica not on
	// an offline log directory, and it has not bounced since the state was
	// written.
	Live func(broker int32) bool
	// Unclean says a live replica outside the ISR may lead when no ISR
	// member is live: the topic's unclean.leader.election.enable, or an
	// ElectLeaders of type UNCLEAN.
	Unclean bool
}

// ElectionRule decides the leader and ISR a partition should have. For a
// new partition, NoLeader leaves it new (no state znode) until a replica
// can lead. For one with a state, returning its leader and ISR unchanged
// means no write; anything else is written with the leader epoch bumped,
// as every state change of Kafka's ZooKeeper-mode controller is.
//
// A rule must return a leader that is live, among the replicas and in the
// ISR, or NoLeader; and an ISR that is a non-empty subset of the replicas
// (except NoLeader with no ISR for a partition left new). A leader from
// outside the committed ISR is an unclean election: only with Unclean,
// only when no ISR member is live, and with the ISR that leader alone.
// The tests' invariant checker holds every rule to that.
type ElectionRule func(in ElectionInput) (leader int32, isr []int32)

// Elect is Kafka's rule (Election.leaderForOffline):
//
//   - A new partition's leader is its first live replica in assignment
//     order, and its ISR every live replica in assignment order, as Kafka's
//     initializeLeaderAndIsrForPartitions: the logs are all empty, so all
//     are in sync (an acks=all produce waits for each of them).
//   - A partition keeps a live leader; dead replicas leave its ISR.
//   - Otherwise the leader is the first replica in assignment order that is
//     live and in the ISR (Kafka's offlinePartitionLeaderElection with
//     unclean election disabled), the ISR losing its dead members.
//   - With no live ISR member and Unclean, the first live replica in
//     assignment order leads, the ISR that replica alone: an unclean
//     election, in which records acknowledged by the old ISR and not
//     replicated to the new leader are lost.
//   - With no live ISR member otherwise the partition is offline:
//     NoLeader, and the ISR keeps its live members or, if none, stays as
//     it was, as Kafka keeps the last ISR (it never empties the ISR of its
//     last member).
func Elect(in ElectionInput) (int32, []int32) {
	if in.State == nil {
		var isr []int32
		for _, r := range in.Replicas {
			if in.Live(r) {
				isr = append(isr, r)
			}
		}
		if len(isr) == 0 {
			return NoLeader, nil
		}
		return isr[0], isr
	}
	s := in.State
	isr := make([]int32, 0, len(s.ISR))
	for _, r := range s.ISR {
		if in.Live(r) {
			isr = append(isr, r)
		}
	}
	if s.Leader != NoLeader && slices.Contains(isr, s.Leader) {
		return s.Leader, isr
	}
	for _, r := range in.Replicas {
		if slices.Contains(isr, r) {
			return r, isr
		}
	}
	if in.Unclean {
		for _, r := range in.Replicas {
			if in.Live(r) {
				return r, []int32{r}
			}
		}
	}
	if len(isr) == 0 {
		isr = slices.Clone(s.ISR)
	}
	return NoLeader, isr
}

// reconcile decides p's next write, replacing any decision not yet handed
// out. Nothing is decided while a write for p is in flight (its result
// reconciles again) or while its topic is being deleted. Fences (bounced
// brokers) hold only until a write decided under them succeeds: if they
// call for no write, the decision is made again without them.
func (c *Controller) reconcile(t *topic, p *partition) {
	c.dropPending(p.tp)
	defer c.serveReassignment(t, p)
	defer c.serveElections(t, p)
	defer c.serveAlters(t, p)
	if t.deletion != nil || c.inflight[writeKey{p.tp, false}] != nil || p.assignSeq > t.writtenSeq {
		// Decided once the write is done, or once ZooKeeper has the
		// replicas a reassignment gave (reassign.go): a state never names
		// replicas ZooKeeper's assignment does not.
		return
	}
	for {
		w, ok := c.decide(p, t.unclean)
		if ok {
			c.pending[p.tp] = &flight{w: w, fences: maps.Clone(p.fenced)}
			return
		}
		if len(p.fenced) == 0 {
			return
		}
		p.fenced = nil
	}
}

// liveFor is the election rule's Live for p: the replica is online, has
// not bounced since p's state was written, and its broker is not in
// controlled shutdown.
func (c *Controller) liveFor(p *partition) func(int32) bool {
	return func(b int32) bool {
		if _, ok := p.fenced[b]; ok || c.shuttingDown(b) {
			return false
		}
		return c.online(b, p.tp)
	}
}

// decide applies the election rule to p, unclean election allowed or not
// (its topic's setting, or an ElectLeaders UNCLEAN): the write it calls
// for, if any. A leader from outside the committed ISR (an unclean
// election) marks the state RECOVERING (KIP-704), as Kafka's
// newRecoveringLeaderAndIsr, and the write Unclean; any other election
// keeps the recovery state.
func (c *Controller) decide(p *partition, unclean bool) (Write, bool) {
	var cur *PartitionState
	if p.state != nil {
		s := p.state.clone()
		cur = &s
		// An ISR member in controlled shutdown still runs, with the ISR's
		// records: no unclean election while it does (Kafka's controlled
		// shutdown never elects uncleanly).
		if unclean && slices.ContainsFunc(s.ISR, func(b int32) bool { return c.shuttingDown(b) && c.online(b, p.tp) }) {
			unclean = false
		}
	}
	leader, isr := c.opts.Elect(ElectionInput{Replicas: slices.Clone(p.replicas), State: cur, Live: c.liveFor(p), Unclean: unclean})
	w := Write{Topic: p.tp.Topic, Partition: p.tp.Partition}
	switch {
	case p.state == nil && leader == NoLeader:
		return w, false
	case leader == NoLeader && p.state.Leader != NoLeader && c.shuttingDown(p.state.Leader) && c.online(p.state.Leader, p.tp):
		// A broker in controlled shutdown keeps a partition no one else
		// can take until it is gone (shutdown.go).
		return w, false
	case p.state == nil:
		w.Op = CreateState
		w.State = PartitionState{Leader: leader, LeaderEpoch: p.nextEpoch, ISR: isr, ControllerEpoch: c.epoch}
	case leader == p.state.Leader && slices.Equal(isr, p.state.ISR):
		return w, false
	default:
		w.Op = UpdateState
		w.State = PartitionState{
			Leader:              leader,
			LeaderEpoch:         p.state.LeaderEpoch + 1,
			ISR:                 isr,
			ControllerEpoch:     c.epoch,
			LeaderRecoveryState: p.state.LeaderRecoveryState,
			PartitionEpoch:      p.state.PartitionEpoch,
		}
		if leader != NoLeader && !slices.Contains(p.state.ISR, leader) {
			w.Unclean = true
			w.State.LeaderRecoveryState = Recovering
		}
	}
	return w, true
}

// stateResult applies the result of a CreateState or UpdateState.
func (c *Controller) stateResult(r WriteResult, f *flight) {
	t := c.topics[r.Write.Topic]
	p := c.partition(r.Write.key().tp)
	if p == nil {
		return // cannot happen: a topic is removed only with no write in flight
	}
	switch {
	case r.Err == nil:
		prevLeader := int32(NoLeader)
		if p.state != nil {
			prevLeader = p.state.Leader
		}
		s := f.w.State.clone()
		s.PartitionEpoch = r.Version
		p.state = &s
		for b, seq := range f.fences {
			if p.fenced[b] == seq {
				delete(p.fenced, b)
			}
		}
		switch {
		case f.alter != nil:
			c.alterResult(p, f, r) // brokers get UpdateMetadata only, as Kafka's
		case f.step != noStep:
			c.reassignResult(t, p, f)
		default:
			c.tellReplicas(t, p, f.w.Op == CreateState, prevLeader)
		}
		if f.elect != nil {
			c.electResult(f.elect, r)
		}
	case errors.Is(r.Err, ErrConflict):
		if f.alter != nil {
			c.alterResult(p, f, r)
		}
		if f.elect != nil {
			c.electResult(f.elect, r) // decided again on the state read back
		}
		// Someone else wrote the znode (Kafka re-reads it and retries on
		// BADVERSION). The driver read it back: adopt it and decide again.
		if r.Current == nil {
			if p.state != nil {
				p.nextEpoch = max(p.nextEpoch, p.state.LeaderEpoch+1)
			}
			p.state = nil
			break
		}
		if r.Current.ControllerEpoch > c.epoch {
			// Kafka: "the LeaderAndIsr path was already written by another
			// controller", elected after this one.
			c.resign()
			return
		}
		s := r.Current.clone()
		p.state = &s
		c.tellReplicas(t, p, false, NoLeader)
	default:
		// Decided again below, and so asked for again; a leader's request
		// is answered, and the leader asks again, as is an election's.
		if f.alter != nil {
			c.alterResult(p, f, r)
		}
		if f.elect != nil {
			c.electResult(f.elect, r)
		}
	}
	if t.deletion != nil {
		c.serveAlters(t, p)
		c.serveElections(t, p)
		c.resumeDeletion(t)
		return
	}
	c.reconcile(t, p)
}

// tellReplicas queues LeaderAndIsr with p's committed state for its live
// replicas and UpdateMetadata for every live broker, as Kafka's
// addLeaderAndIsrRequestForBrokers does after a state change. Kafka sends
// a new partition's LeaderAndIsr to its ISR, which is every live replica,
// as here. A broker in controlled shutdown is told only that it no longer
// leads (prevLeader, the leader before the change, when the change moved
// the leadership away from it: Kafka's controlled-shutdown election sends
// LeaderAndIsr to the live or shutting-down replicas), so it stops taking
// writes at the old epoch at once; it follows the new leader until
// StopReplica once its partitions are quiet (shutdown.go). Of the other
// changes it is told nothing: its fetches carry its old leader epoch,
// which the new leader refuses (FENCED_LEADER_EPOCH), so a broker that
// stops fetching never counts as a caught-up follower holding back the
// high watermark.
func (c *Controller) tellReplicas(t *topic, p *partition, isNew bool, prevLeader int32) {
	if t.deletion != nil || p.state == nil {
		return
	}
	for _, r := range p.replicas {
		deposed := r == prevLeader && r != p.state.Leader
		if c.live(r) && (!c.shuttingDown(r) || deposed) {
			c.batch.addLeaderAndISR(r, p.tp, isNew)
		}
	}
	c.batch.addUpdateMetadata(p.tp)
}
