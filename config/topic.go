package config

import (
	"math"
	"strconv"

	"github.com/sluice-io/sluice/engine"
)

// LogOptions is the engine configuration of a topic: the broker defaults,
// overridden by the topic's configs through each TopicKeys row's engine
// binding; the cleanup policy and the codec, which combine several keys
// with the broker's, are read here.
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
	for i := range TopicKeys {
		k := &TopicKeys[i]
		if k.engine == nil {
			continue
		}
		if s, ok := topicConfigs[k.Name]; ok {
			// A stored value passed its check when it was set; one that no
			// longer parses (never written by sluice) leaves the default.
			if v, why := k.value(s); why == "" {
				k.engine(&o, v)
			}
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
	o.Recompression = c.recompression(topicConfigs)
	return o
}

// The engine options of the topic keys whose Kafka values the engine reads
// otherwise: the engine takes a zero option as its default, so Kafka's zero
// values that mean something else map to their nearest engine value, and
// Kafka's Long.MAX_VALUE "never" to the engine's zero.

func indexInterval(o *engine.Options, v configValue) {
	o.IndexIntervalBytes = max(int(v.n), 1) // 0: an index entry for every batch
}

func maxBatchBytes(o *engine.Options, v configValue) {
	o.MaxBatchBytes = max(int(v.n), 1) // 0: every batch is too large
}

func retentionTime(o *engine.Options, v configValue) {
	switch {
	case v.n < 0:
		o.Retention = -1
	case v.n == 0:
		o.Retention = 1 // every segment with data expires at once
	default:
		o.Retention = SaturatingMs(v.n)
	}
}

func retentionBytes(o *engine.Options, v configValue) {
	o.RetentionBytes = v.n
	if v.n == 0 {
		o.RetentionBytes = 1 // delete all but the newest segment
	}
}

func maxCompactionLag(o *engine.Options, v configValue) {
	o.Compaction.MaxCompactionLag = SaturatingMs(v.n)
	if v.n == math.MaxInt64 {
		o.Compaction.MaxCompactionLag = 0 // Kafka's default: no bound
	}
}

func flushInterval(o *engine.Options, v configValue) {
	o.FlushInterval = SaturatingMs(v.n)
	if o.FlushInterval == math.MaxInt64 {
		o.FlushInterval = 0 // Kafka's default, Long.MAX_VALUE: never
	}
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
