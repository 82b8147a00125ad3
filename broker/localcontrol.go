package broker

// The single node's own controller (coordinator's localcontroller.go)
// delivers its LeaderAndIsr, UpdateMetadata and StopReplica by calling
// localControl, from its goroutine, one at a time: the same handling as a
// cluster's requests over the network, fenced only by the controller
// epoch (controlState.local). Requests from the network are still refused
// on the single node (singleNode, controlplane.go): no other controller
// exists.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) localControl(req kmsg.Request) (kmsg.Response, error) {
	switch r := req.(type) {
	case *kmsg.LeaderAndISRRequest:
		return b.leaderAndIsr(r, b.ctl.local), nil
	case *kmsg.UpdateMetadataRequest:
		return b.updateMetadata(r, b.ctl.local), nil
	case *kmsg.StopReplicaRequest:
		return b.stopReplica(r, b.ctl.local), nil
	}
	return nil, fmt.Errorf("broker: the controller sent a %s request", kmsg.NameForKey(req.Key()))
}
