// Package host is the replica manager: the partitions a broker hosts and
// the drivers around their replication cores (package replication), as
// Kafka's ReplicaManager, Partition, ReplicaFetcherManager and
// AlterPartitionManager are.
//
// What it owns:
//
//   - partition.go: Partition, a hosted partition's log with its leader
//     epoch, high watermark (KIP-207's epoch start, flush.messages=1's
//     durable bound, the last stable offset) and waiting fetches.
//   - owner.go: the owner of the log and of the role (one lock per
//     partition): appends as leader, role changes (BecomeLeader,
//     BecomeFollower, Stop), fetch answers stepped as follower.
//   - driver.go: the driver of the replication core (events stepped under
//     the partition's replica lock, the core's Ready performed before it
//     is released): the high watermark, acks=all waits, a leader's answers
//     to its followers' fetches, the clock, a failed follower's retry.
//   - fetcher.go: the followers' fetchers, per leader and fetcher id,
//     multiplexing the partitions into one Fetch.
//   - isrchange.go: a leader's ISR changes (AlterPartition) to the
//     controller, one in flight per partition.
//   - manager.go: Manager, which makes the partitions and holds what they
//     share: the broker's id and settings, and its collaborators
//     (Options).
//   - topics.go: the table of hosted topics (Kafka's allPartitions), by
//     name and by id, immutable Topic values replaced on change.
//   - logdirs.go: DescribeLogDirs' answer (the data directory, its space,
//     the hosted logs' sizes).
//   - markers.go: transaction markers as the leader writes them
//     (WriteTxnMarkers: the coordinator's appends, then acks=all).
//   - metrics.go: the hosted partitions' state for a metrics scrape.
//   - offsets.go: a leader's answers about its offsets (ListOffset,
//     DeleteRecords, OffsetForLeaderEpoch).
//   - produce.go: a client's batch as its leader takes it (Produce: the
//     checks of Kafka's LogValidator and ReplicaManager, then the append;
//     CheckTransactional, the whole request's producer check).
//   - hosting.go: what LeaderAndIsr and StopReplica do to the logs (Host,
//     Unhost): open or create them (an older topic's of the same name
//     deleted first), make them lead or follow, report each change to the
//     leadership listeners; delete them.
//   - leadership.go: the leadership listeners of a topic (Kafka's
//     onLeadershipChange): the group and transaction coordinators learn
//     which partitions of their topics this broker leads.
//
// What it may call: package replication (the cores), engine (the logs),
// metrics (the counters it is given), config (the fetchers' settings),
// wire/interbroker's Sender (a connection Options.Dial opens), and the
// collaborators of Options: the Controller that takes ISR changes, the
// follower Quota, the LogDirChanged hook, the Logs it opens (the engine
// Store), the broker's Admin lock, TopicConfigs, MakePartition and
// LiveBrokers, and the leadership listeners. It knows no broker, no topic
// by name and no coordinator: the broker decides which partitions are
// hosted and in which role (its LeaderAndIsr and StopReplica handling)
// and calls Host and Unhost, which put them in the table and report
// leadership changes; a single node is a Manager without Dial and
// Controller, which follows nothing.
//
// Lock order, from the outside in: the caller's locks (the broker's
// control lock, then Options.Admin, its administration lock, which Host
// and Unhost take around a topic's change and under which role changes and
// configuration changes run; the group and transaction coordinators'
// locks, under which their appends run), then a partition's role lock
// (Partition.role: written by role changes, read by appends and fetch
// answers), then its replica lock (replicaDriver.mu: the core), then the
// engine Log's lock, then the partition's waiters lock (Partition.mu).
// The topic table's lock (topicTable) is taken after the engine Store's
// lock and the caller's; no partition lock is taken under it, and it is
// held across nothing but the table's maps (and the metrics' DropTopic).
// Leadership listeners are called with no lock of the package held. A
// fetcher's lock (fetcher.mu) and the fetchers' (fetchers.mu) are taken
// under a partition's replica lock (want), never the other way: a
// fetcher reads its partitions' pending fetches with its own released. No
// lock is held while an acks=all produce waits, while a request is sent,
// or while an ISR change is answered; a role change holding the role lock
// calls nothing outside the package, and no goroutine takes the role lock
// twice (a writer waiting for it would block the second read).
// The live brokers' lock (Manager.live) is taken with none of the
// package's held, before the partitions' replica locks.
// lockorder_test.go checks the order on the real locks.
package host
