package coordinator

// ElectLeaders on the single node: its controller decides as a cluster's
// does (coordinator/controller/elect.go). Every partition has the one
// replica, which leads it whenever the broker runs, so a preferred or
// unclean election is never needed.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/engine"
)

// ElectLeaders hands an ElectLeaders request to the single node's
// controller and returns a result per partition named (each once), or
// ctx's error when ctx ends first. Without a running controller every
// partition is answered NOT_CONTROLLER.
func (e *Embedded) ElectLeaders(ctx context.Context, typ controller.ElectionType, partitions []engine.Partition) ([]controller.ElectionResult, error) {
	return callController(ctx, e, func(lc *localController) *calls[[]controller.ElectionResult] { return &lc.elections },
		func(id uint64) controller.Event {
			return controller.ElectLeaders{ID: id, Type: typ, Partitions: partitions}
		},
		controller.RefuseElection(partitions, kerr.NotController.Code))
}
