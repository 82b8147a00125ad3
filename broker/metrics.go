package broker

// The broker's side of its metrics (metrics/ holds them and lists their
// names): the registry made in New with metrics.listen, the sources its
// scrape-time collectors read (the broker's state, the group
// coordinator's), and the HTTP listener started in New and stopped at the
// end of Shutdown. The request paths count into the metrics.Topic each
// partition resolves once (replicas.go) and into the registry
// (broker/server/requestlog.go, replication/host/isrchange.go, the controller driver's Elected, the
// engine's OnFlush).
//
// A scrape takes Broker.net.mu (read) to list the partitions, releases it, then
// each partition's replicaDriver.mu in turn, with no other lock held; the
// group metrics take the lag sampler's lock first (doc.go's lock order).

import (
	"context"
	"fmt"
	"net"

	"github.com/sluice-io/sluice/metrics"
)

// newMetrics registers the broker's metrics.
func (b *Broker) newMetrics() *metrics.Registry {
	return metrics.New(metrics.Sources{
		MaxVersion: func(key int16) (int16, bool) {
			a, ok := apis[key]
			return a.max, ok
		},
		State:  b.metricsState,
		Groups: b.metricsGroups,
	})
}

// metricsState is the broker's state at a scrape: its connections, its
// partitions (replication/host), the controller's.
func (b *Broker) metricsState() metrics.State {
	var st metrics.State
	// The server and the replicas are nil at the registry's first collect,
	// in New before they are made.
	if b.net.srv != nil {
		st.Connections = b.net.srv.Connections()
	}
	if b.replicas != nil {
		st.Partitions = b.replicas.PartitionStates()
	}
	st.Controller = b.isController()
	if snap := b.plane.state.Cache.Load(); snap != nil {
		st.ControllerEpoch = snap.ControllerEpoch
		if st.Controller {
			st.OfflinePartitions = snap.OfflinePartitions()
		}
	}
	return st
}

// metricsGroups is the group coordinator's state at a scrape; false
// while New has not made it yet (the registry describes its collectors
// as it is built).
func (b *Broker) metricsGroups() (metrics.Groups, bool) {
	if b.coords.groups == nil {
		return metrics.Groups{}, false
	}
	return b.coords.groups.Metrics(context.Background()), true
}

// isController reports whether this broker is the active controller: in
// ZooKeeper mode the one elected, on the single node always (it runs its
// own).
func (b *Broker) isController() bool {
	if b.plane.zk == nil {
		return true
	}
	l := b.plane.zk.Loop()
	return l != nil && l.IsController()
}

// startMetricsServer listens on metrics.listen and serves the endpoints.
func (b *Broker) startMetricsServer() error {
	srv, err := metrics.Serve(b.cfg.Observability.MetricsListen, b.metrics.reg,
		metrics.ServerOptions{Ready: b.notReady, Pprof: b.cfg.Observability.Pprof, Logger: b.log})
	if err != nil {
		return fmt.Errorf("broker: metrics.listen: %w", err)
	}
	b.metrics.srv = srv
	b.log.Info("serving metrics", "addr", srv.Addr().String())
	return nil
}

// MetricsAddr is the metrics listener's address, nil without one.
func (b *Broker) MetricsAddr() net.Addr {
	if b.metrics.srv == nil {
		return nil
	}
	return b.metrics.srv.Addr()
}

// notReady is why the broker is not ready to serve clients (/readyz), ""
// when it is: it listens (with its data directory open, which New did), it
// is not shutting down, and in ZooKeeper mode it is registered and holds
// the metadata of the controller ZooKeeper names.
func (b *Broker) notReady() string {
	if b.life.stopping.Load() {
		return "shutting down"
	}
	b.net.mu.RLock()
	listening := b.net.mu.ln != nil
	b.net.mu.RUnlock()
	if !listening {
		return "not listening yet"
	}
	if c := b.plane.zk; c != nil {
		if !c.Registered() {
			return "not registered in ZooKeeper yet"
		}
		l := c.Loop()
		snap := b.plane.state.Cache.Load()
		if l == nil || snap == nil || l.ActiveController() < 0 || snap.ControllerID != l.ActiveController() {
			return "no metadata from the current controller yet"
		}
	}
	return ""
}

// stopMetricsServer closes the metrics listener.
func (b *Broker) stopMetricsServer() {
	if b.metrics.srv != nil {
		b.metrics.srv.Close()
	}
}
