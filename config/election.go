package config

import (
	"strconv"
	"time"
)

// ElectionConfig is how this broker's controller elects leaders, when it
// is the controller: Kafka's unclean.leader.election.enable default and
// its automatic leader rebalance. Zero fields take Kafka's defaults.
type ElectionConfig struct {
	// UncleanLeaderElection is unclean.leader.election.enable (false), the
	// default of the topic key of the same name: a partition with no live
	// ISR member may be led by a live out-of-sync replica, losing the
	// records it lacks. The cluster-wide dynamic default and a topic's
	// override win over it.
	UncleanLeaderElection *bool
	// AutoLeaderRebalance is auto.leader.rebalance.enable (true): the
	// controller moves leadership back to preferred replicas when a
	// broker's leader imbalance is above ImbalancePercentage.
	AutoLeaderRebalance *bool
	// ImbalanceCheckInterval is leader.imbalance.check.interval.seconds
	// (300 s): how often the controller checks the imbalance.
	ImbalanceCheckInterval time.Duration
	// ImbalancePercentage is leader.imbalance.per.broker.percentage (10):
	// the share of a broker's preferred partitions that may be led
	// elsewhere.
	ImbalancePercentage *int
}

// imbalanceCheckField is leader.imbalance.check.interval.seconds; a
// shorter interval set in Config reports as 1.
var imbalanceCheckField = custom(func(c *Config, _ string, v configValue) error {
	c.Cluster.Election.ImbalanceCheckInterval = scale(v.n, time.Second)
	return nil
}, func(c *Config) (string, bool) {
	d := c.Cluster.Election.ImbalanceCheckInterval
	return strconv.FormatInt(int64(max(d/time.Second, 1)), 10), d > 0
})
