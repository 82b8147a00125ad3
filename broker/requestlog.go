package broker

// What the connection loop records of each request once its response is
// written: its count and time into the request metrics (metrics.go), a
// debug log line per request (API, version, client id, size, time) when the
// logger takes debug, and an info line for one slower than
// log.slow.request.ms. With none of the three the loop does not read the
// clock (Broker.observeRequests is false).

import (
	"context"
	"encoding/binary"
	"log/slog"
	"time"

	"github.com/sluice-io/sluice/metrics"
)

// observesRequests reports whether requests are timed at all.
func (b *Broker) observesRequests() bool {
	return b.metrics != nil || b.cfg.Observability.SlowRequest > 0 || b.log.Enabled(context.Background(), slog.LevelDebug)
}

// requestServed records the request in frame, served in took; the frame is
// still the connection's (it is read before the next request).
func (c *conn) requestServed(frame []byte, took time.Duration) {
	if len(frame) < 8 {
		return
	}
	key, version := int16(binary.BigEndian.Uint16(frame)), int16(binary.BigEndian.Uint16(frame[2:]))
	b := c.b
	if b.metrics != nil {
		b.metrics.Request(key, version, c.fetchFollower, took)
	}
	slow := b.cfg.Observability.SlowRequest > 0 && took > b.cfg.Observability.SlowRequest
	level := slog.LevelDebug
	if slow {
		level = slog.LevelInfo
	}
	if !b.log.Enabled(context.Background(), level) {
		return
	}
	msg := "request"
	if slow {
		msg = "slow request"
	}
	b.log.Log(context.Background(), level, msg, "api", metrics.RequestName(key), "version", version,
		"client_id", clientIDOf(frame), "remote", c.nc.RemoteAddr().String(), "bytes", len(frame), "took", took)
}

// clientIDOf reads a request header's client id (a nullable string after
// key, version and correlation id); "" when null or cut short.
func clientIDOf(frame []byte) string {
	if len(frame) < 10 {
		return ""
	}
	n := int16(binary.BigEndian.Uint16(frame[8:]))
	if n < 0 || len(frame) < 10+int(n) {
		return ""
	}
	return string(frame[10 : 10+int(n)])
}
