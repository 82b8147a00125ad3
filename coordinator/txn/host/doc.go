// Package host runs sluice's transaction coordinators on a broker: a
// Driver for each partition of __transaction_state the broker leads, each
// performing what its coordinator/txn core decides, and the Coordinators
// that start, stop and find them.
//
// It owns:
//   - coordinators.go: Coordinators (Move when leadership of a partition
//     of __transaction_state changes, Close, Driver, DriverFor, Call) and
//     the Options a broker passes in;
//   - driver.go: a Driver's loop: load the partition into the core, then
//     perform its Ready (appends, markers, answers) and step one event;
//   - addpartitions.go: AddPartitionsToTxn's part (AddPartitions: the
//     partitions checked, then added by the core, or verified against
//     its written state for KIP-890's VerifyOnly);
//   - admin.go: DescribeTransactions and ListTransactions answered from
//     the coordinators' state (Describe, List);
//   - markers.go: WriteTxnMarkers to the partitions' leaders;
//   - verifier.go: the partition leader's side of KIP-890, the Verifier
//     that asks a transactional id's coordinator whether a partition is
//     in its transaction (Kafka's AddPartitionsToTxnManager), for the
//     Produce path and the group coordinator's TxnOffsetCommit;
//   - producerids.go: ProducerIDs, the producer ids InitProducerId hands
//     out, from blocks the metadata backend records.
//
// It may call: coordinator/txn (the decisions), replication/host (the
// partition it appends to and reads: AppendAsLeader, AwaitReplicated,
// ReadRecords), wire/interbroker (markers and verifications to other
// brokers, through Options.Dial and VerifierOptions.Dial), coordinator
// (the metadata backend's errors) and engine's record types. Everything else of the broker
// comes in through Options: the partitions it leads (Leader), the
// metadata cache (Metadata), its own WriteTxnMarkers (WriteMarkers),
// producer ids and partition counts. It imports nothing of broker/.
//
// A driver is started when the broker becomes the partition's leader and
// stopped when it stops leading it: the partition's leader epoch is the
// coordinator epoch its markers carry, so the markers of a coordinator that
// lost the partition are refused by the partition leaders once a newer one
// sent theirs (TRANSACTION_COORDINATOR_FENCED). A request finds its driver
// by its transactional id's partition (group.PartitionFor over the
// partition count, Java's String.hashCode as Kafka's partitionFor): none is
// NOT_COORDINATOR, one still loading COORDINATOR_LOAD_IN_PROGRESS. A driver
// that stops answers every request waiting on it NOT_COORDINATOR, so the
// client finds the new coordinator.
//
// Lock order: Coordinators.mu, then Driver.mu, then the partition's locks
// (replication/host's doc.go). Driver.mu is held across an append to
// __transaction_state, so that no append of a stopped driver lands after
// stopDriver returns; neither is held across a wait for replication or the
// network. The broker calls Move under its own locks (controlState.mu,
// Broker.admin), which therefore come before Coordinators.mu. The
// Verifier's mu and ProducerIDs.mu are leaves; ProducerIDs.mu is held
// while the backend records a block of ids.
package host
