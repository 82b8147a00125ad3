// Package broker is the sluice server: its connections are package
// server's (listeners, the connection loop, request memory, connection
// quotas, TLS, the request log), which hands each request frame to the
// broker's session on the connection (conn.go); the session decodes it
// (package wire), answers SASL's state, dispatches it to the handler of its
// API key (one file per key, named by it: 00_produce.go, 01_fetch.go, …),
// and keeps the partitions (engine logs) and their waiting fetches.
// Framing violations the session sees (an unknown API key, an unsupported
// version, a body that does not decode) close that connection and nothing
// else; every other problem is answered with a Kafka error code.
//
// Configuration (package config: the keys, their parsing, validation and
// defaults, the layers a value comes from; config/dynamic: this broker's
// layers at run time and DescribeConfigs', AlterConfigs' and
// IncrementalAlterConfigs' logic, whose handlers only decode, authorize
// and encode; dynconfig.go: the service's construction and its changes
// applied to open logs and partitions) is read and changed by
// DescribeConfigs, AlterConfigs and IncrementalAlterConfigs.
//
// Consumer groups (groups.go) are coordinator/group's, hosted by
// coordinator/group/host (its Groups: the coordinator, its store over the
// partitions of __consumer_offsets, the lag sampler), which the broker
// builds from its partitions and metadata; the group handlers (08-16, 42, 47) only route requests to it.
// A JoinGroup or a follower's SyncGroup parks its connection's goroutine
// until the rebalance completes, as Kafka mutes the connection meanwhile;
// Shutdown closes the coordinator first, which answers parked requests.
//
// Transactions, the partition side: a transactional producer's batches
// open its transaction in each partition they reach (engine producer
// state), which holds the partition's last stable offset until the
// transaction coordinator's marker; WriteTxnMarkers
// (27_write_txn_markers.go, also called in process by the coordinator's
// driver as writeTxnMarkers) appends the markers as the coordinator's
// appends and waits for acks=all, then ends the transaction's offsets on
// __consumer_offsets partitions (coordinator/group's CompleteTxn, called
// with no broker lock held). read_committed fetches and ListOffsets stop
// at the last stable offset and name the aborted transactions in range
// (01_fetch.go, 02_list_offsets.go); TxnOffsetCommit (28) and
// DescribeProducers (61) complete the partition's part.
//
// The controller's requests (LeaderAndIsr, StopReplica, UpdateMetadata:
// 04-06) are fenced by broker and controller epochs through a ControlPlane
// (broker/cluster/control.go) and fill the metadata cache (broker/cluster) and the
// replica role table (broker/cluster/roles.go), both copy-on-write snapshots that
// readers load without a lock; LeaderAndIsr and StopReplica open, lead,
// follow and delete logs (replication/host/hosting.go), whose partitions are
// replication/host's: the owner of each log and role, the driver of its
// replication core, the followers' fetchers and the leaders' ISR changes,
// made by the broker's host.Manager (replicas.go) with its collaborators
// (the inter-broker transport, the controller, the follower quota). The single node is a one-broker
// cluster: its own controller (coordinator's localcontroller.go, the same
// decision core) sends it these requests by a call (localcontrol.go), and
// it refuses them from the network.
//
// ZooKeeper mode (Config.Cluster; broker/cluster/zookeeper.go, started by
// cluster.go): the broker registers in
// ZooKeeper, runs a controller driver (coordinator/zk), takes its metadata
// backend from coordinator/zk, and serves only the partitions the
// controller makes it lead; Metadata, DescribeCluster and FindCoordinator
// answer from the metadata cache and topic administration goes through
// ZooKeeper and waits for the controller (both broker/cluster's
// Directory, directory.go). Configuration changed by other brokers arrives from
// /config/changes (dynconfig.go's remoteConfigChange). The group coordinator loads and
// unloads partitions of __consumer_offsets as this broker gains and loses
// their leadership.
//
// Observability (Config.Observability): with metrics.listen the broker
// keeps Prometheus metrics under jmx_exporter's names for Kafka's MBeans
// (the metrics package: counted on the request paths through counters
// each partition resolves once, computed at scrape from the state
// broker/metrics.go reports) and serves them with /healthz and /readyz
// (metrics.Serve); the connection
// loop times requests for them and for the request log (package server);
// the controller driver reports leader elections (zk.LoopOptions.Elected)
// and the engine each log flush (engine.Options.OnFlush), from their own
// goroutines, into metrics that take no broker lock.
//
// Lock order, outermost first: the group host's locks (coordinator/group/host's
// doc.go: its lag sampler's, taken with no other lock held);
// Broker.admin (one change to the topics, their partitions or the
// configuration at a time); coordinator/group's own locks (a group's commits append to
// __consumer_offsets and look topics up under them); the engine Store's
// lock; Broker.net.mu (the listeners, closing) and the hosted topics' table
// (replication/host's topics.go), neither under the other; the
// partitions' locks. No lock is taken while a later one is held:
// deleteTopic removes a deleted topic's committed offsets after it
// releases Broker.admin, not under it. Broker.net.mu and the table are not
// held across I/O. The producer ids' lock
// (coordinator/txn/host's ProducerIDs) nests no other lock; it is held
// while the coordinator records a new block of producer ids (a small file
// written and fsync'd, once per 1000 ids). Broker.net.mu is held around server.Server's Bind and Stop,
// which take the server's lock (a leaf); no broker lock is held while a
// connection waits for request memory or a connection slot. ControlState.mu is taken with no other lock held and
// nests Broker.admin (replication/host/hosting.go opens and deletes logs under both), hence
// everything after it; in ZooKeeper mode nothing holding Broker.admin
// takes ControlState.mu. The group coordinator's Load and Unload are
// called under ControlState.mu (and StopReplica's Unload under
// Broker.admin too), never under a partition's role lock: Unload waits for
// appends in progress on the partition, which take only the partition's
// role lock (read), its replica lock, the Store's and the log's. No broker lock is held across a ZooKeeper call except
// Broker.admin around topic administration and configuration writes. A
// hosted partition's own locks (replication/host's doc.go: its role lock,
// then its replica lock, then the engine Log's) are taken after
// ControlState.mu, Broker.admin (LeaderAndIsr and configuration changes
// step the partitions under them), coordinator/group's locks and
// a transaction driver's mu (their appends; coordinator/txn/host), and a role change holding a partition's
// role lock calls no coordinator; an acks=all produce waits for its
// completion with no lock held. A metrics scrape lists the partitions
// from the table and releases its lock before it takes each partition's
// replica lock (Partition.Health). A replication quota's mutex
// (throttle.go) nests no other lock; a fetcher reads its follower quota
// under a partition's replica lock. The transaction coordinators' locks
// (coordinator/txn/host's doc.go) are taken under ControlState.mu and
// Broker.admin (LeaderAndIsr starts and stops transaction coordinators)
// and nest the partitions' locks, never held across a wait.
//
// Transactions (txns.go; coordinator/txn/host drives, coordinator/txn
// decides): a driver per partition of __transaction_state this broker leads runs the
// transaction coordinator; the transaction handlers (22 with a
// transactional id, 24-26, 65, 66) route requests to it by transactional
// id, and it sends WriteTxnMarkers to the partitions' leaders. A partition
// leader verifies a transactional batch's partition with the coordinator
// before the batch opens its producer's transaction there (txnverify.go
// builds coordinator/txn/host's Verifier, KIP-890; its lock is a leaf).
package broker
