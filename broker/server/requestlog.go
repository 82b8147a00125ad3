package server

// What the connection loop records of each request once its response is
// written: its count and time into the request metrics (package metrics), a
// debug log line per request (API, version, client id, size, time) when the
// logger takes debug, and an info line for one slower than
// log.slow.request.ms. With none of the three the loop does not read the
// clock (Server.timeRequests is false).

import (
	"context"
	"encoding/binary"
	"log/slog"
	"time"

	"github.com/sluice-io/sluice/metrics"
)

// requestServed records the request in frame, served in took; the frame is
// still the connection's (it is read before the next request).
func (c *Conn) requestServed(frame []byte, took time.Duration) {
	if len(frame) < 8 {
		return
	}
	key, version := int16(binary.BigEndian.Uint16(frame)), int16(binary.BigEndian.Uint16(frame[2:]))
	o := &c.srv.o
	if o.Metrics != nil {
		o.Metrics.Request(key, version, c.Follower, took)
	}
	slow := o.SlowRequest > 0 && took > o.SlowRequest
	level := slog.LevelDebug
	if slow {
		level = slog.LevelInfo
	}
	if !c.srv.log.Enabled(context.Background(), level) {
		return
	}
	msg := "request"
	if slow {
		msg = "slow request"
	}
	c.srv.log.Log(context.Background(), level, msg, "api", metrics.RequestName(key), "version", version,
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
