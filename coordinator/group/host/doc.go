// Package host hosts sluice's group coordinator (coordinator/group) on a
// broker: its Store is group.Store over the partitions of
// __consumer_offsets the broker leads.
//
// It owns store.go: appends (plain, and a transaction's offsets with their
// KIP-890 verification guard) and the reading of a partition to its log
// end, batches of one producer and kind read together, transaction markers
// reported as group.Record markers, a storage defect named by partition
// and offset.
//
// It may call: coordinator/group (its record type and errors),
// replication/host (the partition: AppendAsLeader, AwaitReplicated,
// ReadChunks) and engine's batch and record parsing. The broker passes in
// the partitions it leads (Options.Leader) and the transaction
// verification (Options.VerifyTxn); it imports nothing of broker/.
//
// Lock order: a Store holds no lock of its own; an append takes the
// partition's locks (replication/host's doc.go) and waits for replication
// with none held.
package host
