// Package cluster is the broker's side of the control plane: what the
// controller tells a broker about the cluster, and who may tell it. It
// owns:
//   - control.go: ControlState, the fencing of the controller's requests
//     (broker and controller epochs, the active controller) and the lock
//     their effects run under;
//   - metadata.go: the metadata cache (Kafka's ZkMetadataCache) that
//     UpdateMetadata fills and Metadata, DescribeCluster, FindCoordinator
//     and the broker's own lookups read without a lock;
//   - roles.go: the replica role table LeaderAndIsr and StopReplica fill,
//     which the broker's hosting makes its partitions follow;
//   - shutdown.go: ControlledShutdown, the broker's side of a controlled
//     shutdown: it asks the controller to move its leaderships away,
//     retries while the controller is unknown or busy, and waits for the
//     partitions it still leads to be gone before the broker closes.
//
// It may call engine (partition names), config (the ControlPlane) and
// kmsg/kerr (the requests it applies, the codes it refuses with); it
// imports nothing of broker/, which builds it and answers the
// controller's requests (broker/04-07, broker/hosting.go).
//
// Lock order: ControlState.mu first, taken with no other lock held (the
// broker's locks come after it: broker/doc.go); Cache.mu is a leaf, taken
// to wake the waiters of an update; the cache and the role table are
// read with no lock.
package cluster
