package controller

// The checker's invariants of elections (doc.go): an unclean election (a
// leader from outside the committed ISR) is the one state write whose
// leader may come from outside the ISR, and only when the controller was
// allowed it and no ISR member is live; any other election keeps the
// recovery state; ElectLeaders answers say what the committed states
// were.

import (
	"fmt"
	"slices"

	"github.com/sluice-io/sluice/engine"
	"github.com/twmb/franz-go/pkg/kerr"
)

// view is what the checker knows of one controller's inputs and outputs.
type view struct {
	// unclean is each topic's unclean.leader.election.enable as the events
	// gave it to the controller.
	unclean map[string]bool
	// asked are the partitions an ElectLeaders UNCLEAN named.
	asked map[engine.Partition]bool
	// leaders are the leaders each partition's committed state has had,
	// in order, as far as this controller saw.
	leaders map[engine.Partition][]int32
	// requests are the ElectLeaders stepped and not answered, with, per
	// partition, how many leaders it had had before.
	requests map[uint64]electRequest
}

type electRequest struct {
	ev    ElectLeaders
	since map[engine.Partition]int
	// preferred is each known partition's first replica when asked;
	// firsts every first replica it has had since (reassignments change
	// it), of which the election may have chosen any.
	preferred map[engine.Partition]int32
	firsts    map[engine.Partition][]int32
}

// sawFirsts records the first replicas of the partitions of c's
// unanswered ElectLeaders, after a step.
func (k *checker) sawFirsts(c *Controller) {
	for _, r := range k.view(c).requests {
		for tp := range r.preferred {
			if a, ok := c.Topic(tp.Topic); ok && int(tp.Partition) < len(a.Replicas) {
				if f := a.Replicas[tp.Partition][0]; !slices.Contains(r.firsts[tp], f) {
					r.firsts[tp] = append(r.firsts[tp], f)
				}
			}
		}
	}
}

func (k *checker) view(c *Controller) *view {
	v := k.views[c]
	if v == nil {
		v = &view{unclean: map[string]bool{}, asked: map[engine.Partition]bool{},
			leaders: map[engine.Partition][]int32{}, requests: map[uint64]electRequest{}}
		k.views[c] = v
	}
	return v
}

func (v *view) led(tp engine.Partition, leader int32) { v.leaders[tp] = append(v.leaders[tp], leader) }

// stepping records what ev, about to be stepped into c, tells it.
func (k *checker) stepping(c *Controller, ev Event) {
	v := k.view(c)
	switch ev := ev.(type) {
	case Load:
		for _, a := range ev.Topics {
			v.unclean[a.Name] = a.UncleanLeaderElection
		}
		for tp, s := range ev.States {
			v.led(tp, s.Leader)
		}
	case TopicsChanged:
		for _, a := range ev.Topics {
			// The controller takes the setting of a topic it does not know,
			// or of one re-created under the same name.
			if known, ok := c.Topic(a.Name); !ok || a.ID != (engine.TopicID{}) && a.ID != known.ID {
				v.unclean[a.Name] = a.UncleanLeaderElection
			}
		}
	case TopicConfigs:
		for name, on := range ev.UncleanLeaderElection {
			v.unclean[name] = on
		}
	case ElectLeaders:
		r := electRequest{ev: ev, since: map[engine.Partition]int{}, preferred: map[engine.Partition]int32{}, firsts: map[engine.Partition][]int32{}}
		for _, tp := range ev.Partitions {
			if ev.Type == UncleanElection {
				v.asked[tp] = true
			}
			r.since[tp] = max(0, len(v.leaders[tp])-1)
			if a, ok := c.Topic(tp.Topic); ok && int(tp.Partition) < len(a.Replicas) && tp.Partition >= 0 {
				r.preferred[tp] = a.Replicas[tp.Partition][0]
				r.firsts[tp] = []int32{a.Replicas[tp.Partition][0]}
			}
		}
		v.requests[ev.ID] = r
	}
}

// checkElected checks an election's UpdateState w against the committed
// state cur: a leader from outside the committed ISR is an unclean
// election, which the write must say, which the controller must have been
// allowed (its topic's setting or an ElectLeaders UNCLEAN), with no member
// of the committed ISR live, the ISR the new leader alone and the state
// RECOVERING; any other election keeps the recovery state.
func (k *checker) checkElected(c *Controller, w Write, cur PartitionState) error {
	tp := engine.Partition{Topic: w.Topic, Partition: w.Partition}
	s := w.State
	clean := s.Leader == NoLeader || slices.Contains(cur.ISR, s.Leader)
	if w.Unclean == clean {
		return fmt.Errorf("Unclean %v for leader %d with committed ISR %v", w.Unclean, s.Leader, cur.ISR)
	}
	if clean {
		if s.LeaderRecoveryState != cur.LeaderRecoveryState {
			return fmt.Errorf("recovery state %d changed to %d by a clean election", cur.LeaderRecoveryState, s.LeaderRecoveryState)
		}
		return nil
	}
	v := k.view(c)
	if !v.unclean[w.Topic] && !v.asked[tp] {
		return fmt.Errorf("unclean election of %d (ISR %v) not allowed for the topic", s.Leader, cur.ISR)
	}
	// The bounced brokers the controller holds as dead until a write
	// succeeds (partition.fenced) are the core's; the checker reads them.
	fenced := c.partition(tp).fenced
	for _, r := range cur.ISR {
		if _, f := fenced[r]; c.Online(r, tp) && !f {
			return fmt.Errorf("unclean election of %d with ISR member %d live", s.Leader, r)
		}
	}
	if !slices.Equal(s.ISR, []int32{s.Leader}) {
		return fmt.Errorf("unclean election of %d with ISR %v, not the leader alone", s.Leader, s.ISR)
	}
	if s.LeaderRecoveryState != Recovering {
		return fmt.Errorf("unclean election of %d with recovery state %d, not RECOVERING", s.Leader, s.LeaderRecoveryState)
	}
	return nil
}

// checkElection checks an ElectLeaders answer: one result per partition
// asked, in order; a leader reported elected, or not needed for a
// preferred election, is one the partition's committed state has had
// since the request (the first replica for a preferred election); an
// unclean election not needed had a live leader.
func (k *checker) checkElection(c *Controller, a ElectionAnswer) error {
	v := k.view(c)
	r, ok := v.requests[a.ID]
	if !ok {
		return fmt.Errorf("ElectLeaders %d answered, not asked or answered twice", a.ID)
	}
	delete(v.requests, a.ID)
	want := dedupe(r.ev.Partitions)
	if len(a.Results) != len(want) {
		return fmt.Errorf("ElectLeaders %d: %d results for %d partitions", a.ID, len(a.Results), len(want))
	}
	for i, res := range a.Results {
		tp := res.Partition
		if tp != want[i] {
			return fmt.Errorf("ElectLeaders %d: result %d for %v, asked %v", a.ID, i, tp, want[i])
		}
		had := v.leaders[tp][min(r.since[tp], len(v.leaders[tp])):]
		_, known := r.preferred[tp]
		// The first replica when asked, or one a reassignment made first
		// since: the election may have been decided on any of them.
		firsts := r.firsts[tp]
		hadFirst := slices.ContainsFunc(firsts, func(f int32) bool { return slices.Contains(had, f) })
		switch {
		case !known && (res.ErrorCode == 0 || res.ErrorCode == kerr.ElectionNotNeeded.Code):
			return fmt.Errorf("ElectLeaders %d: %v unknown when asked, answered %+v", a.ID, tp, res)
		case res.ErrorCode == 0 && !slices.Contains(had, res.Leader):
			return fmt.Errorf("ElectLeaders %d: %v elected %d, committed leaders since %v", a.ID, tp, res.Leader, had)
		case res.ErrorCode == 0 && r.ev.Type == PreferredElection && !slices.Contains(firsts, res.Leader):
			return fmt.Errorf("ElectLeaders %d: preferred election of %v elected %d, first replicas since %v", a.ID, tp, res.Leader, firsts)
		case res.ErrorCode == kerr.ElectionNotNeeded.Code && r.ev.Type == PreferredElection && !hadFirst:
			return fmt.Errorf("ElectLeaders %d: preferred election of %v not needed, committed leaders since %v", a.ID, tp, had)
		case res.ErrorCode == kerr.ElectionNotNeeded.Code && r.ev.Type == UncleanElection && !slices.ContainsFunc(had, func(l int32) bool { return l != NoLeader }):
			return fmt.Errorf("ElectLeaders %d: unclean election of %v not needed, committed leaders since %v", a.ID, tp, had)
		}
	}
	return nil
}
