package reassign

// The reassignment planner of sluice cluster rebalance, sluice cluster
// decommission and sluice topic reassign --generate: pure functions from
// the current assignment of every partition and the brokers that may hold
// replicas to the partitions whose replicas change.
//
// What a plan guarantees, in order of precedence:
//
//  1. Every partition keeps its replication factor, holds no broker twice
//     and has no replica outside the target brokers (so a broker to
//     decommission, left out of them, ends with nothing).
//  2. Racks (when every target broker has one): no rack holds more than
//     ceil(RF/racks) replicas of a partition, so with as many racks as the
//     replication factor the replicas sit on distinct racks, as Kafka's
//     rack-aware placement puts them. An existing violation is repaired.
//  3. Balance: each broker's replica count is within 1 of every other's,
//     then, per topic, each broker's count of that topic's replicas is
//     within 1, where the constraints above allow.
//  4. Few moves: a replica moves only when the move improves the balance
//     (or rule 1 or 2 forces it); an already balanced cluster gives an
//     empty plan. A replica that moves keeps its position in the replica
//     list, and non-leading replicas are moved before leading ones.
//  5. Preferred leaders (first replicas) balanced the same way: each
//     broker leads within 1 of every other, then per topic; leadership is
//     moved first within partitions the plan changes anyway.
//
// The plan is deterministic: inputs are sorted first, every choice breaks
// ties by topic, partition and broker id, and no map is iterated.
//
// The search is greedy: each step takes the single move (or, when none
// helps, the swap of two replicas between two brokers, or for leaders a
// chain of leadership moves) that lowers the sum of squared counts most,
// the global sum before the per-topic one. The sums fall with every step,
// so it ends; with integer counts of a fixed total the sum is smallest
// exactly when all counts are within 1 of each other.

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Assignment is one partition's replicas, the first its preferred
// leader.
type Assignment struct {
	Topic     string
	Partition int32
	Replicas  []int32
}

// Broker is a broker that may hold replicas.
type Broker struct {
	ID   int32
	Rack string // "" when it has none
}

// Input is what the planner plans from.
type Input struct {
	Partitions []Assignment
	// Brokers may hold replicas. Replicas on any other broker move.
	Brokers []Broker
	// Drain are brokers to empty: left out of Brokers if listed there.
	Drain []int32
	// IgnoreRacks plans as if no broker had a rack.
	IgnoreRacks bool
}

// Move is one partition whose replicas change.
type Move struct {
	Topic     string
	Partition int32
	From, To  []int32 // replicas before and after, preferred leader first
}

// Adding returns the replicas in To and not in From, in To's order.
func (m Move) Adding() []int32 { return missingFrom(m.To, m.From) }

// Removing returns the replicas in From and not in To, in From's order.
func (m Move) Removing() []int32 { return missingFrom(m.From, m.To) }

// missingFrom returns the members of a not in b, in a's order.
func missingFrom(a, b []int32) []int32 {
	var out []int32
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// ErrNoPlan marks an input no plan can satisfy.
var ErrNoPlan = errors.New("no plan possible")

// planState is the planner's working copy. Brokers are indexes into
// brokers (sorted ids), topics into topics (sorted names).
type planState struct {
	brokers []int32
	rack    []int // rack index of each broker; nil when racks are ignored
	racks   int   // distinct racks; 0 when racks are ignored
	topics  []string
	parts   []planPart // sorted by topic, partition
	byTopic [][]int    // indexes into parts, per topic, in partition order

	count  []int   // replicas per broker
	tcount [][]int // [topic][broker] replicas
	lead   []int   // preferred leaders per broker
	tlead  [][]int // [topic][broker] preferred leaders
}

// planPart is one partition in the planner. reps[i] is the broker index
// holding replica i (-1 while it awaits a broker); leader is the position
// in reps of the preferred leader.
type planPart struct {
	topic     int
	partition int32
	orig      []int32
	reps      []int
	leader    int
}

// Plan plans the moves that satisfy the rules at the top of
// this file. The moves are sorted by topic and partition.
func Plan(in Input) ([]Move, error) {
	s, err := newPlanState(in)
	if err != nil {
		return nil, err
	}
	if err := s.placeForced(); err != nil {
		return nil, err
	}
	for s.moveReplica() || s.swapReplicas() {
	}
	s.leader()
	for s.moveLeader() || s.chainLeaders() {
	}
	var moves []Move
	for i := range s.parts {
		p := &s.parts[i]
		to := s.final(p)
		if !slices.Equal(to, p.orig) {
			moves = append(moves, Move{Topic: s.topics[p.topic], Partition: p.partition, From: slices.Clone(p.orig), To: to})
		}
	}
	return moves, nil
}

// newPlanState indexes the input and counts the replicas already on the
// target brokers.
func newPlanState(in Input) (*planState, error) {
	s := &planState{}
	brokers := slices.Clone(in.Brokers)
	brokers = slices.DeleteFunc(brokers, func(b Broker) bool { return slices.Contains(in.Drain, b.ID) })
	slices.SortFunc(brokers, func(a, b Broker) int { return cmp.Compare(a.ID, b.ID) })
	brokers = slices.CompactFunc(brokers, func(a, b Broker) bool { return a.ID == b.ID })
	if len(brokers) == 0 {
		return nil, fmt.Errorf("%w: no broker to place replicas on", ErrNoPlan)
	}
	index := map[int32]int{}
	racked := 0
	for i, b := range brokers {
		s.brokers = append(s.brokers, b.ID)
		index[b.ID] = i
		if b.Rack != "" {
			racked++
		}
	}
	switch {
	case in.IgnoreRacks || racked == 0:
	case racked < len(brokers):
		var none []int32
		for _, b := range brokers {
			if b.Rack == "" {
				none = append(none, b.ID)
			}
		}
		return nil, fmt.Errorf("%w: brokers %s have no rack and the others have one (plan without racks to go on)", ErrNoPlan, ints(none))
	default:
		rackIndex := map[string]int{}
		for _, b := range brokers {
			if _, ok := rackIndex[b.Rack]; !ok {
				rackIndex[b.Rack] = len(rackIndex)
			}
			s.rack = append(s.rack, rackIndex[b.Rack])
		}
		s.racks = len(rackIndex)
	}

	parts := slices.Clone(in.Partitions)
	slices.SortFunc(parts, func(a, b Assignment) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	n := len(s.brokers)
	s.count, s.lead = make([]int, n), make([]int, n)
	for _, pa := range parts {
		if len(s.topics) == 0 || s.topics[len(s.topics)-1] != pa.Topic {
			s.topics = append(s.topics, pa.Topic)
			s.byTopic = append(s.byTopic, nil)
			s.tcount = append(s.tcount, make([]int, n))
			s.tlead = append(s.tlead, make([]int, n))
		}
		t := len(s.topics) - 1
		if len(pa.Replicas) == 0 {
			return nil, fmt.Errorf("%w: %s-%d has no replicas", ErrNoPlan, pa.Topic, pa.Partition)
		}
		if len(pa.Replicas) > n {
			return nil, fmt.Errorf("%w: %s-%d has %d replicas but only %d brokers can hold them", ErrNoPlan, pa.Topic, pa.Partition, len(pa.Replicas), n)
		}
		if len(s.byTopic[t]) > 0 && s.parts[s.byTopic[t][len(s.byTopic[t])-1]].partition == pa.Partition {
			return nil, fmt.Errorf("%w: %s-%d given twice", ErrNoPlan, pa.Topic, pa.Partition)
		}
		p := planPart{topic: t, partition: pa.Partition, orig: slices.Clone(pa.Replicas), reps: make([]int, len(pa.Replicas))}
		for i, id := range pa.Replicas {
			b, ok := index[id]
			if !ok || slices.Contains(p.reps[:i], b) {
				b = -1 // off the target brokers, or a duplicate: moves
			}
			p.reps[i] = b
			if b >= 0 {
				s.count[b]++
				s.tcount[t][b]++
			}
		}
		s.byTopic[t] = append(s.byTopic[t], len(s.parts))
		s.parts = append(s.parts, p)
	}
	return s, nil
}

// rackLimit is the most replicas of p one rack may hold.
func (s *planState) rackLimit(p *planPart) int {
	return (len(p.reps) + s.racks - 1) / s.racks
}

// canHost is whether broker d may take replica slot of p (the slot's
// current broker leaving it).
func (s *planState) canHost(p *planPart, slot, d int) bool {
	onRack := 0
	for i, b := range p.reps {
		if i == slot || b < 0 {
			continue
		}
		if b == d {
			return false
		}
		if s.racks > 0 && s.rack[b] == s.rack[d] {
			onRack++
		}
	}
	return s.racks == 0 || onRack < s.rackLimit(p)
}

// setReplica puts slot of p on broker d, keeping the counts.
func (s *planState) setReplica(p *planPart, slot, d int) {
	if b := p.reps[slot]; b >= 0 {
		s.count[b]--
		s.tcount[p.topic][b]--
	}
	p.reps[slot] = d
	s.count[d]++
	s.tcount[p.topic][d]++
}

// placeForced frees the slots rack limits forbid, then gives every free
// slot (a replica off the target brokers) the least loaded broker that
// can host it.
func (s *planState) placeForced() error {
	for i := range s.parts {
		p := &s.parts[i]
		if s.racks > 0 {
			s.freeRackExcess(p)
		}
		for slot, b := range p.reps {
			if b >= 0 {
				continue
			}
			best := -1
			for d := range s.brokers {
				if !s.canHost(p, slot, d) {
					continue
				}
				if best < 0 || cmp.Or(cmp.Compare(s.count[d], s.count[best]), cmp.Compare(s.tcount[p.topic][d], s.tcount[p.topic][best])) < 0 {
					best = d
				}
			}
			if best < 0 {
				return fmt.Errorf("%w: no broker can take replica %d of %s-%d within the rack limits", ErrNoPlan, slot, s.topics[p.topic], p.partition)
			}
			s.setReplica(p, slot, best)
		}
	}
	return nil
}

// freeRackExcess frees the replicas of p beyond its rack limit on each
// rack: the followers first, the most loaded brokers first.
func (s *planState) freeRackExcess(p *planPart) {
	limit := s.rackLimit(p)
	for {
		onRack := make([]int, s.racks)
		for _, b := range p.reps {
			if b >= 0 {
				onRack[s.rack[b]]++
			}
		}
		victim := -1
		for slot, b := range p.reps {
			if b < 0 || onRack[s.rack[b]] <= limit {
				continue
			}
			if victim < 0 || s.betterVictim(p, slot, victim) {
				victim = slot
			}
		}
		if victim < 0 {
			return
		}
		b := p.reps[victim]
		s.count[b]--
		s.tcount[p.topic][b]--
		p.reps[victim] = -1
	}
}

// betterVictim is whether slot x of p should leave before slot y: a
// follower before the leader, then the more loaded broker.
func (s *planState) betterVictim(p *planPart, x, y int) bool {
	if (x > 0) != (y > 0) {
		return x > 0
	}
	return s.count[p.reps[x]] > s.count[p.reps[y]]
}

// gain is what a step changes in the sums of squared counts: global
// first, then per topic. Negative is better.
type gain struct{ global, topic int }

func (g gain) better(h gain) bool {
	return g.global < h.global || g.global == h.global && g.topic < h.topic
}

// moveDelta is the gain of moving one count from a to b in counts whose
// values at a and b are ca and cb.
func moveDelta(ca, cb int) int { return 2 * (cb - ca + 1) }

// moveCand is moving one count of topic t from broker a to broker b.
type moveCand struct {
	g       gain
	t, a, b int
}

// bestMove offers try the moves of one count (a replica or a
// leadership) that lower the sums of squares of count (per broker) and
// tcount (per topic and broker), best first, ties in topic and broker
// order, until try takes one; it returns whether one was taken. The best
// is almost always taken, so it is found in one pass, and the others are
// listed and sorted only if it is not.
func (s *planState) bestMove(count []int, tcount [][]int, try func(moveCand) bool) bool {
	each := func(f func(moveCand)) {
		for t := range s.topics {
			for a := range s.brokers {
				if tcount[t][a] == 0 {
					continue
				}
				for b := range s.brokers {
					g := gain{moveDelta(count[a], count[b]), moveDelta(tcount[t][a], tcount[t][b])}
					if a != b && g.better(gain{}) {
						f(moveCand{g, t, a, b})
					}
				}
			}
		}
	}
	var best moveCand
	found := false
	each(func(c moveCand) {
		if !found || c.g.better(best.g) {
			best, found = c, true
		}
	})
	if !found {
		return false
	}
	if try(best) {
		return true
	}
	var cands []moveCand
	each(func(c moveCand) { cands = append(cands, c) })
	slices.SortStableFunc(cands, func(x, y moveCand) int {
		return cmp.Or(cmp.Compare(x.g.global, y.g.global), cmp.Compare(x.g.topic, y.g.topic))
	})
	return slices.ContainsFunc(cands, func(c moveCand) bool { return c != best && try(c) })
}

// moveReplica makes the single replica move that lowers the sums most,
// if any does.
func (s *planState) moveReplica() bool {
	return s.bestMove(s.count, s.tcount, func(c moveCand) bool {
		p, slot := s.movable(c.t, c.a, c.b)
		if p != nil {
			s.setReplica(p, slot, c.b)
		}
		return p != nil
	})
}

// swapReplicas, when no single move helps, swaps a replica of one topic
// on broker a with one of another topic on broker b, if that evens the
// topics out (the global counts stay).
func (s *planState) swapReplicas() bool {
	type cand struct {
		g          gain
		t, u, a, b int
	}
	var cands []cand
	for a := range s.brokers {
		for b := range s.brokers {
			if a == b {
				continue
			}
			for t := range s.topics {
				if s.tcount[t][a] == 0 {
					continue
				}
				dt := moveDelta(s.tcount[t][a], s.tcount[t][b])
				for u := range s.topics {
					if u == t || s.tcount[u][b] == 0 {
						continue
					}
					if g := dt + moveDelta(s.tcount[u][b], s.tcount[u][a]); g < 0 {
						cands = append(cands, cand{gain{0, g}, t, u, a, b})
					}
				}
			}
		}
	}
	slices.SortStableFunc(cands, func(x, y cand) int { return cmp.Compare(x.g.topic, y.g.topic) })
	for _, c := range cands {
		p, ps := s.movable(c.t, c.a, c.b)
		q, qs := s.movable(c.u, c.b, c.a)
		if p != nil && q != nil {
			s.setReplica(p, ps, c.b)
			s.setReplica(q, qs, c.a)
			return true
		}
	}
	return false
}

// movable finds a replica of topic t on broker a that broker b may take:
// a follower before a leader, a partition the plan already changes
// before an untouched one, then the lowest partition.
func (s *planState) movable(t, a, b int) (*planPart, int) {
	var best *planPart
	bestSlot, bestRank := -1, 0
	for _, i := range s.byTopic[t] {
		p := &s.parts[i]
		slot := slices.Index(p.reps, a)
		if slot < 0 || !s.canHost(p, slot, b) {
			continue
		}
		rank := 0
		if slot == 0 {
			rank += 2
		}
		if !s.changed(p) {
			rank++
		}
		if best == nil || rank < bestRank {
			best, bestSlot, bestRank = p, slot, rank
		}
	}
	return best, bestSlot
}

// changed is whether p's replica set differs from its original one.
func (s *planState) changed(p *planPart) bool {
	for i, b := range p.reps {
		if s.brokers[b] != p.orig[i] {
			return true
		}
	}
	return false
}

// leader sets each partition's preferred leader to its first replica and
// counts the leaders.
func (s *planState) leader() {
	for i := range s.parts {
		p := &s.parts[i]
		p.leader = 0
		s.lead[p.reps[0]]++
		s.tlead[p.topic][p.reps[0]]++
	}
}

// setLeader makes position pos of p its preferred leader.
func (s *planState) setLeader(p *planPart, pos int) {
	a, b := p.reps[p.leader], p.reps[pos]
	s.lead[a]--
	s.tlead[p.topic][a]--
	s.lead[b]++
	s.tlead[p.topic][b]++
	p.leader = pos
}

// moveLeader makes the single leadership move that lowers the leader sums
// most, if any does.
func (s *planState) moveLeader() bool {
	return s.bestMove(s.lead, s.tlead, func(c moveCand) bool {
		p, pos := s.ledBy(c.t, c.a, c.b)
		if p != nil {
			s.setLeader(p, pos)
		}
		return p != nil
	})
}

// ledBy finds a partition of topic t (any topic if t < 0) led by broker a
// with a replica on broker b: one the plan changes anyway first, then the
// lowest. It returns the partition and b's position in it.
func (s *planState) ledBy(t, a, b int) (*planPart, int) {
	var best *planPart
	bestPos := -1
	try := func(p *planPart) {
		if p.reps[p.leader] != a {
			return
		}
		pos := slices.Index(p.reps, b)
		if pos < 0 {
			return
		}
		if best == nil || !s.reordered(best) && s.reordered(p) {
			best, bestPos = p, pos
		}
	}
	if t >= 0 {
		for _, i := range s.byTopic[t] {
			try(&s.parts[i])
		}
	} else {
		for i := range s.parts {
			try(&s.parts[i])
		}
	}
	return best, bestPos
}

// reordered is whether p changes at all: replicas or preferred leader.
func (s *planState) reordered(p *planPart) bool {
	return p.leader != 0 || s.changed(p)
}

// chainLeaders, when no single leadership move helps, moves leadership
// along the shortest chain a → … → z (each step a partition led by one
// broker with a replica on the next) from a broker to one leading at
// least two fewer: the brokers between keep their counts.
func (s *planState) chainLeaders() bool {
	n := len(s.brokers)
	sources := make([]int, n)
	for i := range sources {
		sources[i] = i
	}
	slices.SortStableFunc(sources, func(x, y int) int { return cmp.Compare(s.lead[y], s.lead[x]) })
	for _, a := range sources {
		prev := make([]int, n)
		for i := range prev {
			prev[i] = -1
		}
		prev[a] = a
		queue := []int{a}
		for len(queue) > 0 {
			x := queue[0]
			queue = queue[1:]
			if s.lead[x] <= s.lead[a]-2 {
				var path []int
				for y := x; y != a; y = prev[y] {
					path = append(path, y)
				}
				path = append(path, a)
				slices.Reverse(path)
				for i := 0; i+1 < len(path); i++ {
					p, pos := s.ledBy(-1, path[i], path[i+1])
					s.setLeader(p, pos)
				}
				return true
			}
			for y := range n {
				if prev[y] < 0 {
					if p, _ := s.ledBy(-1, x, y); p != nil {
						prev[y] = x
						queue = append(queue, y)
					}
				}
			}
		}
	}
	return false
}

// final is p's replica list as broker ids: the preferred leader first,
// the others in their order.
func (s *planState) final(p *planPart) []int32 {
	out := []int32{s.brokers[p.reps[p.leader]]}
	for i, b := range p.reps {
		if i != p.leader {
			out = append(out, s.brokers[b])
		}
	}
	return out
}

// Counts counts, per broker, the replicas and preferred leaders
// (first replicas) of an assignment.
func Counts(parts []Assignment) (replicas, leaders map[int32]int) {
	replicas, leaders = map[int32]int{}, map[int32]int{}
	for _, p := range parts {
		for _, r := range p.Replicas {
			replicas[r]++
		}
		if len(p.Replicas) > 0 {
			leaders[p.Replicas[0]]++
		}
	}
	return replicas, leaders
}

// Apply returns parts with the moves' replica lists in place.
func Apply(parts []Assignment, moves []Move) []Assignment {
	type key struct {
		topic     string
		partition int32
	}
	to := map[key][]int32{}
	for _, m := range moves {
		to[key{m.Topic, m.Partition}] = m.To
	}
	out := make([]Assignment, len(parts))
	for i, p := range parts {
		out[i] = p
		if r, ok := to[key{p.Topic, p.Partition}]; ok {
			out[i].Replicas = r
		}
	}
	return out
}

// ints is ids comma-separated, for messages.
func ints(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}
