package tlsconf

// Dialer: a TLS client connection as a broker's own clients (the
// controller's, the replica fetchers') open one to another broker.

import (
	"context"
	"crypto/tls"
	"net"
)

// Dialer returns a dial function that connects to addr over TCP and
// completes a TLS handshake with cfg within ctx, the server name being
// addr's host unless cfg names one.
func Dialer(cfg *tls.Config) func(ctx context.Context, addr string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		nc, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		c := cfg
		if c.ServerName == "" {
			c = cfg.Clone()
			c.ServerName, _, _ = net.SplitHostPort(addr)
		}
		tc := tls.Client(nc, c)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		return tc, nil
	}
}
