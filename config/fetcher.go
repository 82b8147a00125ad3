package config

import (
	"strconv"
	"time"
)

// FetcherConfig is how a follower fetches from its leaders: Kafka's
// replica.fetch.* keys and num.replica.fetchers, with Kafka's defaults.
// Zero fields take the defaults.
type FetcherConfig struct {
	// MaxBytes is replica.fetch.max.bytes (1 MiB): bytes asked per
	// partition; a bigger first batch is still returned whole.
	MaxBytes int32
	// ResponseMaxBytes is replica.fetch.response.max.bytes (10 MiB): bytes
	// asked per fetch, over all its partitions.
	ResponseMaxBytes int32
	// MinBytes is replica.fetch.min.bytes (1): the leader holds a fetch
	// until this much is there or WaitMax passed.
	MinBytes int32
	// WaitMax is replica.fetch.wait.max.ms (500 ms). Kafka requires it to
	// be at most replica.lag.time.max.ms, or followers would leave the ISR
	// while their fetch waits.
	WaitMax time.Duration
	// Backoff is replica.fetch.backoff.ms (1 s): the pause after a fetch
	// failed (leader unreachable, error answer).
	Backoff time.Duration
	// Fetchers is num.replica.fetchers (1): fetchers, each with its own
	// connection, per source broker; a partition goes to one by its hash.
	Fetchers int
}

// WithDefaults fills the zero fields with Kafka's defaults.
func (c FetcherConfig) WithDefaults() FetcherConfig {
	if c.MaxBytes <= 0 {
		c.MaxBytes = 1 << 20
	}
	if c.ResponseMaxBytes <= 0 {
		c.ResponseMaxBytes = 10 << 20
	}
	if c.MinBytes <= 0 {
		c.MinBytes = 1
	}
	if c.WaitMax <= 0 {
		c.WaitMax = 500 * time.Millisecond
	}
	if c.Backoff <= 0 {
		c.Backoff = time.Second
	}
	if c.Fetchers <= 0 {
		c.Fetchers = 1
	}
	return c
}

// fetchBackoffField is replica.fetch.backoff.ms: 0 (retry at once) is
// stored as 1 ms, since the zero value means the default.
var fetchBackoffField = custom(func(c *Config, _ string, v configValue) error {
	c.Cluster.Fetch.Backoff = max(SaturatingMs(v.n), time.Millisecond)
	return nil
}, func(c *Config) (string, bool) {
	d := c.Cluster.Fetch.Backoff
	return strconv.FormatInt(d.Milliseconds(), 10), d != 0
})
