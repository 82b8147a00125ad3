package config

import (
	"fmt"
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

// Apply sets the field a fetcher key names; ok is false for other keys.
func (c *FetcherConfig) Apply(k, v string) (ok bool, err error) {
	atLeast := func(low int64) (int64, error) {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < low {
			return 0, fmt.Errorf("broker: config %s=%q: not a number of at least %d", k, v, low)
		}
		return n, nil
	}
	var n int64
	switch k {
	case "replica.fetch.max.bytes":
		n, err = atLeast(0)
		c.MaxBytes = int32(n)
	case "replica.fetch.response.max.bytes":
		n, err = atLeast(0)
		c.ResponseMaxBytes = int32(n)
	case "replica.fetch.min.bytes":
		n, err = atLeast(1)
		c.MinBytes = int32(n)
	case "replica.fetch.wait.max.ms":
		n, err = atLeast(1)
		c.WaitMax = time.Duration(n) * time.Millisecond
	case "replica.fetch.backoff.ms":
		n, err = atLeast(0)
		c.Backoff = time.Duration(n) * time.Millisecond
		if n == 0 {
			c.Backoff = time.Millisecond // 0 means retry at once; the zero value means the default
		}
	case "num.replica.fetchers":
		n, err = atLeast(1)
		c.Fetchers = int(n)
	default:
		return false, nil
	}
	return true, err
}
