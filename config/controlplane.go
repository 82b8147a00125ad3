package config

// ControlPlane: what the broker asks of the cluster to fence the
// controller's requests (broker/controlplane.go does the fencing).

// ControlPlane is what the broker asks of the cluster (coordinator/zk in
// ZooKeeper mode) to fence control requests.
type ControlPlane interface {
	// BrokerEpoch is this broker's current epoch: the czxid of its
	// registration znode.
	BrokerEpoch() int64
	// IsActiveController reports whether broker id is the controller at
	// controller epoch epoch. It may be a little behind ZooKeeper: an
	// implementation should accept an epoch newer than the one it last saw
	// when it cannot confirm it (the new controller's requests can arrive
	// before this broker's watch fires), and should not block for long.
	IsActiveController(id, epoch int32) bool
}
