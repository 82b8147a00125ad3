package controller

// The simulator's elections: topics' unclean.leader.election.enable in
// /config/topics (set at creation, changed with a notification the driver
// turns into TopicConfigs), administrators' ElectLeaders of either type
// over random partitions (some unknown, some of topics being deleted), and
// the automatic rebalance's checks at random percentages; and, once
// everything is delivered, the rebalance's liveness.

import (
	"maps"
	"slices"

	"github.com/sluice-io/sluice/engine"
	"github.com/twmb/franz-go/pkg/kerr"
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
	n := len(s.writes)
	s.note("imbalance check at %d%%", pct)
	s.step(ImbalanceCheck{Percentage: pct})
	if len(s.writes) > n {
		s.stats["ImbalanceCheck moved"]++
	}
}

// takeAnswers takes the answers of a Ready.
func (s *sim) takeAnswers(rd Ready) {
	for _, a := range rd.Answers {
		s.answered(a)
	}
	for _, a := range rd.Elections {
		s.elected(a)
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

// rebalanced checks the rebalance's liveness once everything is
// delivered: after one more check at Kafka's default percentage, every
// broker that is the preferred leader of partitions led elsewhere beyond
// the percentage is out of the ISR of each of them.
func (s *sim) rebalanced() {
	const pct = 10
	s.step(ImbalanceCheck{Percentage: pct})
	s.quiesce()
	s.converged()
	c := s.ctl
	type share struct{ all, elsewhere int }
	shares := map[int32]*share{}
	var stuck []engine.Partition
	for _, name := range c.Topics() {
		a, _ := c.Topic(name)
		for p, replicas := range a.Replicas {
			tp := engine.Partition{Topic: name, Partition: int32(p)}
			st, _ := c.State(tp)
			sh := shares[replicas[0]]
			if sh == nil {
				sh = &share{}
				shares[replicas[0]] = sh
			}
			sh.all++
			if st.Leader != replicas[0] {
				sh.elsewhere++
				if slices.Contains(st.ISR, replicas[0]) {
					stuck = append(stuck, tp)
				}
			}
		}
	}
	for b, sh := range shares {
		if float64(sh.elsewhere)/float64(sh.all) <= pct/100.0 {
			continue
		}
		for _, tp := range stuck {
			if a, _ := c.Topic(tp.Topic); a.Replicas[tp.Partition][0] == b {
				st, _ := c.State(tp)
				s.fail("broker %d leads %d of its %d preferred partitions elsewhere; %v could move: %+v", b, sh.elsewhere, sh.all, tp, st)
			}
		}
	}
}
