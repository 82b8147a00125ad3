package config

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// ObservabilityConfig is the metrics endpoint and the logs: sluice's own
// keys (Kafka exports JMX and configures log4j instead). The zero value is
// Kafka's behaviour: no endpoint, info logs as text, no slow-request log.
type ObservabilityConfig struct {
	// MetricsListen is metrics.listen (sluice broker --metrics-addr),
	// host:port of the HTTP listener serving /metrics, /healthz and
	// /readyz (metricshttp.go). Default "": none, and no metric is kept,
	// so the request paths pay only a nil check.
	MetricsListen string
	// Pprof is metrics.pprof.enable: /debug/pprof on the same listener.
	// Default false.
	Pprof bool
	// LogLevel is log.level (--log-level): debug, info, warn or error.
	// Default info. At debug every request is logged (requestlog.go).
	LogLevel string
	// LogFormat is log.format (--log-format): text or json. Default text.
	LogFormat string
	// SlowRequest is log.slow.request.ms: a request that takes longer,
	// from its last byte read to its response written, is logged at info.
	// Default 0: none. A Fetch's time includes its wait for data
	// (max.wait.ms), a JoinGroup's and SyncGroup's the rebalance's.
	SlowRequest time.Duration
}

// Apply sets the field named by k; ok is false for a key not its own.
func (c *ObservabilityConfig) Apply(k, v string) (ok bool, err error) {
	switch k {
	case "metrics.listen":
		c.MetricsListen = v
	case "metrics.pprof.enable":
		if c.Pprof, err = strconv.ParseBool(v); err != nil {
			err = fmt.Errorf("broker: config %s=%q: not a boolean", k, v)
		}
	case "log.level":
		if _, err = ParseLogLevel(v); err != nil {
			err = fmt.Errorf("broker: config %s=%q: %w", k, v, err)
		}
		c.LogLevel = v
	case "log.format":
		if v != "text" && v != "json" {
			err = fmt.Errorf("broker: config %s=%q: text or json", k, v)
		}
		c.LogFormat = v
	case "log.slow.request.ms":
		var n int64
		if n, err = strconv.ParseInt(v, 10, 64); err != nil || n < 0 {
			err = fmt.Errorf("broker: config %s=%q: a number of milliseconds, at least 0", k, v)
		}
		c.SlowRequest = time.Duration(n) * time.Millisecond
	default:
		return false, nil
	}
	return true, err
}

// ParseLogLevel reads log.level: debug, info, warn (or warning) or error,
// in any case; "" is info.
func ParseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug", "trace":
		return slog.LevelDebug, nil
	case "", "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error", "fatal":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("unknown log level %q (debug, info, warn, error)", s)
}

// static adds the observability keys the configuration sets to m
// (layers.go's StaticBrokerConfigs).
func (c ObservabilityConfig) static(m map[string]string) {
	if c.MetricsListen != "" {
		m["metrics.listen"] = c.MetricsListen
	}
	if c.Pprof {
		m["metrics.pprof.enable"] = "true"
	}
	if c.LogLevel != "" {
		m["log.level"] = c.LogLevel
	}
	if c.LogFormat != "" {
		m["log.format"] = c.LogFormat
	}
	if c.SlowRequest != 0 {
		m["log.slow.request.ms"] = strconv.FormatInt(c.SlowRequest.Milliseconds(), 10)
	}
}
