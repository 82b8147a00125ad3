package controller

// Elections the controller is asked for, beside the ones broker and topic
// changes call for: an administrator's ElectLeaders (key 43), preferred or
// unclean (Kafka 3.9's KafkaController.processReplicaLeaderElection, with
// Election.leaderForPreferredReplica and leaderForOffline), the automatic
// rebalance's preferred elections (rebalance.go), and a change of a
// topic's unclean.leader.election.enable (processTopicUncleanLeader-
// ElectionEnable), which decides its partitions again.
//
// Each partition of a request is checked against the committed state once
// the partition is quiet (no state write decided or in flight), as if the
// controller had handled the request after that write, as Kafka's
// controller handles its events one at a time:
//
//   - a partition the controller does not know: UNKNOWN_TOPIC_OR_PARTITION;
//     of a topic being deleted: INVALID_TOPIC_EXCEPTION ("The topic is being
//     deleted").
//   - PREFERRED, the first replica leading already: ELECTION_NOT_NEEDED;
//     UNCLEAN, a live leader: ELECTION_NOT_NEEDED.
//   - PREFERRED: the first replica leads if it is live and in the ISR (the
//     ISR as it is, the leader epoch bumped, the recovery state kept);
//     otherwise PREFERRED_LEADER_NOT_AVAILABLE.
//   - UNCLEAN: Kafka's offline election with unclean election allowed
//     whatever the topic's configuration (KIP-460): the first live ISR
//     member in assignment order, else the first live replica, with the ISR
//     that replica alone and the state RECOVERING (KIP-704); with no live
//     replica, ELIGIBLE_LEADERS_NOT_AVAILABLE.
//
// An election's write is answered once its result is in: the leader
// elected, UNKNOWN_SERVER_ERROR for a failed write, or, when the znode
// changed meanwhile, a decision made again on the state read back (Kafka
// retries on BADVERSION). The brokers are told as for any election
// (LeaderAndIsr to the replicas, UpdateMetadata to all). A controller
// that resigns answers every partition it holds NOT_CONTROLLER, as does
// one not yet loaded.
//
// Differences from Kafka: a partition that never had a state (no replica
// was ever live) is answered PREFERRED_LEADER_NOT_AVAILABLE or
// ELIGIBLE_LEADERS_NOT_AVAILABLE, where Kafka's controller fails on it.
// The request names its partitions: the broker expands a null list into
// the partitions of its metadata, as Kafka's handleElectLeaders does.

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/engine"
)

// ElectionType is ElectLeaders' election type, with Kafka's values.
type ElectionType int8

const (
	// PreferredElection moves leadership to the first replica.
	PreferredElection ElectionType = 0
	// UncleanElection elects a leader for partitions without a live one,
	// from outside the ISR if need be.
	UncleanElection ElectionType = 1
)

func (e ElectionType) String() string {
	if e == UncleanElection {
		return "UNCLEAN"
	}
	return "PREFERRED"
}

// ElectLeaders is an administrator's ElectLeaders request as it reached
// the controller: an event of Step, answered by exactly one ElectionAnswer
// in a later Ready.
type ElectLeaders struct {
	// ID names the request in its answer: the driver's own numbering.
	ID   uint64
	Type ElectionType
	// Partitions are the partitions to elect; one named twice is answered
	// once.
	Partitions []engine.Partition
}

// ElectionResult is the outcome of one partition's election.
type ElectionResult struct {
	Partition engine.Partition
	// ErrorCode is 0 when Leader was elected (the broker then waits for
	// its metadata to show it, as Kafka's DelayedElectLeader), or Kafka's
	// error for the partition.
	ErrorCode int16
	// Message is Kafka's message for the error; nil for none.
	Message *string
	// Leader is the leader elected.
	Leader int32
}

// ElectionAnswer is the answer to the ElectLeaders of ID: one result per
// partition it named, in its order.
type ElectionAnswer struct {
	ID      uint64
	Results []ElectionResult
}

// TopicConfigs carries the effective unclean.leader.election.enable of
// topics whose configuration changed, or of every topic when the broker
// default changed, as the driver read them. Every partition of a topic
// whose value changed is decided again: one offline for want of a live ISR
// member is led by an out-of-sync replica once its topic allows it.
type TopicConfigs struct {
	UncleanLeaderElection map[string]bool
}

func (ElectLeaders) event() {}
func (TopicConfigs) event() {}

// electCall is a request being answered.
type electCall struct {
	id       uint64
	results  []ElectionResult
	awaiting int
}

// electItem is one partition's election, waiting to be decided or for its
// write. call is nil for an election of the automatic rebalance, which
// nobody waits for.
type electItem struct {
	call *electCall
	slot int // in call.results
	typ  ElectionType
}

var (
	electionNotNeeded     = str("Leader election not needed for topic partition.")
	topicBeingDeleted     = str("The topic is being deleted")
	partitionDoesNotExist = str("The partition does not exist.")
)

func str(s string) *string { return &s }

// notControllerElection answers every partition of ev NOT_CONTROLLER.
func notControllerElection(ev ElectLeaders) ElectionAnswer {
	return ElectionAnswer{ID: ev.ID, Results: RefuseElection(ev.Partitions, kerr.NotController.Code)}
}

// RefuseElection returns results answering each of partitions (once)
// with code: for drivers that answer without asking the core (not the
// controller, NOT_CONTROLLER).
func RefuseElection(partitions []engine.Partition, code int16) []ElectionResult {
	tps := dedupe(partitions)
	out := make([]ElectionResult, len(tps))
	for i, tp := range tps {
		out[i] = ElectionResult{Partition: tp, ErrorCode: code, Leader: NoLeader}
	}
	return out
}

func dedupe(tps []engine.Partition) []engine.Partition {
	seen := make(map[engine.Partition]bool, len(tps))
	out := make([]engine.Partition, 0, len(tps))
	for _, tp := range tps {
		if !seen[tp] {
			seen[tp] = true
			out = append(out, tp)
		}
	}
	return out
}

// electLeaders takes a request: partitions unknown or being deleted are
// answered at once, the others queued behind their partition's write and
// decided when it is quiet.
func (c *Controller) electLeaders(ev ElectLeaders) {
	tps := dedupe(ev.Partitions)
	call := &electCall{id: ev.ID, results: make([]ElectionResult, len(tps))}
	var queued []*partition
	for i, tp := range tps {
		call.results[i] = ElectionResult{Partition: tp, Leader: NoLeader}
		p := c.partition(tp)
		switch {
		case p == nil:
			call.results[i].ErrorCode, call.results[i].Message = kerr.UnknownTopicOrPartition.Code, partitionDoesNotExist
		case c.topics[tp.Topic].deletion != nil:
			call.results[i].ErrorCode, call.results[i].Message = kerr.InvalidTopicException.Code, topicBeingDeleted
		default:
			c.elections[tp] = append(c.elections[tp], &electItem{call: call, slot: i, typ: ev.Type})
			call.awaiting++
			queued = append(queued, p)
		}
	}
	if call.awaiting == 0 {
		c.elected = append(c.elected, ElectionAnswer{ID: call.id, Results: call.results})
		return
	}
	for _, p := range queued {
		c.serveElections(c.topics[p.tp.Topic], p)
	}
}

// serveElections decides p's queued elections, in order, while p is
// quiet: the first that calls for a write becomes p's pending write, and
// those after it wait for its result. Those of a topic being deleted are
// answered INVALID_TOPIC_EXCEPTION.
func (c *Controller) serveElections(t *topic, p *partition) {
	if len(c.elections) == 0 {
		return // the common case: no partition's lookup
	}
	for len(c.elections[p.tp]) > 0 {
		if t.deletion == nil && !c.sendable(p.tp) {
			return
		}
		it := pop(c.elections, p.tp)
		if t.deletion != nil {
			c.answerElection(it, kerr.InvalidTopicException.Code, topicBeingDeleted, NoLeader)
			continue
		}
		c.decideElection(p, it)
	}
}

// decideElection answers it from p's committed state, or makes its write
// p's pending one.
func (c *Controller) decideElection(p *partition, it *electItem) {
	s := p.state
	strategy := "PreferredReplicaPartitionLeaderElectionStrategy"
	notAvailable := kerr.PreferredLeaderNotAvailable.Code
	if it.typ == UncleanElection {
		strategy = "OfflinePartitionLeaderElectionStrategy(true)"
		notAvailable = kerr.EligibleLeadersNotAvailable.Code
	}
	failed := func() {
		c.answerElection(it, notAvailable, str(fmt.Sprintf("Failed to elect leader for partition %s-%d under strategy %s", p.tp.Topic, p.tp.Partition, strategy)), NoLeader)
	}
	if s == nil {
		failed()
		return
	}
	live := c.liveFor(p)
	var w Write
	switch it.typ {
	case PreferredElection:
		preferred := p.replicas[0]
		if s.Leader == preferred {
			c.answerElection(it, kerr.ElectionNotNeeded.Code, electionNotNeeded, NoLeader)
			return
		}
		if !live(preferred) || !slices.Contains(s.ISR, preferred) {
			failed()
			return
		}
		w = Write{Op: UpdateState, Topic: p.tp.Topic, Partition: p.tp.Partition, State: PartitionState{
			Leader:              preferred,
			LeaderEpoch:         s.LeaderEpoch + 1,
			ISR:                 slices.Clone(s.ISR),
			ControllerEpoch:     c.epoch,
			LeaderRecoveryState: s.LeaderRecoveryState,
			PartitionEpoch:      s.PartitionEpoch,
		}}
	default:
		if s.Leader != NoLeader && c.live(s.Leader) {
			if _, fenced := p.fenced[s.Leader]; !fenced {
				c.answerElection(it, kerr.ElectionNotNeeded.Code, electionNotNeeded, NoLeader)
				return
			}
		}
		var ok bool
		w, ok = c.decide(p, true)
		if !ok || w.State.Leader == NoLeader {
			failed()
			return
		}
	}
	c.pending[p.tp] = &flight{w: w, fences: maps.Clone(p.fenced), elect: it}
}

// electResult answers the election whose write had result r, or queues it
// to be decided again (a conflict: on the state read back).
func (c *Controller) electResult(it *electItem, r WriteResult) {
	tp := r.Write.key().tp
	switch {
	case r.Err == nil:
		c.answerElection(it, 0, nil, r.Write.State.Leader)
	case errors.Is(r.Err, ErrConflict):
		c.elections[tp] = append([]*electItem{it}, c.elections[tp]...)
	default:
		c.answerElection(it, kerr.UnknownServerError.Code, str(r.Err.Error()), NoLeader)
	}
}

// answerElection answers one partition of a request; the request is
// answered once all its partitions are. An automatic election has no one
// to answer.
func (c *Controller) answerElection(it *electItem, code int16, msg *string, leader int32) {
	if it.call == nil {
		return
	}
	res := &it.call.results[it.slot]
	res.ErrorCode, res.Message, res.Leader = code, msg, leader
	it.call.awaiting--
	if it.call.awaiting == 0 {
		c.elected = append(c.elected, ElectionAnswer{ID: it.call.id, Results: it.call.results})
	}
}

// electionsNotController answers every request still held NOT_CONTROLLER
// (its partitions answered already keep their results), when the
// controller resigns.
func (c *Controller) electionsNotController() {
	var items []*electItem
	take := func(it *electItem) {
		if it != nil && it.call != nil {
			items = append(items, it)
		}
	}
	for _, q := range c.elections {
		for _, it := range q {
			take(it)
		}
	}
	for _, f := range c.pending {
		take(f.elect)
	}
	for _, f := range c.inflight {
		take(f.elect)
	}
	// Answered in request order, so that a Ready's answers do not depend
	// on map order.
	slices.SortFunc(items, func(a, b *electItem) int {
		if a.call.id != b.call.id {
			return cmp.Compare(a.call.id, b.call.id)
		}
		return a.slot - b.slot
	})
	for _, it := range items {
		c.answerElection(it, kerr.NotController.Code, nil, NoLeader)
	}
	c.elections = map[engine.Partition][]*electItem{}
}

// topicConfigs takes changed topic configurations: a topic whose unclean
// election setting changed has its partitions decided again (one of a
// topic being re-created takes it with its assignment).
func (c *Controller) topicConfigs(ev TopicConfigs) {
	for _, name := range slices.Sorted(maps.Keys(ev.UncleanLeaderElection)) {
		on := ev.UncleanLeaderElection[name]
		t := c.topics[name]
		if t == nil {
			continue
		}
		if t.recreated != nil {
			t.recreated.UncleanLeaderElection = on
		}
		if t.unclean == on {
			continue
		}
		t.unclean = on
		for _, p := range t.parts {
			c.reconcile(t, p)
		}
	}
}
