package host

import (
	"context"

	"github.com/sluice-io/sluice/metrics"
)

// Metrics is the group coordinator's state for a metrics scrape
// (metrics.Sources.Groups): each group's state, members and committed
// offsets, the rebalances, and the consumer lag (lag.go: its sampler's
// lock, taken with no other lock held).
func (g *Groups) Metrics(ctx context.Context) metrics.Groups {
	c := g.Existing()
	stats := c.Stats()
	out := metrics.Groups{Rebalances: c.Rebalances(), Groups: make([]metrics.Group, len(stats))}
	for i, s := range stats {
		out.Groups[i] = metrics.Group{ID: s.ID, State: s.State, Members: s.Members, Offsets: len(s.Offsets)}
	}
	for _, l := range g.Lag(ctx) {
		out.Lag = append(out.Lag, metrics.Lag{Group: l.Group, Topic: l.Topic, Partition: l.Partition, Committed: l.Committed, End: l.End, Lag: l.Lag})
	}
	return out
}
