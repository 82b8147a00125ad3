package group

// What the coordinator's groups look like from outside, for metrics
// (issue 18): each group's state, members and committed offsets, and how
// many rebalances began. A snapshot: copied under each group's lock, read
// without holding any.

import (
	"cmp"
	"slices"
)

// GroupStats is one group as its coordinator holds it.
type GroupStats struct {
	ID         string
	State      string // Kafka's state names (Empty, Stable, ...)
	Members    int
	Generation int32
	// Offsets are its committed offsets, by topic and partition.
	Offsets []CommittedOffset
}

// CommittedOffset is one committed offset of a group.
type CommittedOffset struct {
	Topic     string
	Partition int32
	Offset    int64
}

// Stats returns every group the coordinator holds (those of the
// __consumer_offsets partitions this broker leads), sorted by id.
func (c *Coordinator) Stats() []GroupStats {
	gs := c.groups()
	out := make([]GroupStats, 0, len(gs))
	for _, g := range gs {
		g.mu.Lock()
		if g.state == dead {
			g.mu.Unlock()
			continue
		}
		s := GroupStats{ID: g.id, State: g.state.String(), Members: len(g.members), Generation: g.generation,
			Offsets: make([]CommittedOffset, 0, len(g.offsets))}
		for tp, o := range g.offsets {
			s.Offsets = append(s.Offsets, CommittedOffset{Topic: tp.topic, Partition: tp.partition, Offset: o.offset})
		}
		g.mu.Unlock()
		slices.SortFunc(s.Offsets, func(a, b CommittedOffset) int {
			return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
		out = append(out, s)
	}
	return out
}

// Rebalances is how many rebalances this coordinator began (groups moved
// to PreparingRebalance), since it started.
func (c *Coordinator) Rebalances() uint64 { return c.rebalances.Load() }
