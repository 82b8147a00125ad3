package broker

import (
	"fmt"
	"runtime/debug"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/broker/server"
	"github.com/sluice-io/sluice/wire"
)

// conn is the broker's session on one client connection (server.Conn):
// what its handlers keep of it between requests.
type conn struct {
	*server.Conn
	b     *Broker
	fetch wireFetch
	wake  chan struct{} // this connection's fetch waiter
	// host is the client's IP address as ACLs name hosts, once asked
	// (authorize.go).
	host string
	// sasl is the SASL state on a SASL listener (sasl.go), else nil.
	sasl *saslConn
	// q is its client quotas' state (clientquotas.go).
	q connQuota
}

// sessions opens the broker's session on each connection the server
// accepts.
type sessions struct{ b *Broker }

func (s sessions) Open(sc *server.Conn) server.Session {
	c := &conn{Conn: sc, b: s.b, wake: make(chan struct{}, 1)}
	c.sasl = s.b.newSASLConn(sc.Listener())
	if c.sasl != nil {
		c.MaxRequestBytes = c.maxRequestBytes()
	}
	return c
}

// Between bounds the next request by the SASL state the last left
// (sasl.go), and makes a throttled client's next request wait
// (clientquotas.go).
func (c *conn) Between() {
	if c.sasl != nil {
		c.MaxRequestBytes = c.maxRequestBytes()
	}
	c.mute()
}

// requestHandled, when set, is called with each request's frame once the
// request is handled and its response written, before the frame's memory
// goes to the next request. It is a seam for tests, which overwrite the
// frame to prove that no handler keeps request bytes past their request:
// kmsg decodes byte fields as views into the frame, so whatever outlives the
// request (group member metadata, assignments) must be copied. Set it
// before any broker starts; it is never changed while connections run.
var requestHandled func(frame []byte)

// Handle serves one request frame.
func (c *conn) Handle(frame []byte) (err error) {
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
			return c.Write(h.CorrelationID, unsupportedApiVersions())
		}
		return fmt.Errorf("broker: %s v%d is not served (v%d to v%d)", kmsg.NameForKey(h.Key), h.Version, api.min, api.max)
	}
	h, req, err := wire.ParseRequest(frame)
	if err != nil {
		return err
	}
	c.quotaBegin(h, len(frame))
	resp, err := api.handle(c, h, req)
	if err != nil {
		return err
	}
	c.quotaEnd(resp)
	if resp == nil {
		return nil
	}
	return c.Write(h.CorrelationID, resp)
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
