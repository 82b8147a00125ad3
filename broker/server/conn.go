package server

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

// ErrClose, returned by Session.Handle, closes the connection without
// logging why (a Produce with acks=0 that failed, as Kafka does; a failed
// SASL exchange the session has logged).
var ErrClose = errors.New("broker: close connection")

const (
	readBufSize = 64 << 10 // also the largest request (with its size prefix) read in it
	keepOutBuf  = 1 << 20  // response buffers above this are dropped after use
)

// Conn is one client connection. Its goroutine alone reads requests,
// calls its session and writes responses, so what it holds needs no lock
// (closed excepted: Stop sets it from another goroutine).
type Conn struct {
	srv    *Server
	nc     net.Conn
	r      *bufio.Reader
	out    []byte
	tlsOut *bufio.Writer // streamed responses of a TLS connection (tls.go)
	closed atomic.Bool   // stop reading new requests
	ln     *Listener

	// Principal is who the connection acts as: User:ANONYMOUS until an SSL
	// listener's client certificate or the session's SASL exchange
	// authenticates it.
	Principal acl.Principal
	// MaxRequestBytes bounds the size of the next request; the session
	// lowers it before SASL authentication (sasl.server.max.receive.size).
	MaxRequestBytes int32
	// Follower marks the request in hand as a replica's Fetch, so the
	// request metrics count it under FetchFollower (requestlog.go).
	Follower bool

	// The request in hand and where it is (connread.go).
	pending      int     // bytes of c.r it occupies, if it is read there
	region       *region // for requests above readBufSize, once one came
	inRegion     bool    // it is in region, with memory claimed from the pool
	deadline     time.Time
	deadlineIdle bool // deadline is an idle one (armIdle)
}

// Anonymous is the principal of a connection that did not authenticate,
// Kafka's principal of a PLAINTEXT connection.
var Anonymous = acl.Principal{Type: PrincipalUser, Name: "ANONYMOUS"}

// PrincipalUser is the type of every principal sluice builds.
const PrincipalUser = "User"

func newConn(s *Server, l *Listener, nc net.Conn) *Conn {
	return &Conn{srv: s, ln: l, nc: nc, r: bufio.NewReaderSize(nc, readBufSize), Principal: Anonymous, MaxRequestBytes: s.o.MaxRequestBytes}
}

// Listener is the listener the connection came on.
func (c *Conn) Listener() *Listener { return c.ln }

// RemoteAddr is the client's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// RemoteIP is the client's IP address, invalid for a non-IP connection.
func (c *Conn) RemoteIP() netip.Addr { return remoteIP(c.nc) }

// IsTLS reports whether the connection is encrypted.
func (c *Conn) IsTLS() bool {
	_, ok := c.nc.(*tls.Conn)
	return ok
}

// Stop makes the loop end after the request in hand.
func (c *Conn) Stop() {
	c.closed.Store(true)
	c.nc.SetReadDeadline(time.Now())
}

// Write sends one response.
func (c *Conn) Write(correlationID int32, resp kmsg.Response) error {
	c.out = wire.AppendResponse(c.out[:0], correlationID, resp)
	return c.flushOut()
}

// WriteFrame sends payload as one size-prefixed frame with no header (a
// SASL token after SaslHandshake v0).
func (c *Conn) WriteFrame(payload []byte) error {
	c.out = binary.BigEndian.AppendUint32(c.out[:0], uint32(len(payload)))
	c.out = append(c.out, payload...)
	return c.flushOut()
}

func (c *Conn) flushOut() error {
	_, err := c.nc.Write(c.out)
	if cap(c.out) > keepOutBuf {
		c.out = nil
	}
	return err
}

func (c *Conn) serve(sess Session, log *slog.Logger) {
	o := &c.srv.o
	for !c.closed.Load() {
		frame, err := c.readRequest()
		if err != nil {
			switch {
			case errors.Is(err, errIdle):
				log.Debug("closing idle connection", "connections.max.idle.ms", o.Network.ConnectionsMaxIdle.Milliseconds())
			case !errors.Is(err, io.EOF) && !c.closed.Load() && !errors.Is(err, net.ErrClosed) && !errors.Is(err, errPoolClosed):
				log.Info("closing connection", "err", err)
			}
			return
		}
		var start time.Time
		if c.srv.timeRequests {
			start = time.Now()
		}
		c.Follower = false
		err = sess.Handle(frame)
		if c.srv.timeRequests {
			c.requestServed(frame, time.Since(start)) // requestlog.go
		}
		if o.Handled != nil {
			o.Handled(frame)
		}
		c.requestDone()
		if err != nil {
			if !errors.Is(err, ErrClose) {
				log.Info("closing connection", "err", err)
			}
			return
		}
		sess.Between()
	}
}
