package broker

// The controller's entry points for the handlers that call it (elections,
// reassignments), and the context their waits run under.

import (
	"context"
	"time"

	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/coordinator/zk"
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

// controllerEntry returns one of the controller's entry points: the
// cluster's controller loop's (fromLoop), or the single node's controller's
// (fromLocal); nil when neither runs here.
func controllerEntry[F any](b *Broker, fromLoop func(*zk.ControllerLoop) F, fromLocal func(*coordinator.Embedded) F) F {
	var none F
	if b.cluster != nil {
		if l := b.cluster.Loop(); l != nil {
			return fromLoop(l)
		}
		return none
	}
	if e, ok := b.coord.(*coordinator.Embedded); ok {
		return fromLocal(e)
	}
	return none
}

// listReassignmentsDriver is reassignDriver's for the ongoing ones.
func (b *Broker) listReassignmentsDriver() func(context.Context) ([]controller.Reassignment, bool, error) {
	type list = func(context.Context) ([]controller.Reassignment, bool, error)
	return controllerEntry(b, func(l *zk.ControllerLoop) list { return l.ListReassignments }, func(e *coordinator.Embedded) list { return e.ListReassignments })
}

// reassignTimeout is the least the broker waits for the controller.
const reassignTimeout = 30 * time.Second
