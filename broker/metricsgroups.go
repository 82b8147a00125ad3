package broker

// The group coordinator's metrics, computed at scrape time from the groups
// this broker coordinates (coordinator/group's Stats) and their sampled lag
// (grouplag.go): nothing on the request paths. Names as jmx_exporter names
// Kafka's GroupMetadataManager MBeans where Kafka has one; consumer lag as
// kafka_exporter (danielqsj/kafka_exporter) names it, which lag dashboards
// query (Kafka exports none):
//
//	kafka_coordinator_group_groupmetadatamanager_numgroups                        gauge  groups coordinated here
//	kafka_coordinator_group_groupmetadatamanager_numgroups<state>                 gauge  of them in a state: stable, preparingrebalance,
//	                                                                                     completingrebalance, empty, dead (Kafka's NumGroupsStable...)
//	kafka_coordinator_group_groupmetadatamanager_numoffsets                       gauge  committed offsets held
//	sluice_group_members{group}                                                   gauge  members of each group
//	sluice_group_rebalances_total                                                 counter rebalances begun since the coordinator started
//	kafka_consumergroup_current_offset{consumergroup,topic,partition}             gauge  a group's committed offset
//	kafka_consumergroup_lag{consumergroup,topic,partition}                        gauge  the partition's high watermark less it (sampled at most every 10 s)
//	kafka_consumergroup_lag_sum{consumergroup,topic}                              gauge  the lag summed over the topic's partitions
//
// A partition whose leader could not be asked has no lag series in that
// scrape. A scrape takes lagSampler.mu first (doc.go's lock order).

import (
	"context"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// groupCollector collects the group metrics of b.
type groupCollector struct {
	b *Broker

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

func newGroupCollector(b *Broker) *groupCollector {
	const gm = "kafka_coordinator_group_groupmetadatamanager_"
	c := &groupCollector{b: b,
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
	g := c.b.existingGroups()
	if g == nil {
		return // no group coordinator yet (no FindCoordinator served)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	stats := g.Stats()
	counts := map[string]int{}
	offsets := 0
	for _, s := range stats {
		counts[s.State]++
		offsets += len(s.Offsets)
		gauge(c.members, float64(s.Members), s.ID)
	}
	gauge(c.numGroups, float64(len(stats)))
	for _, s := range groupStates {
		gauge(c.byState[s], float64(counts[s]))
	}
	gauge(c.numOffsets, float64(offsets))
	ch <- prometheus.MustNewConstMetric(c.rebalances, prometheus.CounterValue, float64(g.Rebalances()))
	type groupTopic struct{ group, topic string }
	sums := map[groupTopic]int64{}
	var order []groupTopic
	for _, l := range c.b.GroupLag(context.Background()) {
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
