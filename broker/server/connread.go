package server

// Reading a request off a connection, within its bounds:
//
//   - connections.max.idle.ms: waiting for a request's first byte after the
//     last response, the connection is closed when the bound passes (the
//     read deadline is set a hundredth of the bound beyond it and refreshed
//     only once it is nearer than the bound, so the close comes up to 1%
//     late, never early; this saves a timer update per request);
//   - socket.request.receive.timeout.ms: from the first byte the connection
//     waits for (or from the request's first byte, if it had to wait for no
//     other), the whole request must arrive within the bound, waits for
//     request memory included, or the connection is closed;
//   - socket.request.max.bytes (before SASL authentication
//     sasl.server.max.receive.size, sasl.go): a larger declared size
//     closes it at once.
//
// A request of up to 64 KiB (with its size prefix) is read in the
// connection's read buffer and handled there; a larger one is read into the
// connection's region as the request pool grants it memory (reqpool.go).
// Either way the frame stays valid until requestDone.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sluice-io/sluice/wire"
)

// errIdle ends a connection silent for connections.max.idle.ms.
var errIdle = errors.New("broker: connection idle")

// errReceiveTimeout ends a connection whose request did not arrive whole
// within socket.request.receive.timeout.ms.
var errReceiveTimeout = errors.New("broker: request not received in time")

// readRequest reads the next request frame, which is valid (and may be
// written to) until requestDone.
func (c *Conn) readRequest() ([]byte, error) {
	if c.r.Buffered() == 0 {
		c.armIdle()
		if _, err := c.r.Peek(1); err != nil {
			if isTimeout(err) && !c.closed.Load() {
				return nil, errIdle
			}
			return nil, err
		}
	}
	rd := receiving{c: c}
	if c.r.Buffered() < 4 {
		rd.arm()
	}
	prefix, err := c.r.Peek(4)
	if err != nil {
		return nil, rd.failed(err, "size prefix", int64(c.r.Buffered()), 4)
	}
	size, err := wire.FrameSize(prefix, c.MaxRequestBytes)
	if err != nil {
		return nil, err
	}
	n := int(size)
	if 4+n <= c.r.Size() {
		if c.r.Buffered() < 4+n {
			rd.arm()
		}
		b, err := c.r.Peek(4 + n)
		if err != nil {
			return nil, rd.failed(err, "frame", int64(c.r.Buffered()-4), int64(n))
		}
		c.pending = 4 + n
		return b[4 : 4+n : 4+n], nil
	}
	rd.arm()
	c.r.Discard(4)
	return c.readIntoRegion(&rd, int64(n))
}

// readIntoRegion reads a request of n bytes into the connection's region,
// claiming its memory as the bytes arrive.
func (c *Conn) readIntoRegion(rd *receiving, n int64) ([]byte, error) {
	p := c.srv.pool
	if c.region == nil {
		r, err := p.region()
		if err != nil {
			return nil, err
		}
		c.region = r
	}
	r := c.region
	p.begin(r, n)
	c.inRegion = true
	var got int64
	for got < n {
		// r.claim changes only in grow (and in the pool, while grow waits),
		// called by this goroutine.
		if got == r.claim {
			if got == 0 {
				// Nothing is claimed before the first byte is here.
				if _, err := c.r.Peek(1); err != nil {
					return nil, rd.failed(err, "frame", 0, n)
				}
			}
			if err := p.grow(r, rd.deadline, c.srv.closing); err != nil {
				return nil, rd.failed(err, "frame", got, n)
			}
		}
		m, err := c.r.Read(r.mem[got:min(r.claim, n)])
		got += int64(m)
		if err != nil && got < n {
			return nil, rd.failed(err, "frame", got, n)
		}
	}
	return r.mem[:n:n], nil
}

// requestDone ends the request readRequest returned: its bytes leave the
// read buffer, or its region memory goes back to the pool.
func (c *Conn) requestDone() {
	if c.pending > 0 {
		c.r.Discard(c.pending)
		c.pending = 0
	}
	if c.inRegion {
		c.srv.pool.end(c.region)
		c.inRegion = false
	}
}

// closeRegion gives the connection's region back to the pool.
func (c *Conn) closeRegion() {
	if c.region != nil {
		c.srv.pool.putRegion(c.region)
		c.region, c.inRegion = nil, false
	}
}

// armIdle sets the read deadline for a wait between requests, unless the
// one set is an idle deadline at least the bound away.
func (c *Conn) armIdle() {
	idle := c.srv.o.Network.ConnectionsMaxIdle
	if idle <= 0 {
		if c.deadlineIdle || !c.deadline.IsZero() {
			c.setReadDeadline(time.Time{}, true)
		}
		return
	}
	now := time.Now()
	if c.deadlineIdle && c.deadline.Sub(now) >= idle {
		return
	}
	c.setReadDeadline(now.Add(idle+idle/100), true)
}

// setReadDeadline sets the connection's read deadline, unless stopReading
// has been called, whose deadline stands.
func (c *Conn) setReadDeadline(t time.Time, idle bool) {
	c.nc.SetReadDeadline(t)
	c.deadline, c.deadlineIdle = t, idle
	if c.closed.Load() { // stopReading stores closed before its deadline
		c.nc.SetReadDeadline(time.Now())
	}
}

// receiving is one request's receive bound.
type receiving struct {
	c        *Conn
	armed    bool
	deadline time.Time // zero: none
}

// arm sets the read deadline to the receive bound, once, when the request
// has to wait for bytes.
func (rd *receiving) arm() {
	if rd.armed {
		return
	}
	rd.armed = true
	if t := rd.c.srv.o.Network.RequestReceiveTimeout; t > 0 {
		rd.deadline = time.Now().Add(t)
	}
	rd.c.setReadDeadline(rd.deadline, false)
}

// failed explains a read of a request's part (got of want bytes) that
// failed with err.
func (rd *receiving) failed(err error, part string, got, want int64) error {
	switch {
	case rd.c.closed.Load(), errors.Is(err, errPoolClosed):
		return errPoolClosed
	case isTimeout(err) || errors.Is(err, errPoolTimeout):
		return fmt.Errorf("%w: %d of the %d bytes of its %s within %v (socket.request.receive.timeout.ms)", errReceiveTimeout, got, want, part, rd.c.srv.o.Network.RequestReceiveTimeout)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		if part == "size prefix" {
			return fmt.Errorf("%w: size prefix cut short", wire.ErrBadFrame)
		}
		return fmt.Errorf("%w: %d-byte frame cut short after %d bytes", wire.ErrBadFrame, want, got)
	}
	return err
}

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
