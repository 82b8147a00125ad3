// Package interbroker is a broker's client of the other brokers: the
// controller's connections to them (the network half of Kafka's
// ControllerChannelManager; coordinator/zk's sender.go is the queue half),
// and the follower fetchers', the ISR changes', the transaction markers',
// the KIP-890 verification's and the consumer-lag sampler's requests. One
// TCP connection per broker, to the address an AddressBook gives for it
// (coordinator/zk's Client reads the registration /brokers/ids/<id>),
// opened on the first request and kept for the next ones; the address is
// looked up again at every (re)connect, so a broker that restarted at a new
// address is found. Requests are framed as any Kafka client frames them
// (wire.AppendRequest: header v1, v2 for flexible versions), with the client
// id "sluice-controller-<id>" (or the one Options names) and correlation
// ids increasing per broker; the response is read with its header and
// decoded at the request's version.
//
// Any failure closes the connection, so the next request starts on a new
// one and never reads the answer to an earlier request. A request is
// bounded by the request timeout (Kafka's controller.socket.timeout.ms)
// from dial to response, and by its context. A kept connection the broker
// closed meanwhile (it restarted: EOF or a reset before any byte of the
// answer) is not an error of the request: it is sent once more on a new
// connection, within the same timeout. Control requests may arrive twice
// that way, as they may when the driver retries; their epochs make a
// repeat harmless.
//
// Lock order: Client.mu is released before a broker link's turn is taken;
// the turn is held for one request, the address book's lookup included.
package interbroker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/wire"
)

// AddressBook gives the address ("host:port") of a broker's endpoint on
// a listener ("": its first endpoint), or why there is none.
type AddressBook interface {
	BrokerAddress(broker int32, listener string) (string, error)
}

// Options configure a Client; the zero value is Kafka's defaults.
type Options struct {
	// Listener names the listener whose advertised endpoint is dialled
	// (Kafka's control.plane.listener.name, else
	// inter.broker.listener.name). Default "": each broker's first
	// endpoint.
	Listener string
	// RequestTimeout bounds one request, dial included
	// (controller.socket.timeout.ms, default 30 s).
	RequestTimeout time.Duration
	// MaxResponse bounds a response frame (default wire.DefaultMaxFrame).
	MaxResponse int32
	// ClientID is the requests' client id (default
	// "sluice-controller-<self>").
	ClientID string
	// Dial opens the connection to a broker's endpoint addr ("host:port"),
	// within ctx. Default: a TCP connection. The broker sets it to dial
	// with TLS when its inter-broker listener is SSL or SASL_SSL
	// (tlsconf.Dialer); any authentication after the dial is not its job.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// ReuseResponses reads every response from a broker into one buffer,
	// kept with the link to that broker: the byte fields of a response (a
	// Fetch's records) then alias memory that the next request to the same
	// broker overwrites. For a caller done with each response before its
	// next request to that broker, as the follower fetchers are, which
	// would otherwise allocate a buffer the size of every answer (about
	// the size of the records it carries). The buffer keeps the size of
	// the largest response read. Default false: a buffer per response.
	ReuseResponses bool
	// Handshake, if set, runs on every new connection after it is dialled
	// (and after any Dial hook's wrapping) and before its first request:
	// the SASL exchange of an inter-broker listener that needs one. Its
	// I/O is bounded by ctx's deadline (the request timeout); an error
	// closes the connection and fails the request. Default nil: none.
	Handshake func(ctx context.Context, conn net.Conn) error
}

// Errors of Client.Send, wrapped with the request and broker; the
// AddressBook's errors are returned wrapped as they are.
var (
	// ErrRequestTimeout is a request not answered within the request
	// timeout.
	ErrRequestTimeout = errors.New("interbroker: request timed out")
	// ErrClosed is a request after Close.
	ErrClosed = errors.New("interbroker: client closed")
)

// Client sends requests to the brokers' Kafka listeners. It may be used
// from several goroutines; requests to one broker go one at a time.
type Client struct {
	book     AddressBook
	clientID string
	o        Options

	mu struct {
		sync.Mutex
		links  map[int32]*brokerLink
		closed bool
	}
}

// brokerLink is the connection to one broker.
type brokerLink struct {
	// turn (capacity 1) is held by the request in progress; the fields
	// below belong to its holder.
	turn        chan struct{}
	conn        net.Conn // nil when closed
	addr        string   // conn's address
	correlation int32    // the last correlation id sent
	out         []byte   // request frames, reused
	in          []byte   // response frames, reused with ReuseResponses
}

// New returns a Client of broker self that finds the other brokers in
// book.
func New(self int32, book AddressBook, o Options) *Client {
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 30 * time.Second
	}
	if o.MaxResponse <= 0 {
		o.MaxResponse = wire.DefaultMaxFrame
	}
	if o.ClientID == "" {
		o.ClientID = "sluice-controller-" + strconv.Itoa(int(self))
	}
	s := &Client{book: book, clientID: o.ClientID, o: o}
	s.mu.links = map[int32]*brokerLink{}
	return s
}

// Send sends req to broker and returns its response, of
// req.ResponseKind()'s type at req's version (coordinator/zk's Sender).
func (s *Client) Send(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	l, err := s.link(broker)
	if err != nil {
		return nil, err
	}
	select {
	case l.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("interbroker: %s to broker %d: %w", kmsg.NameForKey(req.Key()), broker, ctx.Err())
	}
	defer func() { <-l.turn }()
	resp, err := s.roundTrip(ctx, broker, l, req)
	if err != nil {
		l.close()
		return nil, fmt.Errorf("interbroker: %s to broker %d%s: %w", kmsg.NameForKey(req.Key()), broker, at(l.addr), err)
	}
	return resp, nil
}

func at(addr string) string {
	if addr == "" {
		return ""
	}
	return " at " + addr
}

// link returns broker's link, made on first use.
func (s *Client) link(broker int32) (*brokerLink, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return nil, ErrClosed
	}
	l := s.mu.links[broker]
	if l == nil {
		l = &brokerLink{turn: make(chan struct{}, 1)}
		s.mu.links[broker] = l
	}
	return l, nil
}

// roundTrip sends req on l's connection (dialled if closed) and reads the
// answer, once more on a new connection if the kept one turns out closed.
func (s *Client) roundTrip(ctx context.Context, broker int32, l *brokerLink, req kmsg.Request) (kmsg.Response, error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, s.o.RequestTimeout)
	defer cancel()
	for {
		kept := l.conn != nil
		if !kept {
			if err := s.dial(ctx, broker, l); err != nil {
				return nil, s.failure(parent, ctx, err)
			}
		}
		resp, answered, err := s.exchange(ctx, l, req)
		if err == nil {
			return resp, nil
		}
		if kept && !answered && ctx.Err() == nil && peerClosed(err) {
			l.close()
			continue
		}
		return nil, s.failure(parent, ctx, err)
	}
}

// failure names why a request failed: its context's end, the request
// timeout, or err.
func (s *Client) failure(parent, ctx context.Context, err error) error {
	switch {
	case parent.Err() != nil:
		return parent.Err()
	case ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%w after %v", ErrRequestTimeout, s.o.RequestTimeout)
	}
	return err
}

// peerClosed tells an error of a connection the peer closed.
func peerClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// dial connects l to broker's endpoint, as the address book has it.
func (s *Client) dial(ctx context.Context, broker int32, l *brokerLink) error {
	addr, err := s.book.BrokerAddress(broker, s.o.Listener)
	if err != nil {
		return err
	}
	l.addr = addr
	dial := s.o.Dial
	if dial == nil {
		dial = func(ctx context.Context, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		}
	}
	conn, err := dial(ctx, addr)
	if err != nil {
		return err
	}
	if s.o.Handshake != nil {
		if deadline, ok := ctx.Deadline(); ok {
			conn.SetDeadline(deadline)
		}
		stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
		err := s.o.Handshake(ctx, conn)
		stop()
		if err != nil {
			conn.Close()
			return fmt.Errorf("interbroker: authenticating to broker %d at %s: %w", broker, addr, err)
		}
	}
	l.conn = conn
	return nil
}

// exchange writes req and reads its response on l's connection; answered
// says whether any of the response arrived.
func (s *Client) exchange(ctx context.Context, l *brokerLink, req kmsg.Request) (resp kmsg.Response, answered bool, err error) {
	conn := l.conn
	if deadline, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(deadline); err != nil {
			return nil, false, err
		}
	}
	// The context's end interrupts the I/O below at once.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	l.correlation++
	l.out = wire.AppendRequest(l.out[:0], l.correlation, s.clientID, req)
	if _, err := conn.Write(l.out); err != nil {
		return nil, false, err
	}
	// Byte fields of resp alias the frame's buffer: a new one per response
	// unless the caller asked for reuse.
	var buf []byte
	if s.o.ReuseResponses {
		buf = l.in[:0]
	}
	frame, err := wire.ReadFrame(conn, buf, s.o.MaxResponse)
	if err != nil {
		return nil, !peerClosed(err), err
	}
	if s.o.ReuseResponses {
		l.in = frame[:0]
	}
	resp = req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := wire.ParseResponse(frame, l.correlation, resp); err != nil {
		return nil, true, err
	}
	return resp, true, nil
}

// close closes l's connection; its holder calls it.
func (l *brokerLink) close() {
	if l.conn != nil {
		l.conn.Close()
		l.conn = nil
	}
}

// Close closes every connection, after the requests in progress end, and
// refuses later requests with ErrSenderClosed.
func (s *Client) Close() {
	s.mu.Lock()
	s.mu.closed = true
	links := s.mu.links
	s.mu.Unlock()
	for _, l := range links {
		l.turn <- struct{}{}
		l.close()
		<-l.turn
	}
}
