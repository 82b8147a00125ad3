// Package host hosts sluice's group coordinator (coordinator/group) on a
// broker: Groups holds the coordinator, its Store is group.Store over the
// partitions of __consumer_offsets the broker leads, and its lag sampler
// reports consumer lag.
//
// It owns groups.go (Groups: made at the broker's start, Coordinator for
// the group handlers, creating __consumer_offsets on the single node
// through Options.CreateTopic; Move as leadership of a partition changes;
// Close), lag.go (the lag sampler: high watermarks of the partitions the
// broker leads, ListOffsets to the leaders of the others) and store.go:
// appends (plain, and a transaction's offsets with their KIP-890
// verification guard) and the reading of a partition to its log end, batches of one producer and kind read together, transaction markers
// reported as group.Record markers, a storage defect named by partition
// and offset; metrics.go: the groups' state for a metrics scrape.
//
// It may call: metrics (the scrape's types), coordinator/group (its record type and errors),
// replication/host (the partition: AppendAsLeader, AwaitReplicated,
// ReadChunks), wire/interbroker (the lag sampler's ListOffsets, through
// LagOptions.Dial), config (the group keys) and engine's batch and record
// parsing. The broker passes in the partitions it leads (Options.Leader),
// the transaction verification (Options.VerifyTxn), the topic's creation
// and the metadata the lag sampler reads; it imports nothing of broker/.
//
// Lock order, outermost first: the lag sampler's mu (taken with no other
// lock held and held across its ListOffsets to other brokers, so that one
// sample runs at a time), then coordinator/group's locks (Stats). Groups.mu
// is a leaf but for the coordinator's Close, called under it. A Store holds
// no lock of its own; an append takes the partition's locks
// (replication/host's doc.go) and waits for replication with none held.
package host
