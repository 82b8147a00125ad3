package metrics

// The HTTP listener of metrics.listen: /metrics (the Prometheus text
// format), /healthz (200 while the process serves HTTP at all), /readyz
// (200 when ServerOptions.Ready says so, 503 with its reason as the body
// otherwise) and, with ServerOptions.Pprof, /debug/pprof. The broker starts
// it in New, before it listens for clients, so that a supervisor sees it
// not ready, and closes it at the end of Shutdown.

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ServerOptions configure Serve.
type ServerOptions struct {
	// Ready is why the broker is not ready to serve clients, "" when it is.
	Ready func() string
	// Pprof serves /debug/pprof (metrics.pprof.enable).
	Pprof bool
	// Logger receives the listener's errors.
	Logger *slog.Logger
}

// Server serves a Registry over HTTP.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// Serve listens on addr and serves the endpoints of m until Close.
func Serve(addr string, m *Registry, o ServerOptions) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listening on %s: %w", addr, err)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Server{ln: ln, srv: &http.Server{Handler: Handler(m, o), ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.Logger.Error("metrics listener stopped", "err", err)
		}
	}()
	return s, nil
}

// Addr is the listener's address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close closes the listener and its connections.
func (s *Server) Close() { s.srv.Close() }

// Handler routes the endpoints of m.
func Handler(m *Registry, o ServerOptions) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorLog: slogPrinter{o.Logger}}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if o.Ready != nil {
			if why := o.Ready(); why != "" {
				http.Error(w, why, http.StatusServiceUnavailable)
				return
			}
		}
		fmt.Fprintln(w, "ready")
	})
	if o.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// slogPrinter logs promhttp's errors.
type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Println(v ...any) { p.log.Error("serving metrics", "err", fmt.Sprint(v...)) }

// Handler is the server's handler, which answers after Close too.
func (s *Server) Handler() http.Handler { return s.srv.Handler }
