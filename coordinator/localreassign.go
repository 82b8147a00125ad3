package coordinator

// Partition reassignment on the single node: its controller decides as a
// cluster's does (coordinator/controller/reassign.go). The one broker is
// every partition's one replica: a target naming another broker names one
// that is not live (INVALID_REPLICA_ASSIGNMENT), and that broker alone is
// the assignment already, so nothing ever moves.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/coordinator/controller"
)

// AlterReassignments hands reassignment targets to the single node's
// controller and returns its answer, or ctx's error when ctx ends first.
// Without a running controller the request is answered NOT_CONTROLLER.
func (e *Embedded) AlterReassignments(ctx context.Context, targets []controller.ReassignTarget) (controller.ReassignAnswer, error) {
	return callController(ctx, e, func(lc *localController) *calls[controller.ReassignAnswer] { return &lc.reassigns },
		func(id uint64) controller.Event { return controller.AlterReassignments{ID: id, Targets: targets} },
		controller.ReassignAnswer{ErrorCode: kerr.NotController.Code})
}

// ListReassignments returns the ongoing reassignments (none, on the
// single node); ok is false without a running controller.
func (e *Embedded) ListReassignments(ctx context.Context) ([]controller.Reassignment, bool, error) {
	e.mu.Lock()
	running := e.mu.ctl != nil
	e.mu.Unlock()
	return []controller.Reassignment{}, running, nil
}
