package config

import (
	"math"
	"strconv"

	"github.com/sluice-io/sluice/engine"
)

// LogOptions is the engine configuration of a topic: the broker defaults,
// overridden by the topic's configs.
func (c *Config) LogOptions(topicConfigs map[string]string) engine.Options {
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
		FS:                 c.FS,
		Compaction:         c.Cleaner.compactionOptions(c.LogCleanupPolicy),
	}
	o.ProducerIDExpiration = c.ProducerIDExpiration // a broker setting only, as in Kafka
	o.TxnVerification = c.Txns.VerifyPartitions()
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
		o.SegmentAge = SaturatingMs(v)
	}
	if v, ok := n("segment.index.bytes"); ok {
		o.SegmentIndexBytes = int(v)
	}
	// The engine reads a zero option as its default; Kafka's zero values
	// that mean something else are mapped to their nearest engine value.
	if v, ok := n("index.interval.bytes"); ok {
		o.IndexIntervalBytes = max(int(v), 1) // 0: an index entry for every batch
	}
	if v, ok := n("max.message.bytes"); ok {
		o.MaxBatchBytes = max(int(v), 1) // 0: every batch is too large
	}
	if v, ok := n("retention.ms"); ok {
		switch {
		case v < 0:
			o.Retention = -1
		case v == 0:
			o.Retention = 1 // every segment with data expires at once
		default:
			o.Retention = SaturatingMs(v)
		}
	}
	if v, ok := n("retention.bytes"); ok {
		o.RetentionBytes = v
		if v == 0 {
			o.RetentionBytes = 1 // delete all but the newest segment
		}
	}
	policy := "delete"
	if c.LogCleanupPolicy != nil {
		policy = *c.LogCleanupPolicy
	}
	if p, ok := topicConfigs["cleanup.policy"]; ok {
		policy = p
	}
	var keepAll bool
	o.Compaction.Policy, keepAll = cleanupPolicyOf(policy)
	if keepAll {
		// An empty list: Kafka deletes nothing but what is below the log
		// start offset. (compact alone needs no such setting: the engine
		// applies no retention to it.)
		o.Retention, o.RetentionBytes = -1, -1
	}
	if v, ok := topicConfigs["min.cleanable.dirty.ratio"]; ok {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			o.Compaction.MinCleanableDirtyRatio = engineRatio(f)
		}
	}
	if v, ok := n("min.compaction.lag.ms"); ok {
		o.Compaction.MinCompactionLag = SaturatingMs(v)
	}
	if v, ok := n("max.compaction.lag.ms"); ok {
		o.Compaction.MaxCompactionLag = SaturatingMs(v)
		if v == math.MaxInt64 {
			o.Compaction.MaxCompactionLag = 0 // Kafka's default: no bound
		}
	}
	if v, ok := n("delete.retention.ms"); ok {
		o.Compaction.DeleteRetention = engineDeleteRetention(SaturatingMs(v))
	}
	o.Recompression = c.recompression(topicConfigs)
	if topicConfigs["message.timestamp.type"] == "LogAppendTime" {
		o.LogAppendTime = true
	}
	if v, ok := n("flush.messages"); ok {
		o.FlushMessages = v
	}
	if v, ok := n("flush.ms"); ok {
		o.FlushInterval = SaturatingMs(v)
		if o.FlushInterval == math.MaxInt64 {
			o.FlushInterval = 0 // Kafka's default, Long.MAX_VALUE: never
		}
	}
	return o
}

// recompression is the engine's form of a topic's compression.type and the
// level of its codec: the broker's, overridden by the topic's configs.
func (c *Config) recompression(topicConfigs map[string]string) engine.Recompression {
	typ := c.CompressionType
	if v, ok := topicConfigs["compression.type"]; ok {
		typ = v
	}
	level := func(key string, static int32) int {
		if v, ok := topicConfigs[key]; ok {
			if n, err := strconv.ParseInt(v, 10, 32); err == nil {
				return int(n)
			}
		}
		return int(static)
	}
	switch typ {
	case "uncompressed":
		return engine.Recompression{Enabled: true, Codec: engine.CompressionNone}
	case "gzip":
		return engine.Recompression{Enabled: true, Codec: engine.CompressionGzip, Level: level("compression.gzip.level", c.CompressionGzipLevel)}
	case "snappy":
		return engine.Recompression{Enabled: true, Codec: engine.CompressionSnappy}
	case "lz4":
		return engine.Recompression{Enabled: true, Codec: engine.CompressionLZ4, Level: level("compression.lz4.level", c.CompressionLZ4Level)}
	case "zstd":
		return engine.Recompression{Enabled: true, Codec: engine.CompressionZstd, Level: level("compression.zstd.level", c.CompressionZstdLevel)}
	}
	return engine.Recompression{} // producer
}
