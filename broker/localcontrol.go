package broker

// The single node's own controller (coordinator's localcontroller.go)
// delivers its LeaderAndIsr, UpdateMetadata and StopReplica by calling
// localControl, from its goroutine, one at a time: the same handling as a
// cluster's requests over the network, fenced only by the controller
// epoch (cluster.ControlState.Local). Requests from the network are still refused
// on the single node (broker/cluster/control.go's singleNode): no other controller
// exists.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) localControl(req kmsg.Request) (kmsg.Response, error) {
	switch r := req.(type) {
	case *kmsg.LeaderAndISRRequest:
		return b.leaderAndIsr(r, b.plane.state.Local), nil
	case *kmsg.UpdateMetadataRequest:
		return b.updateMetadata(r, b.plane.state.Local), nil
	case *kmsg.StopReplicaRequest:
		return b.stopReplica(r, b.plane.state.Local), nil
	}
	return nil, fmt.Errorf("broker: the controller sent a %s request", kmsg.NameForKey(req.Key()))
}
