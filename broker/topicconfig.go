package broker

import (
	"fmt"
	"strconv"
	"time"

	"github.com/sluice-io/sluice/engine"
)

// topicConfigKind says how a topic configuration key is validated.
type topicConfigKind int

const (
	cfgLong topicConfigKind = iota
	cfgInt
	cfgBool
	cfgDouble
	cfgString
)

// topicConfigs are Kafka's topic-level keys. Keys sluice accepts but does
// not act on are stored and reported, as Kafka does for settings without
// effect on a single node.
var topicConfigs = map[string]topicConfigKind{
	"cleanup.policy":                          cfgString,
	"compression.type":                        cfgString,
	"delete.retention.ms":                     cfgLong,
	"file.delete.delay.ms":                    cfgLong,
	"flush.messages":                          cfgLong,
	"flush.ms":                                cfgLong,
	"follower.replication.throttled.replicas": cfgString,
	"index.interval.bytes":                    cfgInt,
	"leader.replication.throttled.replicas":   cfgString,
	"local.retention.bytes":                   cfgLong,
	"local.retention.ms":                      cfgLong,
	"max.compaction.lag.ms":                   cfgLong,
	"max.message.bytes":                       cfgInt,
	"message.downconversion.enable":           cfgBool,
	"message.format.version":                  cfgString,
	"message.timestamp.after.max.ms":          cfgLong,
	"message.timestamp.before.max.ms":         cfgLong,
	"message.timestamp.difference.max.ms":     cfgLong,
	"message.timestamp.type":                  cfgString,
	"min.cleanable.dirty.ratio":               cfgDouble,
	"min.compaction.lag.ms":                   cfgLong,
	"min.insync.replicas":                     cfgInt,
	"preallocate":                             cfgBool,
	"remote.storage.enable":                   cfgBool,
	"retention.bytes":                         cfgLong,
	"retention.ms":                            cfgLong,
	"segment.bytes":                           cfgInt,
	"segment.index.bytes":                     cfgInt,
	"segment.jitter.ms":                       cfgLong,
	"segment.ms":                              cfgLong,
	"unclean.leader.election.enable":          cfgBool,
}

// validateTopicConfig checks one topic configuration entry as Kafka does,
// and refuses values sluice cannot honour yet rather than accepting and
// ignoring them.
func validateTopicConfig(key string, value *string) error {
	kind, ok := topicConfigs[key]
	if !ok {
		return fmt.Errorf("unknown topic config name: %s", key)
	}
	if value == nil {
		return fmt.Errorf("null value not supported for topic config %s", key)
	}
	v := *value
	var err error
	switch kind {
	case cfgLong:
		_, err = strconv.ParseInt(v, 10, 64)
	case cfgInt:
		_, err = strconv.ParseInt(v, 10, 32)
	case cfgBool:
		_, err = strconv.ParseBool(v)
	case cfgDouble:
		_, err = strconv.ParseFloat(v, 64)
	}
	if err != nil {
		return fmt.Errorf("invalid value %s for configuration %s", v, key)
	}
	switch key {
	case "cleanup.policy":
		if v != "delete" {
			return fmt.Errorf("cleanup.policy %q is not supported yet (only delete)", v)
		}
	case "message.timestamp.type":
		if v != "CreateTime" && v != "LogAppendTime" {
			return fmt.Errorf("invalid value %s for configuration message.timestamp.type: must be CreateTime or LogAppendTime", v)
		}
	case "compression.type":
		if v != "producer" {
			return fmt.Errorf("compression.type %q is not supported (only producer: batches are stored as sent)", v)
		}
	case "segment.bytes":
		if n, _ := strconv.ParseInt(v, 10, 32); n < 14 {
			return fmt.Errorf("invalid value %s for configuration segment.bytes: must be at least 14", v)
		}
	case "max.message.bytes", "index.interval.bytes", "segment.index.bytes":
		if n, _ := strconv.ParseInt(v, 10, 32); n < 0 {
			return fmt.Errorf("invalid value %s for configuration %s: must be at least 0", v, key)
		}
	}
	return nil
}

// logOptions is the engine configuration of a topic: the broker defaults,
// overridden by the topic's configs.
func (c *Config) logOptions(topicConfigs map[string]string) engine.Options {
	o := engine.Options{
		SegmentBytes:       c.LogSegmentBytes,
		SegmentAge:         c.LogRoll,
		SegmentIndexBytes:  int(c.LogIndexSizeMaxBytes),
		IndexIntervalBytes: int(c.LogIndexIntervalBytes),
		MaxBatchBytes:      int(c.MessageMaxBytes),
		Retention:          c.LogRetention,
		FlushMessages:      c.FlushIntervalMessages,
		FlushInterval:      c.FlushInterval,
		RetentionBytes:     c.LogRetentionBytes,
		Logger:             c.Logger,
	}
	o.ProducerIDExpiration = c.ProducerIDExpiration // a broker setting only, as in Kafka
	n := func(k string) (int64, bool) {
		v, ok := topicConfigs[k]
		if !ok {
			return 0, false
		}
		x, err := strconv.ParseInt(v, 10, 64)
		return x, err == nil
	}
	if v, ok := n("segment.bytes"); ok {
		o.SegmentBytes = v
	}
	if v, ok := n("segment.ms"); ok {
		o.SegmentAge = time.Duration(v) * time.Millisecond
	}
	if v, ok := n("segment.index.bytes"); ok {
		o.SegmentIndexBytes = int(v)
	}
	if v, ok := n("index.interval.bytes"); ok {
		o.IndexIntervalBytes = int(v)
	}
	if v, ok := n("max.message.bytes"); ok {
		o.MaxBatchBytes = int(v)
	}
	if v, ok := n("retention.ms"); ok {
		o.Retention = time.Duration(v) * time.Millisecond
		if v < 0 {
			o.Retention = -1
		}
	}
	if v, ok := n("retention.bytes"); ok {
		o.RetentionBytes = v
	}
	if topicConfigs["message.timestamp.type"] == "LogAppendTime" {
		o.LogAppendTime = true
	}
	if v, ok := n("flush.messages"); ok {
		o.FlushMessages = v
	}
	if v, ok := n("flush.ms"); ok {
		o.FlushInterval = time.Duration(v) * time.Millisecond
	}
	return o
}
