package config

// The static keys of client quotas (Kafka's QuotaConfig): how rates are
// measured. The quotas themselves are entity configs (security/quota/admin.go).
// Kafka 3.9 has no static quota values: quota.producer.default and
// quota.consumer.default were removed in 3.0, and sluice does not take
// them either.

import (
	"time"

	"github.com/sluice-io/sluice/security/quota"
)

// ClientQuotaConfig is quota.window.num, quota.window.size.seconds and
// their controller.quota.* counterparts (controller_mutation_rate's).
type ClientQuotaConfig struct {
	// WindowNum is quota.window.num: the samples a client's rate is
	// measured over (default 11).
	WindowNum int
	// WindowSize is quota.window.size.seconds: each sample's length
	// (default 1 s).
	WindowSize time.Duration
	// ControllerWindowNum and ControllerWindowSize are
	// controller.quota.window.num and controller.quota.window.size.seconds
	// (default 11 and 1 s): controller_mutation_rate's burst is their
	// product times the quota.
	ControllerWindowNum  int
	ControllerWindowSize time.Duration
}

func (c ClientQuotaConfig) QuotaConfig() quota.Config {
	return quota.Config{Samples: c.WindowNum, Window: c.WindowSize, MutationSamples: c.ControllerWindowNum, MutationWindow: c.ControllerWindowSize}
}
