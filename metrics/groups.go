package metrics

// The group coordinator's gauges, computed at each scrape from its Groups
// (their names are listed in doc.go).

import (
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Groups is the group coordinator's state at a scrape.
type Groups struct {
	Groups     []Group
	Rebalances uint64 // begun since the coordinator started
	Lag        []Lag  // sampled
}

// Group is one group the broker coordinates.
type Group struct {
	ID      string
	State   string // Kafka's state names (Empty, Stable, ...)
	Members int
	Offsets int // committed offsets held
}

// Lag is a group's lag on one partition.
type Lag struct {
	Group     string
	Topic     string
	Partition int32
	// Committed is the group's committed offset, End the partition's high
	// watermark when sampled (-1: the leader could not be asked, no lag
	// series), Lag End less Committed.
	Committed, End, Lag int64
}

// groupCollector collects the group metrics.
type groupCollector struct {
	groups func() (Groups, bool)

	numGroups  *prometheus.Desc
	byState    map[string]*prometheus.Desc
	numOffsets *prometheus.Desc
	members    *prometheus.Desc
	rebalances *prometheus.Desc
	current    *prometheus.Desc
	lag        *prometheus.Desc
	lagSum     *prometheus.Desc
}

// groupStates are Kafka's group states with an MBean of their own.
var groupStates = []string{"Stable", "PreparingRebalance", "CompletingRebalance", "Empty", "Dead"}

func newGroupCollector(groups func() (Groups, bool)) *groupCollector {
	const gm = "kafka_coordinator_group_groupmetadatamanager_"
	c := &groupCollector{groups: groups,
		numGroups:  prometheus.NewDesc(gm+"numgroups", "Groups this broker coordinates.", nil, nil),
		byState:    map[string]*prometheus.Desc{},
		numOffsets: prometheus.NewDesc(gm+"numoffsets", "Committed offsets of the groups this broker coordinates.", nil, nil),
		members:    prometheus.NewDesc("sluice_group_members", "Members of a group this broker coordinates.", []string{"group"}, nil),
		rebalances: prometheus.NewDesc("sluice_group_rebalances_total", "Rebalances begun by this broker's group coordinator.", nil, nil),
		current: prometheus.NewDesc("kafka_consumergroup_current_offset", "A group's committed offset.",
			[]string{"consumergroup", "topic", "partition"}, nil),
		lag: prometheus.NewDesc("kafka_consumergroup_lag", "The partition's high watermark less the group's committed offset.",
			[]string{"consumergroup", "topic", "partition"}, nil),
		lagSum: prometheus.NewDesc("kafka_consumergroup_lag_sum", "A group's lag summed over a topic's partitions.",
			[]string{"consumergroup", "topic"}, nil),
	}
	for _, s := range groupStates {
		c.byState[s] = prometheus.NewDesc(gm+"numgroups"+strings.ToLower(s), "Groups this broker coordinates in state "+s+".", nil, nil)
	}
	return c
}

func (c *groupCollector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c *groupCollector) Collect(ch chan<- prometheus.Metric) {
	g, ok := c.groups()
	if !ok {
		return // no group coordinator yet (no FindCoordinator served)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counts := map[string]int{}
	offsets := 0
	for _, s := range g.Groups {
		counts[s.State]++
		offsets += s.Offsets
		gauge(c.members, float64(s.Members), s.ID)
	}
	gauge(c.numGroups, float64(len(g.Groups)))
	for _, s := range groupStates {
		gauge(c.byState[s], float64(counts[s]))
	}
	gauge(c.numOffsets, float64(offsets))
	ch <- prometheus.MustNewConstMetric(c.rebalances, prometheus.CounterValue, float64(g.Rebalances))
	type groupTopic struct{ group, topic string }
	sums := map[groupTopic]int64{}
	var order []groupTopic
	for _, l := range g.Lag {
		p := strconv.Itoa(int(l.Partition))
		gauge(c.current, float64(l.Committed), l.Group, l.Topic, p)
		if l.End < 0 {
			continue
		}
		gauge(c.lag, float64(l.Lag), l.Group, l.Topic, p)
		k := groupTopic{l.Group, l.Topic}
		if _, ok := sums[k]; !ok {
			order = append(order, k)
		}
		sums[k] += l.Lag
	}
	for _, k := range order {
		gauge(c.lagSum, float64(sums[k]), k.group, k.topic)
	}
}
