package config

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// NetworkConfig bounds what clients can hold of the broker: the memory of
// their requests, their connections and the time a connection may stay
// silent or take to send a request. Zero fields take the defaults.
type NetworkConfig struct {
	// QueuedMaxRequestBytes is queued.max.request.bytes, the bound on the
	// bytes held by requests being read or waiting to be handled
	// (broker/server/reqpool.go). Default (0): an eighth of the memory available to the
	// process (physical memory, its cgroup's limit or GOMEMLIMIT, the
	// least), and at least what socket.request.max.bytes needs (8/7 of
	// it); negative: no bound, as Kafka's default -1.
	QueuedMaxRequestBytes int64

	// RequestReceiveTimeout is socket.request.receive.timeout.ms, sluice's
	// key: a request not received whole this long after its first byte
	// (waits for request memory included) closes its connection, so a
	// trickling client cannot hold memory for ever. Default 30 s (Kafka's
	// request.timeout.ms: a client has given the request up by then);
	// negative: no bound.
	RequestReceiveTimeout time.Duration

	// MaxConnections is max.connections: while the broker has this many
	// connections it accepts no more (Kafka's acceptor blocks; new
	// connections wait in the listen backlog). nil: no bound (Kafka's
	// 2147483647).
	MaxConnections *int32

	// MaxConnectionsPerIP is max.connections.per.ip: a connection from an
	// address that already has this many is closed at once. nil: no bound;
	// 0 is allowed only with overrides (only the addresses they name may
	// connect), as in Kafka.
	MaxConnectionsPerIP *int32

	// MaxConnectionsPerIPOverrides is max.connections.per.ip.overrides,
	// "host:count,host:count": a host name (every address it resolves to
	// when the broker starts) or IP address, and its own bound.
	MaxConnectionsPerIPOverrides map[string]int32

	// ConnectionsMaxIdle is connections.max.idle.ms: a connection that sends
	// no request for this long after its last response is closed. Default
	// 10 minutes; negative: never.
	ConnectionsMaxIdle time.Duration
}

const (
	defaultRequestReceiveTimeout = 30 * time.Second
	defaultConnectionsMaxIdle    = 10 * time.Minute
)

// WithDefaults fills zero fields; maxRequest is socket.request.max.bytes.
func (n NetworkConfig) WithDefaults(maxRequest int32) NetworkConfig {
	if n.QueuedMaxRequestBytes == 0 {
		n.QueuedMaxRequestBytes = DefaultRequestPool(maxRequest)
	}
	if n.RequestReceiveTimeout == 0 {
		n.RequestReceiveTimeout = defaultRequestReceiveTimeout
	}
	if n.ConnectionsMaxIdle == 0 {
		n.ConnectionsMaxIdle = defaultConnectionsMaxIdle
	}
	return n
}

// msOrNever is a .ms value: negative is -1 (no bound), 0 the smallest
// bound (1 ms) rather than the default.
func msOrNever(n int64) time.Duration {
	if n < 0 {
		return -1
	}
	return max(SaturatingMs(n), time.Millisecond)
}

// Validate checks the rules between keys that Kafka checks at start.
func (n NetworkConfig) Validate() error {
	if n.MaxConnectionsPerIP != nil && *n.MaxConnectionsPerIP == 0 && len(n.MaxConnectionsPerIPOverrides) == 0 {
		return fmt.Errorf("broker: max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set")
	}
	return nil
}

// parseConnectionOverrides reads Kafka's "host:count,host:count" (the count
// after the last colon, so that IPv6 addresses work; brackets are
// optional). It returns why a value is refused, or "".
func parseConnectionOverrides(s string) (map[string]int32, string) {
	out := map[string]int32{}
	for _, entry := range listSplit.Split(strings.TrimSpace(s), -1) {
		if entry == "" {
			continue
		}
		i := strings.LastIndex(entry, ":")
		if i < 0 {
			return nil, fmt.Sprintf("entry %q is not host:count", entry)
		}
		host := strings.Trim(strings.TrimSpace(entry[:i]), "[]")
		count, err := strconv.ParseInt(strings.TrimSpace(entry[i+1:]), 10, 32)
		if host == "" || err != nil || count < 0 {
			return nil, fmt.Sprintf("entry %q is not host:count with a count of at least 0", entry)
		}
		out[host] = int32(count)
	}
	return out, ""
}

// connectionOverrides is the catalogue's check of the overrides' format.
func connectionOverrides(v configValue) string {
	_, why := parseConnectionOverrides(v.s)
	return why
}

// MaxInt32 is Kafka's Int.MaxValue default of the connection bounds.
const MaxInt32 = math.MaxInt32

// SmallRequest is the largest request that draws on the small area.
const SmallRequest = 1 << 20

// UnboundedPool is the limit standing for queued.max.request.bytes <= 0
// (Kafka's default, -1: no bound); it leaves room for sums.
const UnboundedPool = math.MaxInt64 / 4

// MinRequestPool is the least queued.max.request.bytes a broker accepting
// requests of maxRequest bytes needs: the big area, which is P less the
// eighth kept for small requests, must hold one such request.
func MinRequestPool(maxRequest int32) int64 {
	lane := PageUp(int64(maxRequest))
	p := max(lane*8/7-8, 8*PageUp(min(SmallRequest, int64(maxRequest))))
	for p-p/8 < lane { // a few steps from just below it
		p++
	}
	return p
}

// DefaultRequestPool is sluice's default queued.max.request.bytes: an
// eighth of the memory available to the process (AvailableMemory), and at
// least MinRequestPool, rounded up to MiB.
func DefaultRequestPool(maxRequest int32) int64 {
	p := max(AvailableMemory()/8, MinRequestPool(maxRequest))
	return (p + 1<<20 - 1) >> 20 << 20
}

// PageSize is the unit of region accounting.
var PageSize = int64(unix.Getpagesize())

// PageUp rounds n up to a multiple of the page size.
func PageUp(n int64) int64 { return (n + PageSize - 1) / PageSize * PageSize }

// requestPoolField is queued.max.request.bytes: 0 and below are no bound
// (-1), as in Kafka; the zero value is sluice's default.
var requestPoolField = custom(func(c *Config, _ string, v configValue) error {
	c.Network.QueuedMaxRequestBytes = v.n
	if v.n == 0 {
		c.Network.QueuedMaxRequestBytes = -1
	}
	return nil
}, func(c *Config) (string, bool) {
	n := c.Network.QueuedMaxRequestBytes
	return strconv.FormatInt(max(n, -1), 10), n != 0
})

// connectionOverridesField is max.connections.per.ip.overrides,
// host:count[,host:count...] (checked by the row's connectionOverrides).
var connectionOverridesField = custom(func(c *Config, _ string, v configValue) error {
	c.Network.MaxConnectionsPerIPOverrides, _ = parseConnectionOverrides(v.s)
	return nil
}, func(c *Config) (string, bool) {
	o := c.Network.MaxConnectionsPerIPOverrides
	var parts []string
	for _, host := range slices.Sorted(maps.Keys(o)) {
		parts = append(parts, host+":"+strconv.Itoa(int(o[host])))
	}
	return strings.Join(parts, ","), len(o) > 0
})
