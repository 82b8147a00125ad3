package broker

// The controller's side of the leaders' ISR changes (replication/host's
// isrchange.go builds them): each goes to the controller the metadata
// names, by a call when this broker is the controller, else over the
// inter-broker listener.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// errNoController: the metadata names no controller, or this broker's
// controller loop has not started.
var errNoController = errors.New("broker: no controller to ask")

// isrController carries a cluster's ISR changes (host.Controller).
type isrController struct{ c *zkCluster }

func (i isrController) BrokerEpoch() int64 { return i.c.BrokerEpoch() }

func (i isrController) AlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	cl, b := i.c, i.c.b
	controller := b.ctl.Cache.Load().ControllerID
	switch {
	case controller < 0:
		return nil, errNoController
	case controller == b.cfg.ID:
		loop := cl.loop.Load()
		if loop == nil {
			return nil, errNoController
		}
		return loop.AlterPartition(ctx, req)
	}
	raw, err := cl.isrSend.Send(ctx, controller, req)
	if err != nil {
		return nil, err
	}
	return raw.(*kmsg.AlterPartitionResponse), nil
}
