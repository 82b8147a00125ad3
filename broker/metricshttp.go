package broker

// The HTTP listener of metrics.listen: /metrics (the Prometheus text
// format, metrics.go), /healthz (200 while the process serves HTTP at
// all), /readyz (200 once the broker serves, 503 before and from the start
// of its shutdown, with the reason as the body) and, with
// metrics.pprof.enable, /debug/pprof. It starts in New, before the broker
// listens for clients, so that a supervisor sees it not ready, and stops
// at the end of Shutdown.

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// startMetricsServer listens on metrics.listen and serves the endpoints.
func (b *Broker) startMetricsServer() error {
	ln, err := net.Listen("tcp", b.cfg.Observability.MetricsListen)
	if err != nil {
		return fmt.Errorf("broker: metrics.listen: %w", err)
	}
	b.metricsLn = ln
	b.metricsSrv = &http.Server{Handler: b.metricsHandler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := b.metricsSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			b.log.Error("metrics listener stopped", "err", err)
		}
	}()
	b.log.Info("serving metrics", "addr", ln.Addr().String())
	return nil
}

// MetricsAddr is the metrics listener's address, nil without one.
func (b *Broker) MetricsAddr() net.Addr {
	if b.metricsLn == nil {
		return nil
	}
	return b.metricsLn.Addr()
}

// metricsHandler routes the endpoints.
func (b *Broker) metricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(b.metrics.reg, promhttp.HandlerOpts{ErrorLog: slogPrinter{b}}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if why := b.notReady(); why != "" {
			http.Error(w, why, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	if b.cfg.Observability.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// notReady is why the broker is not ready to serve clients, "" when it is:
// it listens (with its data directory open, which New did), it is not
// shutting down, and in ZooKeeper mode it is registered and holds the
// metadata of the controller ZooKeeper names.
func (b *Broker) notReady() string {
	if b.stopping.Load() {
		return "shutting down"
	}
	b.mu.RLock()
	listening := b.mu.ln != nil
	b.mu.RUnlock()
	if !listening {
		return "not listening yet"
	}
	if c := b.cluster; c != nil {
		select {
		case <-c.registered:
		default:
			return "not registered in ZooKeeper yet"
		}
		l := c.loop.Load()
		snap := b.ctl.cache.snap.Load()
		if l == nil || snap == nil || l.ActiveController() < 0 || snap.controllerID != l.ActiveController() {
			return "no metadata from the current controller yet"
		}
	}
	return ""
}

// stopMetricsServer closes the metrics listener.
func (b *Broker) stopMetricsServer() {
	if b.metricsSrv != nil {
		b.metricsSrv.Close()
	}
}

// slogPrinter logs promhttp's errors.
type slogPrinter struct{ b *Broker }

func (p slogPrinter) Println(v ...any) { p.b.log.Error("serving metrics", "err", fmt.Sprint(v...)) }
