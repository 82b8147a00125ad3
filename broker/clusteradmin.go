package broker

// The controller's entry points for the handlers that call it (elections,
// reassignments), and the context their waits run under.

import (
	"context"
	"time"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/coordinator"
)

// closingContext is a context that ends after d or when the broker starts
// closing, whichever comes first.
func (b *Broker) closingContext(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	go func() {
		select {
		case <-b.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// controllerHere is the controller driver running on this broker, for
// the administration requests it answers (broker/cluster/controlleradmin.go):
// the cluster's controller loop, or the single node's controller; nil when
// neither runs here.
func (b *Broker) controllerHere() cluster.Controller {
	if b.cluster != nil {
		if l := b.cluster.Loop(); l != nil {
			return l
		}
		return nil
	}
	if e, ok := b.coord.(*coordinator.Embedded); ok {
		return e
	}
	return nil
}
