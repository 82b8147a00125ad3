package config

import (
	"fmt"
	"strconv"
	"strings"
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

// Apply sets the field an election key names; ok is false for other keys.
func (c *ElectionConfig) Apply(k, v string) (ok bool, err error) {
	boolean := func() (*bool, error) {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			t := true
			return &t, nil
		case "false":
			f := false
			return &f, nil
		}
		return nil, fmt.Errorf("broker: config %s=%q: not a boolean", k, v)
	}
	switch k {
	case "unclean.leader.election.enable":
		c.UncleanLeaderElection, err = boolean()
	case "auto.leader.rebalance.enable":
		c.AutoLeaderRebalance, err = boolean()
	case "leader.imbalance.check.interval.seconds":
		n, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil || n < 1 {
			return true, fmt.Errorf("broker: config %s=%q: not a number of at least 1", k, v)
		}
		c.ImbalanceCheckInterval = time.Duration(n) * time.Second
	case "leader.imbalance.per.broker.percentage":
		n, perr := strconv.ParseInt(v, 10, 32)
		if perr != nil {
			return true, fmt.Errorf("broker: config %s=%q: not a number", k, v)
		}
		pct := int(n)
		c.ImbalancePercentage = &pct
	default:
		return false, nil
	}
	return true, err
}

// static adds the keys the configuration sets to m (STATIC_BROKER_CONFIG).
func (c ElectionConfig) static(m map[string]string) {
	if c.UncleanLeaderElection != nil {
		m["unclean.leader.election.enable"] = strconv.FormatBool(*c.UncleanLeaderElection)
	}
	if c.AutoLeaderRebalance != nil {
		m["auto.leader.rebalance.enable"] = strconv.FormatBool(*c.AutoLeaderRebalance)
	}
	if c.ImbalanceCheckInterval > 0 {
		m["leader.imbalance.check.interval.seconds"] = strconv.FormatInt(int64(max(c.ImbalanceCheckInterval/time.Second, 1)), 10)
	}
	if c.ImbalancePercentage != nil {
		m["leader.imbalance.per.broker.percentage"] = strconv.Itoa(*c.ImbalancePercentage)
	}
}
