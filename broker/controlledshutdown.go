package broker

// The broker's side of a controlled shutdown: broker/cluster's
// ControlledShutdown (shutdown.go tells the rules), built here over this
// broker's registration and its connections to the controller.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/broker/cluster"
)

// controlledShutdown asks the controller to move this broker's leadership
// away, once, in a cluster with controlled.shutdown.enable.
func (b *Broker) controlledShutdown() {
	cl := b.cluster
	cfg := b.cfg.Cluster.Shutdown()
	if cl == nil || !cfg.Enabled || !cl.shutdownAsked.CompareAndSwap(false, true) {
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
		Self: b.cfg.ID, Config: cfg, Wait: wait, Cache: b.ctl.Cache,
		BrokerEpoch: cl.BrokerEpoch, Send: b.sendControlledShutdown, Logger: b.log,
	})
}

// sendControlledShutdown carries a ControlledShutdown to the controller:
// this broker's own controller driver by a call, another broker's over the
// inter-broker listener.
func (b *Broker) sendControlledShutdown(ctx context.Context, controller int32, req *kmsg.ControlledShutdownRequest) (*kmsg.ControlledShutdownResponse, error) {
	cl := b.cluster
	if controller == b.cfg.ID {
		loop := cl.loop.Load()
		if loop == nil {
			return nil, errors.New("no controller known")
		}
		return loop.ControlledShutdown(ctx, req)
	}
	raw, err := cl.isrSend.Send(ctx, controller, req)
	if err != nil {
		return nil, err
	}
	return raw.(*kmsg.ControlledShutdownResponse), nil
}
