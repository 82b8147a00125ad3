package broker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/wire"
)

// errCloseConn asks the connection loop to close without answering (a
// Produce with acks=0 that failed, as Kafka does).
var errCloseConn = errors.New("broker: close connection")

const (
	readBufSize = 64 << 10 // also the largest request (with its size prefix) read in it
	keepOutBuf  = 1 << 20  // response buffers above this are dropped after use
)

// conn is one client connection.
type conn struct {
	b      *Broker
	nc     net.Conn
	r      *bufio.Reader
	out    []byte
	fetch  wireFetch
	wake   chan struct{} // this connection's fetch waiter
	closed atomic.Bool   // stop reading new requests
	// fetchFollower: the last Fetch was a replica's (its metrics,
	// requestlog.go).
	fetchFollower bool

	// ln is the listener the connection came on (listeners.go).
	ln *listener
	// principal is who the connection acts as (principal.go).
	principal Principal
	// host is the client's IP address as ACLs name hosts, once asked
	// (authorize.go).
	host string
	// sasl is the SASL state on a SASL listener (sasl.go), else nil.
	sasl *saslConn

	// The request in hand and where it is (connread.go).
	pending      int     // bytes of c.r it occupies, if it is read there
	region       *region // for requests above readBufSize, once one came
	inRegion     bool    // it is in region, with memory claimed from the pool
	deadline     time.Time
	deadlineIdle bool // deadline is an idle one (armIdle)
}

func newConn(b *Broker, nc net.Conn) *conn {
	return &conn{b: b, nc: nc, r: bufio.NewReaderSize(nc, readBufSize), wake: make(chan struct{}, 1), principal: Anonymous}
}

// stopReading makes the loop end after the request in hand.
func (c *conn) stopReading() {
	c.closed.Store(true)
	c.nc.SetReadDeadline(time.Now())
}

func (c *conn) serve() {
	defer c.nc.Close()
	defer c.closeRegion()
	log := c.b.log.With("remote", c.nc.RemoteAddr().String())
	for !c.closed.Load() {
		frame, err := c.readRequest()
		if err != nil {
			switch {
			case errors.Is(err, errIdle):
				log.Debug("closing idle connection", "connections.max.idle.ms", c.b.cfg.Network.ConnectionsMaxIdle.Milliseconds())
			case !errors.Is(err, io.EOF) && !c.closed.Load() && !errors.Is(err, net.ErrClosed) && !errors.Is(err, errPoolClosed):
				log.Info("closing connection", "err", err)
			}
			return
		}
		var start time.Time
		if c.b.timeRequests {
			start = time.Now()
		}
		err = c.handle(frame)
		if c.b.timeRequests {
			c.requestServed(frame, time.Since(start)) // requestlog.go
		}
		if requestHandled != nil {
			requestHandled(frame)
		}
		c.requestDone()
		if err != nil {
			if !errors.Is(err, errCloseConn) {
				log.Info("closing connection", "err", err)
			}
			return
		}
	}
}

// requestHandled, when set, is called with each request's frame once the
// request is handled and its response written, before the frame's memory
// goes to the next request. It is a seam for tests, which overwrite the
// frame to prove that no handler keeps request bytes past their request:
// kmsg decodes byte fields as views into the frame, so whatever outlives the
// request (group member metadata, assignments) must be copied. Set it
// before any broker starts; it is never changed while connections run.
var requestHandled func(frame []byte)

// handle serves one request frame.
func (c *conn) handle(frame []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			c.b.log.Error("panic handling request; closing the connection", "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("broker: panic: %v", r)
		}
	}()
	if c.sasl != nil && c.sasl.raw {
		return c.saslRawToken(frame)
	}
	h, err := wire.ParseHeader(frame)
	if err != nil {
		return err
	}
	if c.sasl != nil {
		if err := c.saslGate(h.Key); err != nil {
			return err
		}
	}
	api, ok := apis[h.Key]
	if !ok {
		return fmt.Errorf("%w: %d", wire.ErrUnknownAPIKey, h.Key)
	}
	if h.Version < api.min || h.Version > api.max {
		if h.Key == wire.ApiVersionsKey {
			return c.write(h.CorrelationID, unsupportedApiVersions())
		}
		return fmt.Errorf("broker: %s v%d is not served (v%d to v%d)", kmsg.NameForKey(h.Key), h.Version, api.min, api.max)
	}
	h, req, err := wire.ParseRequest(frame)
	if err != nil {
		return err
	}
	resp, err := api.handle(c, h, req)
	if err != nil {
		return err
	}
	if resp == nil {
		return nil
	}
	return c.write(h.CorrelationID, resp)
}

// write sends one response.
func (c *conn) write(correlationID int32, resp kmsg.Response) error {
	c.out = wire.AppendResponse(c.out[:0], correlationID, resp)
	_, err := c.nc.Write(c.out)
	if cap(c.out) > keepOutBuf {
		c.out = nil
	}
	return err
}

// api is a served API key.
type api struct {
	min, max int16
	handle   func(c *conn, h wire.Header, req kmsg.Request) (kmsg.Response, error)
}

// apis are the served keys and versions; ApiVersions advertises exactly
// these. Each handler file registers its key.
var apis = map[int16]api{}

func register(key, min, max int16, handle func(*conn, wire.Header, kmsg.Request) (kmsg.Response, error)) {
	apis[key] = api{min: min, max: max, handle: handle}
}
