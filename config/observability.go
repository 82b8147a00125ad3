package config

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// ObservabilityConfig is the metrics endpoint and the logs: sluice's own
// keys (Kafka exports JMX and configures log4j instead). The zero value is
// Kafka's behaviour: no endpoint, info logs as text, no slow-request log.
type ObservabilityConfig struct {
	// MetricsListen is metrics.listen (sluice broker --metrics-addr),
	// host:port of the HTTP listener serving /metrics, /healthz and
	// /readyz (metrics/http.go). Default "": none, and no metric is kept,
	// so the request paths pay only a nil check.
	MetricsListen string
	// Pprof is metrics.pprof.enable: /debug/pprof on the same listener.
	// Default false.
	Pprof bool
	// LogLevel is log.level (--log-level): debug, info, warn or error.
	// Default info. At debug every request is logged (broker/server/requestlog.go).
	LogLevel string
	// LogFormat is log.format (--log-format): text or json. Default text.
	LogFormat string
	// SlowRequest is log.slow.request.ms: a request that takes longer,
	// from its last byte read to its response written, is logged at info.
	// Default 0: none. A Fetch's time includes its wait for data
	// (max.wait.ms), a JoinGroup's and SyncGroup's the rebalance's.
	SlowRequest time.Duration
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

// logLevel is log.level's check: a level ParseLogLevel reads.
func logLevel(v configValue) string {
	if _, err := ParseLogLevel(v.s); err != nil {
		return err.Error()
	}
	return ""
}
