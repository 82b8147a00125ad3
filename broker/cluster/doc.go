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
//   - leaderandisr.go, stopreplica.go: LeaderAndIsr's and StopReplica's
//     decisions over the role table (which states become roles, which
//     partitions stop, each one's code), with no I/O;
//   - directory.go: the Directory, what clients ask of the cluster's
//     shape (Metadata with auto-creation, DescribeCluster's brokers,
//     FindCoordinator's broker with its internal topic's creation) and the
//     topic administration that writes the metadata backend and waits for
//     the controller to carry it out (CreateTopics, DeleteTopics,
//     CreatePartitions); topicadmin.go: those three requests answered
//     whole (checks, authorization and mutation quota through Admin, the
//     wait for the controller); controlleradmin.go: the administration
//     requests the controller running here answers (ElectLeaders and its
//     wait for the elected leaders, Alter and ListPartitionReassignments);
//     names.go: Kafka's topic-name rules and internal
//     topics;
//   - zookeeper.go: ZK, the broker's ZooKeeper mode: its session and
//     metadata backend, its registration (again after a session expiry),
//     its controller driver, the ControlPlane checks against /controller,
//     the leaders' ISR changes and the controlled shutdown's request to
//     the controller, the log directory events;
//   - shutdown.go: ControlledShutdown, the broker's side of a controlled
//     shutdown: it asks the controller to move its leaderships away,
//     retries while the controller is unknown or busy, and waits for the
//     partitions it still leads to be gone before the broker closes.
//
// It may call engine (partition names), config (the ControlPlane),
// coordinator (the metadata backend's topic administration, behind the
// Topics interface, and its errors), coordinator/controller (topic
// requests and their codes), coordinator/group (a key's partition),
// config (a created topic's configs against the broker's Layers),
// coordinator/zk (the session, the backend, the controller driver, its
// errors' messages), wire/interbroker (the connections to the controller
// its Start.Dial opens) and kmsg/kerr (the requests it
// applies, the codes it refuses with); it
// imports nothing of broker/, which builds it and answers the
// controller's requests (broker/04-07, through replication/host/hosting.go).
//
// Lock order: ControlState.mu first, taken with no other lock held (the
// broker's locks come after it: broker/doc.go); Cache.mu is a leaf, taken
// to wake the waiters of an update; the cache and the role table are
// read with no lock. The Directory has no lock: its waits hold none, and
// the broker calls its topic administration under Broker.admin.
package cluster
