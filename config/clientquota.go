package config

// The static keys of client quotas (Kafka's QuotaConfig): how rates are
// measured. The quotas themselves are entity configs (clientquotas.go).
// Kafka 3.9 has no static quota values: quota.producer.default and
// quota.consumer.default were removed in 3.0, and sluice does not take
// them either.

import (
	"fmt"
	"strconv"
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

func (c *ClientQuotaConfig) Apply(k, v string) (ok bool, err error) {
	switch k {
	case "quota.window.num", "quota.window.size.seconds", "controller.quota.window.num", "controller.quota.window.size.seconds":
		n, perr := strconv.ParseInt(v, 10, 32)
		if perr != nil || n < 1 {
			return true, fmt.Errorf("broker: config %s=%q: not a number of at least 1", k, v)
		}
		switch k {
		case "quota.window.num":
			c.WindowNum = int(n)
		case "quota.window.size.seconds":
			c.WindowSize = time.Duration(n) * time.Second
		case "controller.quota.window.num":
			c.ControllerWindowNum = int(n)
		default:
			c.ControllerWindowSize = time.Duration(n) * time.Second
		}
		return true, nil
	}
	return false, nil
}

// static adds the keys the configuration sets to m.
func (c ClientQuotaConfig) static(m map[string]string) {
	if c.WindowNum > 0 {
		m["quota.window.num"] = strconv.Itoa(c.WindowNum)
	}
	if c.WindowSize > 0 {
		m["quota.window.size.seconds"] = strconv.FormatInt(int64(c.WindowSize/time.Second), 10)
	}
	if c.ControllerWindowNum > 0 {
		m["controller.quota.window.num"] = strconv.Itoa(c.ControllerWindowNum)
	}
	if c.ControllerWindowSize > 0 {
		m["controller.quota.window.size.seconds"] = strconv.FormatInt(int64(c.ControllerWindowSize/time.Second), 10)
	}
}

func (c ClientQuotaConfig) QuotaConfig() quota.Config {
	return quota.Config{Samples: c.WindowNum, Window: c.WindowSize, MutationSamples: c.ControllerWindowNum, MutationWindow: c.ControllerWindowSize}
}
