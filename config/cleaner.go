package config

// Compaction settings: the broker's log.cleaner.* keys (the Store's cleaner
// and the defaults of the topics' compaction keys) and their mapping to the
// engine's CompactionOptions and CleanerOptions (engine/compaction.go).

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-io/sluice/engine"
)

// CleanerConfig configures the log cleaner with Kafka's log.cleaner.* keys.
// Zero fields take Kafka's defaults. The cleaner is sized when the broker
// starts: these keys are read-only at run time (see keys.go).
type CleanerConfig struct {
	Enable            *bool          // log.cleaner.enable; default true
	Threads           *int           // log.cleaner.threads; default 1; 0 runs no cleaner
	DedupeBufferSize  int64          // log.cleaner.dedupe.buffer.size; default 128 MiB
	IOBufferSize      int32          // log.cleaner.io.buffer.size; default 512 KiB
	LoadFactor        float64        // log.cleaner.io.buffer.load.factor; default 0.9
	Backoff           *time.Duration // log.cleaner.backoff.ms; default 15 s
	DeleteRetention   *time.Duration // log.cleaner.delete.retention.ms; default 1 day
	MinCleanableRatio *float64       // log.cleaner.min.cleanable.ratio; default 0.5
	MinCompactionLag  time.Duration  // log.cleaner.min.compaction.lag.ms; default 0
	MaxCompactionLag  time.Duration  // log.cleaner.max.compaction.lag.ms; default none
}

// StoreOptions are the engine's cleaner settings.
func (c *CleanerConfig) StoreOptions() engine.CleanerOptions {
	o := engine.CleanerOptions{
		DedupeBufferBytes: c.DedupeBufferSize,
		IOBufferBytes:     int(c.IOBufferSize),
		LoadFactor:        c.LoadFactor,
	}
	if c.Enable != nil && !*c.Enable || c.Threads != nil && *c.Threads == 0 {
		o.Disabled = true
	}
	if c.Threads != nil {
		o.Threads = *c.Threads
	}
	if c.Backoff != nil {
		o.Backoff = max(*c.Backoff, time.Millisecond) // the engine reads 0 as its default
	}
	return o
}

// formatDouble writes a DOUBLE as Java's Double.toString does for the
// values these keys take (0.5, 0.9, 1.0).
func formatDouble(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

// compactionOptions are the broker-wide defaults of the compaction keys.
func (c *CleanerConfig) compactionOptions(policy *string) engine.CompactionOptions {
	var o engine.CompactionOptions
	if policy != nil {
		o.Policy, _ = cleanupPolicyOf(*policy)
	}
	if c.MinCleanableRatio != nil {
		o.MinCleanableDirtyRatio = engineRatio(*c.MinCleanableRatio)
	}
	o.MinCompactionLag = c.MinCompactionLag
	o.MaxCompactionLag = c.MaxCompactionLag
	if c.DeleteRetention != nil {
		o.DeleteRetention = engineDeleteRetention(*c.DeleteRetention)
	}
	return o
}

// cleanupPolicyOf maps a cleanup.policy list to the engine's policy, and
// reports whether the list is empty: neither compact nor delete, so
// nothing is removed but what lies below the log start offset.
func cleanupPolicyOf(list string) (p engine.CleanupPolicy, keepAll bool) {
	var compact, del bool
	for _, s := range strings.Split(list, ",") {
		switch strings.TrimSpace(s) {
		case "compact":
			compact = true
		case "delete":
			del = true
		}
	}
	switch {
	case compact && del:
		return engine.PolicyCompactDelete, false
	case compact:
		return engine.PolicyCompact, false
	}
	return engine.PolicyDelete, !del
}

// engineRatio maps min.cleanable.dirty.ratio to the engine's field, which
// reads 0 as its default: Kafka's 0 (clean whenever anything is dirty) is
// the smallest ratio above it.
func engineRatio(f float64) float64 {
	if f <= 0 {
		return math.SmallestNonzeroFloat64
	}
	return f
}

// engineDeleteRetention maps delete.retention.ms to the engine's field,
// which reads 0 as its default and a negative value as 0.
func engineDeleteRetention(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// maxCompactionLagField is log.cleaner.max.compaction.lag.ms: Kafka's
// default, Long.MAX_VALUE, is the zero value (no bound).
var maxCompactionLagField = custom(func(c *Config, _ string, v configValue) error {
	c.Cleaner.MaxCompactionLag = SaturatingMs(v.n)
	if v.n == math.MaxInt64 {
		c.Cleaner.MaxCompactionLag = 0
	}
	return nil
}, func(c *Config) (string, bool) {
	d := c.Cleaner.MaxCompactionLag
	return strconv.FormatInt(d.Milliseconds(), 10), d != 0
})
