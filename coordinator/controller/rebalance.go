package controller

// The automatic leader rebalance (auto.leader.rebalance.enable), Kafka's
// checkAndTriggerAutoLeaderRebalance: every
// leader.imbalance.check.interval.seconds the driver steps an
// ImbalanceCheck (the core has no clock), and for each broker that is the
// preferred leader (first replica) of partitions, if the share of those
// partitions another broker leads (or none does) is above
// leader.imbalance.per.broker.percentage, the ones whose preferred replica
// is live and in the ISR get a preferred election (elect.go), which nobody
// waits for.
//
// Topics being deleted are left out, as in Kafka. A partition without a
// state counts toward its broker's partitions but not as led elsewhere
// (Kafka's leadershipInfo.exists). Unlike Kafka, a partition whose
// automatic election is still queued from an earlier check is not queued
// again.

import (
	"slices"

	"github.com/sluice-io/sluice/engine"
)

// ImbalanceCheck is a tick of the automatic rebalance: the driver steps
// one every leader.imbalance.check.interval.seconds (Kafka: the first 5 s
// after the election) while auto.leader.rebalance.enable is true.
type ImbalanceCheck struct {
	// Percentage is leader.imbalance.per.broker.percentage (Kafka's
	// default 10): a broker's imbalance must be above it.
	Percentage int
}

func (ImbalanceCheck) event() {}

// imbalanceCheck queues preferred elections for the partitions of every
// broker whose leader imbalance is above the percentage.
func (c *Controller) imbalanceCheck(ev ImbalanceCheck) {
	type share struct {
		all       int
		elsewhere []*partition
	}
	byPreferred := map[int32]*share{}
	var preferred []int32
	for _, t := range c.sortedTopics() {
		if t.deletion != nil {
			continue
		}
		for _, p := range t.parts {
			b := p.replicas[0]
			sh := byPreferred[b]
			if sh == nil {
				sh = &share{}
				byPreferred[b] = sh
				preferred = append(preferred, b)
			}
			sh.all++
			if p.state != nil && p.state.Leader != b {
				sh.elsewhere = append(sh.elsewhere, p)
			}
		}
	}
	slices.Sort(preferred)
	for _, b := range preferred {
		sh := byPreferred[b]
		// Kafka: imbalance ratio > percentage / 100, in doubles.
		if float64(len(sh.elsewhere))/float64(sh.all) <= float64(ev.Percentage)/100 {
			continue
		}
		for _, p := range sh.elsewhere {
			if !c.canLeadPreferred(p) || c.autoElectionQueued(p.tp) {
				continue
			}
			c.elections[p.tp] = append(c.elections[p.tp], &electItem{typ: PreferredElection})
			c.serveElections(c.topics[p.tp.Topic], p)
		}
	}
}

// canLeadPreferred is Kafka's canPreferredReplicaBeLeader: the first
// replica is live and in the committed ISR.
func (c *Controller) canLeadPreferred(p *partition) bool {
	return p.state != nil && c.liveFor(p)(p.replicas[0]) && slices.Contains(p.state.ISR, p.replicas[0])
}

// autoElectionQueued reports whether an automatic election of tp waits.
func (c *Controller) autoElectionQueued(tp engine.Partition) bool {
	if f := c.pending[tp]; f != nil && f.elect != nil && f.elect.call == nil {
		return true
	}
	if f := c.inflight[writeKey{tp, false}]; f != nil && f.elect != nil && f.elect.call == nil {
		return true
	}
	return slices.ContainsFunc(c.elections[tp], func(it *electItem) bool { return it.call == nil })
}
