package config

import (
	"maps"
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

// OffsetsTopicConfigs are the configs __consumer_offsets is created with,
// Kafka's (GroupCoordinatorService.groupMetadataTopicConfigs):
// cleanup.policy=compact, compression.type=producer,
// segment.bytes=offsets.topic.segment.bytes.
func OffsetsTopicConfigs(gc GroupConfig) map[string]string {
	return map[string]string{
		"cleanup.policy":   "compact",
		"compression.type": "producer",
		"segment.bytes":    strconv.FormatInt(gc.OffsetsSegmentBytes, 10),
	}
}

// MigratedOffsetsTopicConfigs are the configs of a __consumer_offsets
// created by brokers from before compaction (retention.ms=-1 and
// retention.bytes=-1, keep everything, and no cleanup.policy) once switched
// to the compacted ones: the interim retention keys go, Kafka's internal
// topic configs come, other overrides stay. False if configs need no
// change.

func MigratedOffsetsTopicConfigs(configs map[string]string, gc GroupConfig) (map[string]string, bool) {
	if _, ok := configs["cleanup.policy"]; ok || configs["retention.ms"] != "-1" {
		return nil, false
	}
	next := maps.Clone(configs)
	delete(next, "retention.ms")
	if next["retention.bytes"] == "-1" {
		delete(next, "retention.bytes")
	}
	maps.Copy(next, OffsetsTopicConfigs(gc))
	if s, ok := configs["segment.bytes"]; ok {
		next["segment.bytes"] = s // as created: offsets.topic.segment.bytes applies to new topics only, as in Kafka
	}
	return next, true
}
