package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/metrics"
)

// Handler starts the session of each accepted connection.
type Handler interface {
	// Open is called on the connection's goroutine once its TLS handshake
	// (if any) is done, before its first request is read.
	Open(c *Conn) Session
}

// Session serves one connection's requests, in order, on its goroutine.
type Session interface {
	// Handle serves one request frame (without its size prefix), which is
	// valid until Handle returns: whatever outlives the request is copied.
	// It writes the response itself (Conn.Write, Conn.Stream). An error
	// closes the connection, logged unless it is ErrClose.
	Handle(frame []byte) error
	// Between runs after each request, its memory released, before the
	// next is read: a throttled client's next request waits here.
	Between()
}

// Options are what the server needs of the broker's configuration.
type Options struct {
	// Network: connection and request bounds (connections.max.idle.ms,
	// socket.request.receive.timeout.ms, queued.max.request.bytes,
	// max.connections and per address).
	Network config.NetworkConfig
	// MaxRequestBytes is socket.request.max.bytes.
	MaxRequestBytes int32
	// TLS configures the SSL and SASL_SSL listeners.
	TLS    config.TLSConfig
	Logger *slog.Logger
	// Metrics, when set, counts and times every request (requestlog.go).
	Metrics *metrics.Registry
	// SlowRequest is log.slow.request.ms: a request served slower is
	// logged at info.
	SlowRequest time.Duration
	// Handled, when set, is called with each request's frame once the
	// request is handled and its response written, before the frame's
	// memory goes to the next request: a seam for tests, which overwrite
	// the frame to prove that no handler keeps request bytes past their
	// request.
	Handled func(frame []byte)
}

// Listener is one listener at run time.
type Listener struct {
	Name, Protocol string
	Addr           string // configured host:port
	ln             net.Listener
	// tls is the TLS side of an SSL or SASL_SSL listener (tls.go).
	tls *tlsSide
}

// Server accepts the connections of every listener and runs their loops.
type Server struct {
	o            Options
	h            Handler
	log          *slog.Logger
	pool         *requestPool
	quotas       *connQuotas
	timeRequests bool
	closing      chan struct{}
	connWG       sync.WaitGroup
	listeners    []*Listener

	mu struct {
		sync.Mutex
		stopped bool
		conns   map[*Conn]struct{}
	}
}

// New makes the server of the listeners (config.ListenerSetup's, in
// order; the first is the one Bind is given).
func New(listeners []config.ListenerConfig, protocols map[string]string, o Options, h Handler) (*Server, error) {
	s := &Server{o: o, h: h, log: o.Logger, closing: make(chan struct{})}
	s.mu.conns = map[*Conn]struct{}{}
	var err error
	if s.pool, err = newRequestPool(o.Network.QueuedMaxRequestBytes, o.MaxRequestBytes); err != nil {
		return nil, err
	}
	if s.quotas, err = newConnQuotas(o.Network); err != nil {
		return nil, err
	}
	s.timeRequests = o.Metrics != nil || o.SlowRequest > 0 || s.log.Enabled(context.Background(), slog.LevelDebug)
	for _, lc := range listeners {
		l := &Listener{Name: lc.Name, Protocol: protocols[lc.Name], Addr: lc.Addr}
		if l.Protocol == config.ProtoSSL || l.Protocol == config.ProtoSASLSSL {
			if l.tls, err = newTLSSide(o.TLS, l.Name, l.Protocol, s.log); err != nil {
				return nil, err
			}
		}
		s.listeners = append(s.listeners, l)
	}
	return s, nil
}

// Listeners are the configured listeners, in order.
func (s *Server) Listeners() []*Listener { return s.listeners }

// Listener is the listener named name (any case), or nil.
func (s *Server) Listener(name string) *Listener {
	for _, l := range s.listeners {
		if l.Name == strings.ToUpper(name) {
			return l
		}
	}
	return nil
}

// Bound is the listener's bound address, nil before Bind. It is read under
// the lock of the caller of Bind (the broker's mu), which is held while
// Bind sets it.
func (l *Listener) Bound() net.Addr {
	if l.ln == nil {
		return nil
	}
	return l.ln.Addr()
}

// Bind takes ln as the first listener's and listens on the others. After
// Stop it closes ln and answers net.ErrClosed.
func (s *Server) Bind(ln net.Listener) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.stopped {
		ln.Close()
		return net.ErrClosed
	}
	s.listeners[0].ln = ln
	for _, l := range s.listeners[1:] {
		lln, err := net.Listen("tcp", l.Addr)
		if err != nil {
			for _, o := range s.listeners {
				if o.ln != nil {
					o.ln.Close()
					o.ln = nil
				}
			}
			return fmt.Errorf("broker: listen on %s (%s): %w", l.Addr, l.Name, err)
		}
		l.ln = lln
	}
	return nil
}

// Serve accepts the connections of every bound listener until Stop.
func (s *Server) Serve() error {
	done := make(chan error, len(s.listeners))
	for _, l := range s.listeners[1:] {
		go func() { done <- s.accept(l) }()
	}
	if err := s.accept(s.listeners[0]); err != nil {
		return err
	}
	for range s.listeners[1:] {
		if err := <-done; err != nil {
			return err
		}
	}
	return nil
}

// accept serves the connections of one listener until Stop.
func (s *Server) accept(l *Listener) error {
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			select {
			case <-s.closing:
				return nil
			default:
			}
			// Out of file descriptors is transient, as a timeout is: wait
			// and accept again (as Kafka's acceptor does) rather than stop
			// accepting for good.
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return fmt.Errorf("broker: accept on %s: %w", l.Name, err)
		}
		// At max.connections this waits, accepting nothing more.
		ip := remoteIP(nc)
		if err := s.quotas.inc(ip, s.closing); err != nil {
			if errors.Is(err, errTooManyFromIP) {
				s.log.Info("rejected connection", "remote", nc.RemoteAddr().String(), "err", err)
			}
			nc.Close()
			continue
		}
		s.connWG.Add(1)
		go func() {
			defer s.connWG.Done()
			defer s.quotas.dec(ip)
			s.serveConn(l, nc)
		}()
	}
}

// serveConn serves one accepted connection: its TLS handshake, then its
// requests.
func (s *Server) serveConn(l *Listener, nc net.Conn) {
	if l.tls != nil {
		tc, err := s.handshakeTLS(l.tls, nc)
		if err != nil {
			s.log.Info("closing connection", "listener", l.Name, "remote", nc.RemoteAddr().String(), "err", err)
			nc.Close()
			return
		}
		nc = tc
	}
	c := newConn(s, l, nc)
	defer nc.Close()
	defer c.closeRegion()
	log := s.log.With("remote", nc.RemoteAddr().String())
	if c.tlsPrincipal(log) != nil { // tls.go
		return
	}
	s.mu.Lock()
	if s.mu.stopped {
		s.mu.Unlock()
		return
	}
	s.mu.conns[c] = struct{}{}
	s.mu.Unlock()
	c.serve(s.h.Open(c), log)
	s.mu.Lock()
	delete(s.mu.conns, c)
	s.mu.Unlock()
}

// Connections counts the open connections.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.conns)
}

// Stop closes the listeners and makes every connection end after the
// request it is handling.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.stopped {
		return
	}
	s.mu.stopped = true
	close(s.closing)
	for _, l := range s.listeners {
		if l.ln != nil {
			l.ln.Close()
		}
	}
	for c := range s.mu.conns {
		c.Stop()
	}
}

// Wait waits for every connection to end after Stop; when ctx ends first,
// it closes those still open and waits for their goroutines.
func (s *Server) Wait(ctx context.Context) {
	done := make(chan struct{})
	go func() { s.connWG.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	s.mu.Lock()
	for c := range s.mu.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	<-done
}

// Close releases the request memory, once every connection has ended.
func (s *Server) Close() { s.pool.close() }
