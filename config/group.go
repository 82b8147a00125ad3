package config

import (
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
