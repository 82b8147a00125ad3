package controller

// The simulator's reassignments (reassign.go): administrators'
// AlterPartitionReassignments with random targets (some naming dead or
// duplicate brokers, or partitions that do not exist), replacements and
// cancellations, across every fault the simulator injects. Each request
// is answered once, with one result per partition named; once the faults
// stop and every follower caught up, no reassignment is left, ZooKeeper's
// assignments have no adding or removing replicas and equal the
// controller's, and a partition whose last request was answered without
// error (and not replaced since) has the target it asked for.

import (
	"maps"
	"slices"

	"github.com/sluice-io/sluice/engine"
	"github.com/twmb/franz-go/pkg/kerr"
)

type simReassign struct {
	ctl *Controller
	ev  AlterReassignments
}

// simTarget is the last target asked for a partition: by which request,
// and whether it was answered without error (ok).
type simTarget struct {
	id      uint64
	cancel  bool
	ok      bool
	replica []int32
}

// reassign sends an AlterReassignments of one to three partitions.
func (s *sim) reassign() {
	name, ok := s.anyTopic()
	if !ok {
		return
	}
	a := s.topics[name]
	s.nextReassign++
	ev := AlterReassignments{ID: s.nextReassign}
	for range 1 + s.r.IntN(3) {
		tp := engine.Partition{Topic: name, Partition: int32(s.r.IntN(len(a.Replicas)))}
		var target []int32
		switch n := s.r.IntN(20); {
		case n < 3:
			// cancel: nil target
		case n == 3:
			tp.Partition = int32(len(a.Replicas) + 1) // does not exist
			target = []int32{0}
		case n == 4:
			target = []int32{1, 1}
		default:
			target = s.replicas(1 + s.r.IntN(simBrokers))
		}
		ev.Targets = append(ev.Targets, ReassignTarget{Partition: tp, Replicas: target})
		s.lastTarget[tp] = simTarget{id: ev.ID, cancel: target == nil, replica: target}
	}
	s.reassigns[ev.ID] = simReassign{s.ctl, ev}
	s.note("AlterReassignments %d: %v", ev.ID, ev.Targets)
	s.step(ev)
	s.note("  ongoing now: %v", s.ctl.Reassignments())
}

// reassignAnswered checks an answer: asked, answered once, one result per
// partition in the order first named, each code one the request can get.
func (s *sim) reassignAnswered(a ReassignAnswer) {
	r, ok := s.reassigns[a.ID]
	if !ok {
		s.fail("answer to AlterReassignments %d, not asked or answered twice", a.ID)
	}
	delete(s.reassigns, a.ID)
	if a.ErrorCode != 0 {
		if a.ErrorCode != kerr.NotController.Code || len(a.Results) > 0 {
			s.fail("AlterReassignments %d answered %+v", a.ID, a)
		}
		s.stats["reassign NOT_CONTROLLER"]++
		return
	}
	var order []engine.Partition
	last := map[engine.Partition]ReassignTarget{}
	for _, tg := range r.ev.Targets {
		if _, ok := last[tg.Partition]; !ok {
			order = append(order, tg.Partition)
		}
		last[tg.Partition] = tg
	}
	if len(a.Results) != len(order) {
		s.fail("AlterReassignments %d: %d results for %d partitions", a.ID, len(a.Results), len(order))
	}
	for i, res := range a.Results {
		tp := order[i]
		if res.Partition != tp {
			s.fail("AlterReassignments %d: result %d for %v, asked %v", a.ID, i, res.Partition, tp)
		}
		tg := last[tp]
		dup := len(tg.Replicas) == 2 && tg.Replicas[0] == tg.Replicas[1]
		err := kerr.ErrorForCode(res.ErrorCode)
		name := "NONE"
		if err != nil {
			name = err.(*kerr.Error).Message
		}
		switch {
		case dup && res.ErrorCode != kerr.InvalidReplicaAssignment.Code:
			s.fail("AlterReassignments %d: duplicate replicas for %v answered %s", a.ID, tp, name)
		case res.ErrorCode == kerr.NoReassignmentInProgress.Code && tg.Replicas != nil,
			res.ErrorCode == 0 && dup:
			s.fail("AlterReassignments %d: %v (target %v) answered %s", a.ID, tp, tg.Replicas, name)
		}
		kind := "reassign "
		if tg.Replicas == nil {
			kind = "reassign cancel "
			if res.ErrorCode != 0 {
				kind = "reassign "
			}
		}
		s.stats[kind+name]++
		if lt := s.lastTarget[tp]; lt.id == a.ID && res.ErrorCode == 0 && r.ctl == s.ctl {
			lt.ok = true
			s.lastTarget[tp] = lt
		}
	}
}

// trackMoves records, before a SetAssignment is applied, the replicas it
// removes (movedAway), and counts completions.
func (s *sim) trackMoves(w Write) {
	cur, ok := s.topics[w.Topic]
	if !ok || cur.Version != w.Assignment.Version {
		return
	}
	if s.away == nil {
		s.away = map[epochKey]map[int32]bool{}
	}
	for p, old := range cur.Replicas {
		k := epochKey{w.Assignment.ID, int32(p)}
		if p >= len(w.Assignment.Replicas) {
			continue
		}
		for _, r := range old {
			if !slices.Contains(w.Assignment.Replicas[p], r) {
				if s.away[k] == nil {
					s.away[k] = map[int32]bool{}
				}
				s.away[k][r] = true
			}
		}
		if len(cur.Adding[int32(p)])+len(cur.Removing[int32(p)]) > 0 &&
			len(w.Assignment.Adding[int32(p)])+len(w.Assignment.Removing[int32(p)]) == 0 {
			s.stats["reassignment completed"]++
		}
	}
}

// movedAway reports whether a reassignment ever removed broker b from
// partition p of the topic of id.
func (s *sim) movedAway(id engine.TopicID, p int32, b int32) bool { return s.away[epochKey{id, p}][b] }

// reassignsDone checks, once everything settled, that no reassignment is
// left and that the last targets answered without error were reached.
func (s *sim) reassignsDone() {
	c := s.ctl
	// A partition whose state znode someone deleted may never grow its ISR
	// (its brokers hold a higher leader epoch than the controller that
	// created the znode again knows: converged leaves these out too), so
	// its move may never complete.
	if rs := slices.DeleteFunc(c.Reassignments(), func(r Reassignment) bool { return s.tampered[r.Partition] }); len(rs) > 0 {
		s.fail("reassignments left with every follower caught up: %+v", rs)
	}
	for id, r := range s.reassigns {
		if r.ctl == c {
			s.fail("AlterReassignments %d not answered", id)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.topics)) {
		za := s.topics[name]
		a, _ := c.Topic(name)
		for p := range za.Replicas {
			if tp := (engine.Partition{Topic: name, Partition: int32(p)}); !s.tampered[tp] && len(za.Adding[int32(p)])+len(za.Removing[int32(p)]) > 0 {
				s.fail("%v: ZooKeeper's assignment still reassigning: adding %v removing %v", tp, za.Adding[int32(p)], za.Removing[int32(p)])
			}
			if !slices.Equal(za.Replicas[p], a.Replicas[p]) {
				s.fail("topic %s partition %d: ZooKeeper's replicas %v, controller's %v", name, p, za.Replicas[p], a.Replicas[p])
			}
			tp := engine.Partition{Topic: name, Partition: int32(p)}
			if lt, ok := s.lastTarget[tp]; ok && lt.ok && !lt.cancel && !s.tampered[tp] && !slices.Equal(lt.replica, za.Replicas[p]) {
				s.fail("%v: last reassignment %d to %v answered, replicas %v", tp, lt.id, lt.replica, za.Replicas[p])
			}
		}
	}
}
