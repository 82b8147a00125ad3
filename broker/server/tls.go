package server

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
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/security/tlsconf"
)

// tlsSide is a TLS listener's server side.
type tlsSide struct {
	srv     *tlsconf.Server
	cfg     *tls.Config
	timeout time.Duration
	// certPrincipal: the certificate gives the principal (SSL), not SASL.
	certPrincipal bool
}

func newTLSSide(cfg config.TLSConfig, listener, protocol string, log *slog.Logger) (*tlsSide, error) {
	srv, err := cfg.Server(listener, log)
	if err != nil {
		return nil, err
	}
	return &tlsSide{srv: srv, cfg: srv.Config(), timeout: cfg.HandshakeTimeout, certPrincipal: protocol == "SSL"}, nil
}

// handshakeTLS is a TLS listener's accept hook, on the connection's
// goroutine: the server handshake, bounded by ssl.handshake.timeout.ms and
// the broker's closing. Its error is logged by the caller, with the
// listener and the client's address.
func (s *Server) handshakeTLS(t *tlsSide, nc net.Conn) (net.Conn, error) {
	tc := tls.Server(nc, t.cfg)
	ctx, cancel := context.WithTimeout(context.Background(), t.timeout)
	defer cancel()
	go func() {
		select {
		case <-s.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("TLS handshake failed: %w", err)
	}
	return tc, nil
}

// tlsPrincipal sets the principal of a connection on an SSL listener from
// its client certificate; an error closes the connection.
func (c *Conn) tlsPrincipal(log *slog.Logger) error {
	if c.ln.tls == nil || !c.ln.tls.certPrincipal {
		return nil
	}
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return nil
	}
	name, err := c.ln.tls.srv.Principal(tc.ConnectionState())
	if err != nil {
		log.Info("closing connection: TLS client certificate not mapped to a principal", "err", err)
		return err
	}
	c.Principal = acl.Principal{Type: PrincipalUser, Name: name}
	log.Debug("TLS client authenticated", "principal", c.Principal.String())
	return nil
}

// tlsStreamBuf is the buffer streamed responses of TLS connections go
// through.
const tlsStreamBuf = 64 << 10

// Stream is where a response written in pieces goes (a fetch response,
// whose records a plaintext connection sends by sendfile: the socket
// itself), then Flush. On TLS it is a 64 KiB buffer that hides its
// ReadFrom, so records are copied in their reader's chunks through it.
func (c *Conn) Stream() io.Writer {
	if !c.IsTLS() {
		return c.nc
	}
	if c.tlsOut == nil {
		c.tlsOut = bufio.NewWriterSize(c.nc, tlsStreamBuf)
	}
	return onlyWriter{c.tlsOut}
}

// Flush sends what Stream buffered.
func (c *Conn) Flush() error {
	if c.tlsOut == nil || c.tlsOut.Buffered() == 0 {
		return nil
	}
	return c.tlsOut.Flush()
}

// onlyWriter hides bufio.Writer's ReadFrom, so the records are copied in
// the view's 64 KiB chunks through the buffer.
type onlyWriter struct{ w io.Writer }

func (o onlyWriter) Write(p []byte) (int, error) { return o.w.Write(p) }
