package config

import (
	"fmt"
	"strconv"
	"time"
)

// GroupConfig configures the group coordinator and its internal topic,
// __consumer_offsets, with Kafka's keys. Zero fields take Kafka's
// defaults.
type GroupConfig struct {
	InitialRebalanceDelay *time.Duration // group.initial.rebalance.delay.ms; default 3 s
	MinSessionTimeout     time.Duration  // group.min.session.timeout.ms; default 6 s
	MaxSessionTimeout     time.Duration  // group.max.session.timeout.ms; default 30 min
	MaxSize               int            // group.max.size; default unlimited
	OffsetsPartitions     int32          // offsets.topic.num.partitions; default 50
	OffsetsSegmentBytes   int64          // offsets.topic.segment.bytes; default 100 MiB
	OffsetsReplication    int16          // offsets.topic.replication.factor; default 3 (1 on a single node)
	OffsetsRetention      time.Duration  // offsets.retention.minutes; default 7 days
	OffsetsRetentionCheck time.Duration  // offsets.retention.check.interval.ms; default 10 min
	OffsetMetadataMax     int            // offset.metadata.max.bytes; default 4096
}

func (g GroupConfig) WithDefaults() GroupConfig {
	if g.OffsetsPartitions <= 0 {
		g.OffsetsPartitions = 50
	}
	if g.OffsetsSegmentBytes <= 0 {
		g.OffsetsSegmentBytes = 100 << 20
	}
	if g.OffsetsReplication <= 0 {
		g.OffsetsReplication = 3
	}
	return g
}

// Apply sets the field a group key names; ok is false for other keys.
func (g *GroupConfig) Apply(k, v string) (ok bool, err error) {
	n, perr := strconv.ParseInt(v, 10, 64)
	if perr != nil {
		switch k {
		case "group.initial.rebalance.delay.ms", "group.min.session.timeout.ms", "group.max.session.timeout.ms",
			"group.max.size", "offsets.topic.num.partitions", "offsets.topic.segment.bytes",
			"offsets.topic.replication.factor", "offsets.retention.minutes",
			"offsets.retention.check.interval.ms", "offset.metadata.max.bytes":
			return true, fmt.Errorf("broker: config %s=%q: not a number", k, v)
		}
		return false, nil
	}
	ms := time.Duration(n) * time.Millisecond
	switch k {
	case "group.initial.rebalance.delay.ms":
		g.InitialRebalanceDelay = &ms
	case "group.min.session.timeout.ms":
		g.MinSessionTimeout = ms
	case "group.max.session.timeout.ms":
		g.MaxSessionTimeout = ms
	case "group.max.size":
		g.MaxSize = int(n)
	case "offsets.topic.num.partitions":
		g.OffsetsPartitions = int32(n)
	case "offsets.topic.segment.bytes":
		g.OffsetsSegmentBytes = n
	case "offsets.topic.replication.factor":
		g.OffsetsReplication = int16(n)
	case "offsets.retention.minutes":
		g.OffsetsRetention = time.Duration(n) * time.Minute
	case "offsets.retention.check.interval.ms":
		g.OffsetsRetentionCheck = ms
	case "offset.metadata.max.bytes":
		g.OffsetMetadataMax = int(n)
	default:
		return false, nil
	}
	if n < 0 || (n == 0 && k != "group.initial.rebalance.delay.ms") {
		return true, fmt.Errorf("broker: config %s=%q: must be positive", k, v)
	}
	return true, nil
}

// static adds the group keys the configuration sets to m, by Kafka name
// (layers.go's StaticBrokerConfigs).
func (g GroupConfig) static(m map[string]string) {
	if g.InitialRebalanceDelay != nil {
		m["group.initial.rebalance.delay.ms"] = strconv.FormatInt(g.InitialRebalanceDelay.Milliseconds(), 10)
	}
	PutNonZero(m, "group.min.session.timeout.ms", g.MinSessionTimeout.Milliseconds())
	PutNonZero(m, "group.max.session.timeout.ms", g.MaxSessionTimeout.Milliseconds())
	PutNonZero(m, "group.max.size", int64(g.MaxSize))
	PutNonZero(m, "offsets.topic.num.partitions", int64(g.OffsetsPartitions))
	PutNonZero(m, "offsets.topic.segment.bytes", g.OffsetsSegmentBytes)
	PutNonZero(m, "offsets.topic.replication.factor", int64(g.OffsetsReplication))
	PutNonZero(m, "offsets.retention.minutes", int64(g.OffsetsRetention/time.Minute))
	PutNonZero(m, "offsets.retention.check.interval.ms", g.OffsetsRetentionCheck.Milliseconds())
	PutNonZero(m, "offset.metadata.max.bytes", int64(g.OffsetMetadataMax))
}
