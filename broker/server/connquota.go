package server

// Connection quotas: max.connections, max.connections.per.ip and its
// overrides, as Kafka's ConnectionQuotas applies them. The acceptor, having
// accepted a connection, waits while the broker is at max.connections (it
// accepts nothing more meanwhile: later connections wait in the kernel's
// listen backlog, and clients see their requests unanswered until a slot
// frees); then a connection from an address that already has its bound is
// closed at once, without a response, and counted nowhere.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"

	"github.com/sluice-io/sluice/config"
)

// errTooManyFromIP refuses a connection over its address's bound.
var errTooManyFromIP = errors.New("broker: too many connections from this address")

type connQuotas struct {
	max      int                // max.connections
	perIP    int                // max.connections.per.ip
	override map[netip.Addr]int // max.connections.per.ip.overrides, resolved

	mu struct {
		sync.Mutex
		total int
		byIP  map[netip.Addr]int
		freed chan struct{} // closed (and replaced) when a connection ends
	}
}

// newConnQuotas resolves the overrides' host names, as Kafka does when it
// reads its configuration.
func newConnQuotas(n config.NetworkConfig) (*connQuotas, error) {
	q := &connQuotas{max: config.MaxInt32, perIP: config.MaxInt32, override: map[netip.Addr]int{}}
	if n.MaxConnections != nil {
		q.max = int(*n.MaxConnections)
	}
	if n.MaxConnectionsPerIP != nil {
		q.perIP = int(*n.MaxConnectionsPerIP)
	}
	for host, count := range n.MaxConnectionsPerIPOverrides {
		if a, err := netip.ParseAddr(host); err == nil {
			q.override[a.Unmap()] = int(count)
			continue
		}
		ips, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", host)
		if err != nil {
			return nil, fmt.Errorf("broker: max.connections.per.ip.overrides: host %q: %w", host, err)
		}
		for _, a := range ips {
			q.override[a.Unmap()] = int(count)
		}
	}
	q.mu.byIP = map[netip.Addr]int{}
	q.mu.freed = make(chan struct{})
	return q, nil
}

// remoteIP is a connection's peer address, invalid for a non-IP one
// (which no per-address bound applies to).
func remoteIP(nc net.Conn) netip.Addr {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// inc counts a new connection from ip, waiting while the broker is at
// max.connections (until closing is closed: net.ErrClosed). A connection
// over its address's bound is errTooManyFromIP and not counted.
func (q *connQuotas) inc(ip netip.Addr, closing <-chan struct{}) error {
	q.mu.Lock()
	for q.mu.total >= q.max {
		freed := q.mu.freed
		q.mu.Unlock()
		select {
		case <-freed:
		case <-closing:
			return net.ErrClosed
		}
		q.mu.Lock()
	}
	defer q.mu.Unlock()
	if ip.IsValid() {
		limit, ok := q.override[ip]
		if !ok {
			limit = q.perIP
		}
		if q.mu.byIP[ip] >= limit {
			return fmt.Errorf("%w: %s has the maximum of %d", errTooManyFromIP, ip, limit)
		}
		q.mu.byIP[ip]++
	}
	q.mu.total++
	return nil
}

// dec uncounts a connection that inc counted.
func (q *connQuotas) dec(ip netip.Addr) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if ip.IsValid() {
		if q.mu.byIP[ip]--; q.mu.byIP[ip] <= 0 {
			delete(q.mu.byIP, ip)
		}
	}
	q.mu.total--
	close(q.mu.freed)
	q.mu.freed = make(chan struct{})
}
