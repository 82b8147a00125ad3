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

// Apply sets the field a log.cleaner.* key names, checking the value as
// Kafka does (the catalogue's type and range); ok is false for other keys.
func (c *CleanerConfig) Apply(k, v string) (ok bool, err error) {
	switch k {
	case "log.cleaner.enable", "log.cleaner.threads", "log.cleaner.dedupe.buffer.size",
		"log.cleaner.io.buffer.size", "log.cleaner.io.buffer.load.factor", "log.cleaner.backoff.ms",
		"log.cleaner.delete.retention.ms", "log.cleaner.min.cleanable.ratio",
		"log.cleaner.min.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms":
	default:
		return false, nil
	}
	cv, err := BrokerKeyByName[k].Parse(v)
	if err != nil {
		return true, err
	}
	ms := SaturatingMs(cv.n)
	switch k {
	case "log.cleaner.enable":
		c.Enable = &cv.b
	case "log.cleaner.threads":
		n := int(cv.n)
		c.Threads = &n
	case "log.cleaner.dedupe.buffer.size":
		c.DedupeBufferSize = cv.n
	case "log.cleaner.io.buffer.size":
		c.IOBufferSize = int32(cv.n)
	case "log.cleaner.io.buffer.load.factor":
		c.LoadFactor = cv.f
	case "log.cleaner.backoff.ms":
		c.Backoff = &ms
	case "log.cleaner.delete.retention.ms":
		c.DeleteRetention = &ms
	case "log.cleaner.min.cleanable.ratio":
		c.MinCleanableRatio = &cv.f
	case "log.cleaner.min.compaction.lag.ms":
		c.MinCompactionLag = ms
	case "log.cleaner.max.compaction.lag.ms":
		c.MaxCompactionLag = ms
		if cv.n == math.MaxInt64 {
			c.MaxCompactionLag = 0
		}
	}
	return true, nil
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

// static adds the keys the configuration sets to m, by Kafka name.
func (c *CleanerConfig) static(m map[string]string) {
	ms := func(k string, d time.Duration) { m[k] = strconv.FormatInt(d.Milliseconds(), 10) }
	if c.Enable != nil {
		m["log.cleaner.enable"] = strconv.FormatBool(*c.Enable)
	}
	if c.Threads != nil {
		m["log.cleaner.threads"] = strconv.Itoa(*c.Threads)
	}
	if c.DedupeBufferSize != 0 {
		m["log.cleaner.dedupe.buffer.size"] = strconv.FormatInt(c.DedupeBufferSize, 10)
	}
	if c.IOBufferSize != 0 {
		m["log.cleaner.io.buffer.size"] = strconv.FormatInt(int64(c.IOBufferSize), 10)
	}
	if c.LoadFactor != 0 {
		m["log.cleaner.io.buffer.load.factor"] = formatDouble(c.LoadFactor)
	}
	if c.Backoff != nil {
		ms("log.cleaner.backoff.ms", *c.Backoff)
	}
	if c.DeleteRetention != nil {
		ms("log.cleaner.delete.retention.ms", *c.DeleteRetention)
	}
	if c.MinCleanableRatio != nil {
		m["log.cleaner.min.cleanable.ratio"] = formatDouble(*c.MinCleanableRatio)
	}
	if c.MinCompactionLag != 0 {
		ms("log.cleaner.min.compaction.lag.ms", c.MinCompactionLag)
	}
	if c.MaxCompactionLag != 0 {
		ms("log.cleaner.max.compaction.lag.ms", c.MaxCompactionLag)
	}
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
