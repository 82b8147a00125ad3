package cluster

// The receiving side of the controller's requests (LeaderAndIsr,
// StopReplica, UpdateMetadata: broker/04_leader_and_isr.go,
// broker/05_stop_replica.go, broker/06_update_metadata.go): who may send them and the fencing every one of
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
// the request's effect run under ControlState.mu, one control request at a
// time (Kafka's replicaStateChangeLock). Lock order: ControlState.mu is
// taken with no other lock held, before every lock of the broker's
// (broker/doc.go).
//
// The single node (Config.ControlPlane nil) has its own controller, which
// delivers its requests by a call (broker/localcontrol.go, fenced by the
// controller epoch alone): no request from the network can come from it,
// so every one is refused with STALE_CONTROLLER_EPOCH at step 2, changing
// nothing.

import (
	"sync"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/engine"
	"github.com/twmb/franz-go/pkg/kerr"
)

// UnknownBrokerEpoch is the broker epoch of a request that carries none
// (Kafka's AbstractControlRequest.UNKNOWN_BROKER_EPOCH).
const UnknownBrokerEpoch = -1

// singleNode is the ControlPlane of the embedded single node: no broker
// epoch, no controller that could send requests.
type singleNode struct{}

func (singleNode) BrokerEpoch() int64                 { return UnknownBrokerEpoch }
func (singleNode) IsActiveController(_, _ int32) bool { return false }

// ControlState is the state control requests change.
type ControlState struct {
	plane config.ControlPlane
	Cache *Cache // UpdateMetadata's (metadata.go)
	Roles Roles  // LeaderAndIsr's and StopReplica's (roles.go)

	mu sync.Mutex
	// epoch is the highest controller epoch accepted, by any of the three
	// requests (Kafka's ReplicaManager.controllerEpoch); under mu.
	epoch int32
}

func NewControlState(plane config.ControlPlane) *ControlState {
	if plane == nil {
		plane = singleNode{}
	}
	s := &ControlState{plane: plane, Cache: NewCache()}
	s.Roles.tab.Store(&RoleTable{Roles: map[engine.Partition]Role{}, Deleted: map[engine.Partition]struct{}{}})
	return s
}

// Fence fences a Fence request (steps above) and, when it passes, runs
// apply under mu with the request's controller epoch recorded. It returns
// the error code that refused the request, or 0.
// hasBrokerEpoch is false for versions without the field.
func (s *ControlState) Fence(controllerID, controllerEpoch int32, brokerEpoch int64, hasBrokerEpoch, kraft bool, apply func()) int16 {
	if hasBrokerEpoch && brokerEpoch != UnknownBrokerEpoch && brokerEpoch < s.plane.BrokerEpoch() {
		return kerr.StaleBrokerEpoch.Code
	}
	if kraft || !s.plane.IsActiveController(controllerID, controllerEpoch) {
		return kerr.StaleControllerEpoch.Code
	}
	return s.Local(controllerID, controllerEpoch, brokerEpoch, hasBrokerEpoch, kraft, apply)
}

// FenceFunc fences a control request and runs apply if it passes,
// returning the code that refused it, or 0: control or local.
type FenceFunc func(controllerID, controllerEpoch int32, brokerEpoch int64, hasBrokerEpoch, kraft bool, apply func()) int16

// Local is the fence of the single node's own controller's requests
// (delivered by a call, not a connection: localcontrol.go): only step 3,
// the controller epoch, applies.
func (s *ControlState) Local(_, controllerEpoch int32, _ int64, _, _ bool, apply func()) int16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if controllerEpoch < s.epoch {
		return kerr.StaleControllerEpoch.Code
	}
	s.epoch = controllerEpoch
	apply()
	return 0
}

// ControllerEpoch is the highest controller epoch accepted.
func (s *ControlState) ControllerEpoch() int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch
}

// SetPlane replaces the ControlPlane the fence asks (ZooKeeper mode's,
// known once the broker's session is open). Called before any control
// request is served.
func (s *ControlState) SetPlane(plane config.ControlPlane) { s.plane = plane }

// Locked runs f under the lock control requests' effects run under: a
// change of roles that is not a control request (a session expiry's).
func (s *ControlState) Locked(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}
