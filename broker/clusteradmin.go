package broker

// The controller driver running on this broker, for the administration
// requests it answers (broker/cluster/controlleradmin.go).

import (
	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/coordinator"
)

// controllerHere is the cluster's controller loop, or the single node's
// controller; nil when neither runs here.
func (b *Broker) controllerHere() cluster.Controller {
	if b.plane.zk != nil {
		if l := b.plane.zk.Loop(); l != nil {
			return l
		}
		return nil
	}
	if e, ok := b.coord.(*coordinator.Embedded); ok {
		return e
	}
	return nil
}
