// Package cluster is the broker's side of the control plane: what the
// controller tells a broker about the cluster. It owns metadata.go, the
// metadata cache (Kafka's ZkMetadataCache) that UpdateMetadata fills and
// Metadata, DescribeCluster, FindCoordinator and the broker's own lookups
// read without a lock.
//
// It may call engine (partition names) and kmsg (the request it applies);
// it imports nothing of broker/, which wires it (broker/controlplane.go)
// and answers the controller's requests (broker/04-07).
//
// Lock order: Cache.mu is a leaf, taken to wake the waiters of an update;
// the snapshot is read with no lock.
package cluster
