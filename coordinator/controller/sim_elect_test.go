package controller

// The simulator's elections: topics' unclean.leader.election.enable in
// /config/topics (set at creation, changed with a notification the driver
// turns into TopicConfigs), administrators' ElectLeaders of either type
// over random partitions (some unknown, some of topics being deleted), and
// the automatic rebalance's checks at random percentages; and, once
// everything is delivered, the elections' liveness.

import (
	"maps"
	"slices"

	"github.com/sluice-io/sluice/engine"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// simElection is an ElectLeaders sent and not yet answered.
type simElection struct {
	ctl *Controller
	ev  ElectLeaders
}

// assignment is a topic's assignment as the driver reads it, with its
// config's unclean election setting.
func (s *sim) assignment(name string) TopicAssignment {
	a := cloneAssignment(s.topics[name])
	a.UncleanLeaderElection = s.unclean[name]
	return a
}

// configChange flips a topic's unclean election setting, as AlterConfigs
// does: the config znode, then a change notification.
func (s *sim) configChange() {
	name, ok := s.anyTopic()
	if !ok {
		return
	}
	s.unclean[name] = !s.unclean[name]
	s.configsChanged[name] = true
	s.stats["TopicConfigs"]++
	s.note("topic %s unclean.leader.election.enable=%v", name, s.unclean[name])
}

// electLeaders sends the controller an ElectLeaders for a few random
// partitions, sometimes unknown ones.
func (s *sim) electLeaders() {
	// Often of the partitions led elsewhere than by their first replica,
	// and of those a preferred election can move (the first replica live
	// and in the ISR), of topics not being deleted.
	var tps, misled, movable []engine.Partition
	for _, name := range slices.Sorted(maps.Keys(s.topics)) {
		for p, replicas := range s.topics[name].Replicas {
			tp := engine.Partition{Topic: name, Partition: int32(p)}
			tps = append(tps, tp)
			if st, ok := s.states[tp]; ok && st.Leader != replicas[0] && !s.markers[name] {
				misled = append(misled, tp)
				if _, live := s.regs[replicas[0]]; live && slices.Contains(st.ISR, replicas[0]) {
					movable = append(movable, tp)
				}
			}
		}
	}
	switch n := s.r.IntN(3); {
	case n == 0 && len(movable) > 0:
		tps = movable
	case n == 1 && len(misled) > 0:
		tps = misled
	}
	ev := ElectLeaders{Type: PreferredElection}
	if s.r.IntN(3) == 0 {
		ev.Type = UncleanElection
	}
	for range 1 + s.r.IntN(4) {
		if len(tps) == 0 || s.r.IntN(12) == 0 {
			ev.Partitions = append(ev.Partitions, engine.Partition{Topic: "ghost", Partition: int32(s.r.IntN(2))})
			continue
		}
		ev.Partitions = append(ev.Partitions, tps[s.r.IntN(len(tps))]) // maybe twice
	}
	s.nextElect++
	ev.ID = s.nextElect
	s.elections[ev.ID] = simElection{s.ctl, ev}
	s.note("ElectLeaders %d %v %v", ev.ID, ev.Type, ev.Partitions)
	s.step(ev)
}

// imbalanceCheck is a tick of the automatic rebalance.
func (s *sim) imbalanceCheck() {
	pct := []int{0, 10, 25}[s.r.IntN(3)]
	s.note("imbalance check at %d%%", pct)
	s.step(ImbalanceCheck{Percentage: pct})
}

// countElection counts a write of an election that succeeded: of the
// rebalance's, or of an ElectLeaders.
func (s *sim) countElection(sw simWrite, res WriteResult) {
	f := sw.ctl.inflight[sw.w.key()]
	switch {
	case res.Err != nil || f == nil || f.elect == nil:
	case f.elect.call == nil:
		s.stats["ImbalanceCheck moved"]++
	default:
		s.stats["ElectLeaders written"]++
	}
}

// takeAnswers takes the answers of a Ready.
func (s *sim) takeAnswers(rd Ready) {
	for _, a := range rd.Answers {
		s.answered(a)
	}
	for _, a := range rd.ShutdownAnswers {
		s.shutdownAnswered(a)
	}
	for _, a := range rd.Elections {
		s.elected(a)
	}
	for _, a := range rd.Reassignments {
		s.reassignAnswered(a)
	}
}

// elected takes an ElectLeaders answer (the checker checked it against
// the controller's view).
func (s *sim) elected(a ElectionAnswer) {
	e, ok := s.elections[a.ID]
	if !ok {
		s.fail("answer to ElectLeaders %d, not asked or answered twice", a.ID)
	}
	delete(s.elections, a.ID)
	for _, r := range a.Results {
		outcome := "ok"
		if r.ErrorCode != 0 {
			outcome = kerr.ErrorForCode(r.ErrorCode).(*kerr.Error).Message
		}
		s.stats["ElectLeaders "+e.ev.Type.String()+" "+outcome]++
	}
	s.note("ElectLeaders %d answered %+v", a.ID, a.Results)
}

// settled checks the elections' liveness once everything is delivered:
// every leader takes every live replica into its ISR (its followers caught
// up), then an ElectLeaders PREFERRED of every partition (odd seeds) or
// an imbalance check at 0 % (even seeds), then the other, leave every
// partition led by its first replica.
func (s *sim) settled() {
	for range 2 {
		s.expandAll()
		s.quiesce()
	}
	var all []engine.Partition
	for _, name := range slices.Sorted(maps.Keys(s.topics)) {
		for p := range s.topics[name].Replicas {
			all = append(all, engine.Partition{Topic: name, Partition: int32(p)})
		}
	}
	elect := func() {
		s.nextElect++
		ev := ElectLeaders{ID: s.nextElect, Type: PreferredElection, Partitions: all}
		s.elections[ev.ID] = simElection{s.ctl, ev}
		s.step(ev)
	}
	check := func() { s.step(ImbalanceCheck{Percentage: 0}) }
	first, second := elect, check
	if s.seed%2 == 0 {
		first, second = check, elect
	}
	first()
	s.quiesce()
	second()
	s.quiesce()
	s.converged()
	s.reassignsDone()
	c := s.ctl
	for _, tp := range all {
		a, _ := c.Topic(tp.Topic)
		st, _ := c.State(tp)
		if preferred := a.Replicas[tp.Partition][0]; st.Leader != preferred && slices.Contains(st.ISR, preferred) && !s.tampered[tp] {
			s.fail("%v led by %d, its preferred replica %d in the ISR %v", tp, st.Leader, preferred, st.ISR)
		}
	}
}

// expandAll has every live leader ask for every live replica in its ISR.
func (s *sim) expandAll() {
	for _, b := range s.brokers {
		for _, tp := range slices.SortedFunc(maps.Keys(b.leaders), cmpPartition) {
			ps := b.leaders[tp]
			out := s.liveOut(ps)
			if ps.Leader != b.id || len(out) == 0 {
				continue
			}
			req := kmsg.NewPtrAlterPartitionRequest()
			req.Version, req.BrokerID, req.BrokerEpoch = 2, b.id, b.epoch
			isr := append(slices.Clone(ps.ISR), out...)
			rp := kmsg.AlterPartitionRequestTopicPartition{Partition: tp.Partition, LeaderEpoch: ps.LeaderEpoch, PartitionEpoch: ps.ZKVersion, NewISR: isr}
			req.Topics = []kmsg.AlterPartitionRequestTopic{{TopicID: b.logs[tp], Partitions: []kmsg.AlterPartitionRequestTopicPartition{rp}}}
			s.nextAlter++
			s.alters[s.nextAlter] = simAlter{broker: b.id, epoch: b.epoch, tp: tp, isr: isr, kind: "expand"}
			s.step(AlterPartition{ID: s.nextAlter, Request: req})
		}
	}
}
