package broker

// The receiving side of the controller's requests (LeaderAndIsr,
// StopReplica, UpdateMetadata: 04_leader_and_isr.go, 05_stop_replica.go,
// 06_update_metadata.go): who may send them and the fencing every one of
// them passes first, as Kafka's KafkaApis and ReplicaManager do.
//
// Fencing, in order (the first that fails answers the request):
//  1. Broker epoch (KIP-380; absent before LeaderAndIsr v2, StopReplica v1,
//     UpdateMetadata v5, and -1 means unknown): older than this broker's
//     current epoch → STALE_BROKER_EPOCH: the request was meant for an
//     earlier registration of this broker. A newer one is accepted, as
//     Kafka does: the controller may learn of a re-registration first.
//  2. The sender must be the controller ZooKeeper names, at that epoch
//     (ControlPlane.IsActiveController), else STALE_CONTROLLER_EPOCH (the
//     code of Kafka's ControllerMovedException). Kafka 3.9 makes no such
//     check (ClusterAction ACLs stand in for it); sluice adds it as a
//     consistency check, not as security: on plaintext the id is
//     self-declared. A request marked IsKRaftController is refused the same
//     way: sluice has no KRaft controller.
//  3. A controller epoch below the highest one seen → STALE_CONTROLLER_EPOCH;
//     otherwise the request's epoch becomes the highest seen.
//
// Steps 1 and 2 call the ControlPlane with no broker lock held. Step 3 and
// the request's effect run under controlState.mu, one control request at a
// time (Kafka's replicaStateChangeLock). Lock order: controlState.mu before
// Broker.mu (LeaderAndIsr reads a local topic's id); it is never taken
// while another broker lock is held.
//
// The single node (Config.ControlPlane nil) has its own controller, which
// delivers its requests by a call (localcontrol.go, fenced by the
// controller epoch alone): no request from the network can come from it,
// so every one is refused with STALE_CONTROLLER_EPOCH at step 2, changing
// nothing.

import (
	"sync"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/config"
	"github.com/twmb/franz-go/pkg/kerr"
)

// unknownBrokerEpoch is the broker epoch of a request that carries none
// (Kafka's AbstractControlRequest.UNKNOWN_BROKER_EPOCH).
const unknownBrokerEpoch = -1

// singleNode is the ControlPlane of the embedded single node: no broker
// epoch, no controller that could send requests.
type singleNode struct{}

func (singleNode) BrokerEpoch() int64                 { return unknownBrokerEpoch }
func (singleNode) IsActiveController(_, _ int32) bool { return false }

// controlState is the state control requests change.
type controlState struct {
	plane config.ControlPlane
	cache *cluster.Cache // UpdateMetadata's (broker/cluster)
	roles replicaRoles   // LeaderAndIsr's and StopReplica's (replicaroles.go)

	mu sync.Mutex
	// epoch is the highest controller epoch accepted, by any of the three
	// requests (Kafka's ReplicaManager.controllerEpoch); under mu.
	epoch int32
}

func newControlState(plane config.ControlPlane) *controlState {
	if plane == nil {
		plane = singleNode{}
	}
	s := &controlState{plane: plane, cache: cluster.NewCache()}
	s.roles.tab.Store(&roleTable{roles: map[topicPartition]replicaRole{}, deleted: map[topicPartition]struct{}{}})
	return s
}

// topicPartition names a partition.
type topicPartition struct {
	topic     string
	partition int32
}

// control fences a control request (steps above) and, when it passes, runs
// apply under mu with the request's controller epoch recorded. It returns
// the error code that refused the request, or 0.
// hasBrokerEpoch is false for versions without the field.
func (s *controlState) control(controllerID, controllerEpoch int32, brokerEpoch int64, hasBrokerEpoch, kraft bool, apply func()) int16 {
	if hasBrokerEpoch && brokerEpoch != unknownBrokerEpoch && brokerEpoch < s.plane.BrokerEpoch() {
		return kerr.StaleBrokerEpoch.Code
	}
	if kraft || !s.plane.IsActiveController(controllerID, controllerEpoch) {
		return kerr.StaleControllerEpoch.Code
	}
	return s.local(controllerID, controllerEpoch, brokerEpoch, hasBrokerEpoch, kraft, apply)
}

// fenceFunc fences a control request and runs apply if it passes,
// returning the code that refused it, or 0: control or local.
type fenceFunc func(controllerID, controllerEpoch int32, brokerEpoch int64, hasBrokerEpoch, kraft bool, apply func()) int16

// local is the fence of the single node's own controller's requests
// (delivered by a call, not a connection: localcontrol.go): only step 3,
// the controller epoch, applies.
func (s *controlState) local(_, controllerEpoch int32, _ int64, _, _ bool, apply func()) int16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if controllerEpoch < s.epoch {
		return kerr.StaleControllerEpoch.Code
	}
	s.epoch = controllerEpoch
	apply()
	return 0
}

// controllerEpoch is the highest controller epoch accepted.
func (s *controlState) controllerEpoch() int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch
}
