package broker

// TLS on a connection: the accept hook of SSL and SASL_SSL listeners wraps
// the TCP connection (no I/O on the accept goroutine), and the
// connection's own goroutine completes the handshake, bounded by
// ssl.handshake.timeout.ms, before reading any request. On an SSL listener
// the principal is then the client certificate's subject as
// ssl.principal.mapping.rules map it (ANONYMOUS without one); on SASL_SSL
// the SASL exchange sets it. A handshake that fails (a plaintext client, an
// untrusted or missing certificate) or a subject no rule maps is logged in
// one line with the client's address and closes that connection only.
//
// Fetch responses on a TLS connection are copied through the TLS writer,
// since sendfile cannot encrypt: a 64 KiB buffer gathers the response's
// small header pieces and the records (read in 64 KiB chunks, engine's
// View.WriteTo) so the writer sends full 16 KiB records, not a record per
// partition header.

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/sluice-io/sluice/security/tlsconf"
	"github.com/sluice-io/sluice/wire"
)

// tlsSide is a TLS listener's server side.
type tlsSide struct {
	srv     *tlsconf.Server
	cfg     *tls.Config
	timeout time.Duration
	// certPrincipal: the certificate gives the principal (SSL), not SASL.
	certPrincipal bool
}

func newTLSSide(cfg TLSConfig, listener, protocol string, log *slog.Logger) (*tlsSide, error) {
	srv, err := cfg.server(listener, log)
	if err != nil {
		return nil, err
	}
	return &tlsSide{srv: srv, cfg: srv.Config(), timeout: cfg.HandshakeTimeout, certPrincipal: protocol == "SSL"}, nil
}

// wrap is the listener's accept hook.
func (t *tlsSide) wrap(nc net.Conn) (net.Conn, error) {
	return tls.Server(nc, t.cfg), nil
}

// startTLS completes the handshake of c's TLS connection and sets its
// principal; an error has been logged and the connection is to close.
func (c *conn) startTLS(t *tlsSide, tc *tls.Conn, log *slog.Logger) error {
	tc.SetDeadline(time.Now().Add(t.timeout))
	if err := tc.Handshake(); err != nil {
		log.Info("TLS handshake failed; closing the connection", "err", err)
		return err
	}
	tc.SetDeadline(time.Time{})
	if !t.certPrincipal {
		return nil
	}
	name, err := t.srv.Principal(tc.ConnectionState())
	if err != nil {
		log.Info("TLS client certificate not mapped to a principal; closing the connection", "err", err)
		return err
	}
	c.principal = Principal{Type: principalUser, Name: name}
	log.Debug("TLS client authenticated", "principal", c.principal.String())
	return nil
}

// tlsFetchBuf is the buffer fetch responses of TLS connections go through.
const tlsFetchBuf = 64 << 10

// writeFetch writes a fetch response: straight to the socket (sendfile)
// on plaintext, through a buffer on TLS.
func (c *conn) writeFetch(correlationID int32, resp *wire.FetchResponse) error {
	if _, isTLS := c.nc.(*tls.Conn); !isTLS {
		_, err := c.fetch.w.Write(c.nc, correlationID, resp)
		return err
	}
	if c.tlsOut == nil {
		c.tlsOut = bufio.NewWriterSize(c.nc, tlsFetchBuf)
	}
	if _, err := c.fetch.w.Write(onlyWriter{c.tlsOut}, correlationID, resp); err != nil {
		return fmt.Errorf("broker: fetch response: %w", err)
	}
	return c.tlsOut.Flush()
}

// onlyWriter hides bufio.Writer's ReadFrom, so the records are copied in
// the view's 64 KiB chunks through the buffer.
type onlyWriter struct{ w io.Writer }

func (o onlyWriter) Write(p []byte) (int, error) { return o.w.Write(p) }
