package broker

// The broker's side of a controlled shutdown: broker/cluster's
// ControlledShutdown (shutdown.go tells the rules), built here over this
// broker's registration and its connections to the controller.

import (
	"time"

	"github.com/sluice-io/sluice/broker/cluster"
)

// controlledShutdown asks the controller to move this broker's leadership
// away, once, in a cluster with controlled.shutdown.enable.
func (b *Broker) controlledShutdown() {
	cl := b.plane.zk
	cfg := b.cfg.Cluster.Shutdown()
	if cl == nil || !cfg.Enabled || !cl.ShutdownOnce() {
		return
	}
	// An attempt waits at most a session timeout (Kafka:
	// controller.socket.timeout.ms, 30 s): a controller silent that long
	// has lost its session if it is gone, and the next attempt asks the
	// one after it.
	wait := alterPartitionTimeout
	if st := b.cfg.Cluster.SessionTimeout; st > 0 && st < wait {
		wait = st
	} else if st <= 0 {
		wait = 18 * time.Second
	}
	cluster.ControlledShutdown(cluster.ShutdownOptions{
		Self: b.cfg.ID, Config: cfg, Wait: wait, Cache: b.plane.state.Cache,
		BrokerEpoch: cl.BrokerEpoch, Send: cl.SendControlledShutdown, Logger: b.log,
	})
}
