package broker

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/wire"
)

// errCloseConn asks the connection loop to close without answering (a
// Produce with acks=0 that failed, as Kafka does).
var errCloseConn = errors.New("broker: close connection")

const (
	readBufSize  = 64 << 10
	keepFrameBuf = 1 << 20 // frame buffers above this are dropped after use
)

// conn is one client connection.
type conn struct {
	b      *Broker
	nc     net.Conn
	r      *bufio.Reader
	frame  []byte
	out    []byte
	fetch  wireFetch
	wake   chan struct{} // this connection's fetch waiter
	closed atomic.Bool   // stop reading new requests
}

func newConn(b *Broker, nc net.Conn) *conn {
	return &conn{b: b, nc: nc, r: bufio.NewReaderSize(nc, readBufSize), wake: make(chan struct{}, 1)}
}

// stopReading makes the loop end after the request in hand.
func (c *conn) stopReading() {
	c.closed.Store(true)
	c.nc.SetReadDeadline(time.Now())
}

func (c *conn) serve() {
	defer c.nc.Close()
	log := c.b.log.With("remote", c.nc.RemoteAddr().String())
	for !c.closed.Load() {
		buf, big := c.frameBuf()
		frame, err := wire.ReadFrame(c.r, buf, c.b.cfg.SocketRequestMaxBytes)
		if err != nil {
			if !errors.Is(err, io.EOF) && !c.closed.Load() && !errors.Is(err, net.ErrClosed) {
				log.Info("closing connection", "err", err)
			}
			return
		}
		if cap(frame) <= keepFrameBuf {
			c.frame = frame[:0]
		}
		err = c.handle(frame)
		if requestDone != nil {
			requestDone(frame)
		}
		if cap(frame) > keepFrameBuf {
			if big == nil {
				big = new([]byte)
			}
			*big = frame[:0]
			bigFrames.Put(big)
		}
		if err != nil {
			if !errors.Is(err, errCloseConn) {
				log.Info("closing connection", "err", err)
			}
			return
		}
	}
}

// requestDone, when set, is called with each request's frame once the
// request is handled and its response written, before the frame's memory
// goes to the next request. It is a seam for tests, which overwrite the
// frame to prove that no handler keeps request bytes past their request:
// kmsg decodes byte fields as views into the frame, so whatever outlives the
// request (group member metadata, assignments) must be copied. Set it
// before any broker starts; it is never changed while connections run.
var requestDone func(frame []byte)

// bigFrames holds frame buffers above keepFrameBuf between requests. A
// producer at full speed sends multi-megabyte requests back to back; taking
// their buffers from here, once the next frame's size is known, saves
// allocating and zeroing one per request, without every connection keeping
// its largest buffer while idle (the pool empties itself over GC cycles).
var bigFrames sync.Pool // of *[]byte

// frameBuf returns the buffer to read the next frame into: the
// connection's own, or, for a frame above keepFrameBuf (its size prefix is
// peeked, which waits for the request to start), one from bigFrames, whose
// holder (if any) is returned as big so that serve gives it back. A pooled
// buffer too small for the frame is dropped for a new one, a quarter larger
// than the frame.
func (c *conn) frameBuf() (buf []byte, big *[]byte) {
	sz, err := c.r.Peek(4)
	if err != nil {
		return c.frame, nil // ReadFrame reports it
	}
	n := int64(binary.BigEndian.Uint32(sz))
	if n <= int64(cap(c.frame)) || n <= keepFrameBuf || n > int64(c.b.cfg.SocketRequestMaxBytes) {
		return c.frame, nil
	}
	p, _ := bigFrames.Get().(*[]byte)
	if p != nil && int64(cap(*p)) >= n {
		return (*p)[:0], p
	}
	// None, or too small (dropped): a new one, with room for the next
	// frames of a producer, whose sizes vary, to fit.
	return make([]byte, 0, min(n+n/4, int64(c.b.cfg.SocketRequestMaxBytes))), p
}

// handle serves one request frame.
func (c *conn) handle(frame []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			c.b.log.Error("panic handling request; closing the connection", "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("broker: panic: %v", r)
		}
	}()
	h, err := wire.ParseHeader(frame)
	if err != nil {
		return err
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
	if cap(c.out) > keepFrameBuf {
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
