// Package group is sluice's group coordinator: Kafka's classic consumer
// group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) and the
// committed offsets of groups (OffsetCommit, OffsetFetch, OffsetDelete),
// with ListGroups, DescribeGroups and DeleteGroups. It follows Kafka 3.9's
// GroupCoordinator (the classic protocol) rule for rule; where a rule is
// taken from there, the comment names it.
//
// # States
//
//	         join (new member)              all members joined, or the
//	Empty ──────────────────────► Preparing  rebalance timeout
//	  ▲                           Rebalance ─────────────────────► Completing
//	  │ last member leaves /          ▲  ▲                          Rebalance
//	  │ expires                      │  │ join with new metadata,      │
//	  └──────────────────────────────┘  │ leader rejoins, a member     │ leader's
//	                                    │ leaves or expires            │ SyncGroup
//	                                    └──────────── Stable ◄─────────┘
//
// Dead is where a deleted group goes; nothing leaves it.
//
// Joins wait ("park") until the rebalance completes: when every known
// member has rejoined, or when the rebalance timeout (the largest of the
// members') ends, members that did not rejoin are removed. The first
// rebalance of an empty group waits group.initial.rebalance.delay.ms, and
// again while new members keep joining, up to the rebalance timeout
// (Kafka's InitialDelayedJoin). SyncGroup requests of followers park until
// the leader's SyncGroup brings the assignment, which is stored before it
// is handed out. A member is removed when no heartbeat (or join, sync,
// commit) arrives within its session timeout, except while it waits for a
// join or sync to complete.
//
// # Storage
//
// Offsets and group metadata live in the partitions of the internal topic
// __consumer_offsets, through the Store interface the broker provides;
// this package knows nothing of the broker or the engine. A group's
// partition is Kafka's: abs(Java String.hashCode(group)) % partitions.
// Records use Kafka's formats (kmsg's OffsetCommitKey/Value and
// GroupMetadataKey/Value): key version 0 or 1 is an offset commit, 2 the
// group's metadata; a record without a value (a tombstone) deletes the key.
// A partition is read in offset order and the last record of each key
// wins.
//
// # Transactional offsets
//
// TxnOffsetCommit (txnoffsets.go) has the broker verify that the group's
// partition is in the transaction (Store.VerifyTxn, KIP-890), writes the
// transaction's offsets to it as a transactional batch of its producer
// (Store.AppendTxn) and keeps them pending under the producer id, out of
// OffsetFetch's sight (UNSTABLE_OFFSET_COMMIT for RequireStable), until the
// broker reports the producer's marker on that partition (CompleteTxn): a
// commit makes each the committed offset unless one written after it
// replaced it, an abort drops them. Coordinator.mu maps each producer id to
// the groups holding its pending offsets. A load replays the batches and
// markers in log order; a marker reported while its partition loads is
// applied when the load installs its groups.
//
// # Ownership of partitions
//
// A coordinator serves the groups of the partitions it owns, as Kafka's
// GroupCoordinator does the partitions of __consumer_offsets this broker
// leads. New (the single node) reads every partition before it returns
// and owns them all for good. NewPartitioned (a cluster) owns none; each
// partition moves between three states:
//
//	             Load(p, e)                     read done, still current
//	not owned ─────────────────► loading ──────────────────────────────► owned
//	    ▲  ▲   read failed or stale   │                                    │
//	    │  └──────────────────────────┘ Unload(p, e)                       │
//	    └──────────────────────────────────────────────────────────────────┘
//
// Requests for a group (the partition is PartitionFor(group)) are answered
// as Kafka's validateGroupStatus does: not owned → NOT_COORDINATOR,
// loading → COORDINATOR_LOAD_IN_PROGRESS, except that Heartbeat answers
// NONE and SyncGroup REBALANCE_IN_PROGRESS while loading, as Kafka's. Each
// API gives the error where its version carries one: OffsetCommit per
// partition (after UNKNOWN_TOPIC_OR_PARTITION), OffsetFetch per partition
// (v0-1), at the top (v2-7) or per group (v8+), DescribeGroups (with no
// state) and DeleteGroups per group, the others at the top. ListGroups
// lists the owned partitions' groups and answers COORDINATOR_LOAD_IN_PROGRESS
// while any partition loads. ExpireOffsets and DeleteTopicOffsets act on
// owned partitions' groups only: Coordinator.mu's map holds no other.
//
// Epochs: e is the partition's leader epoch (Kafka's coordinator epoch).
// Load and Unload older than the last one acted on are ignored (Kafka's
// maybeUpdateCoordinatorEpoch); an Unload with a negative epoch (a
// StopReplica without one) always applies. A load is a goroutine reading the store;
// it installs its groups only if it is still the partition's current load
// when done: an Unload, a newer Load (which starts a new read) or Close
// in between makes it stale, its result is discarded, and it stops reading
// at its next record. A Load of an owned partition keeps its groups (as
// Kafka). A failed read leaves the partition not owned (WaitLoaded returns
// the error; a Load at the same epoch tries again); Kafka marks it owned
// with what it read, which would serve missing offsets as uncommitted.
// Unload removes the partition's groups from memory and writes nothing:
// they become Dead, parked JoinGroup and SyncGroup requests are answered
// NOT_COORDINATOR and their timers stopped (Kafka's onGroupUnloaded).
// WaitLoaded waits for a load's outcome.
//
// An Append that fails with an error wrapping ErrNotLeader (the broker
// lost the partition's leadership) is answered NOT_COORDINATOR, as Kafka
// maps NOT_LEADER_OR_FOLLOWER on the offsets topic; other store errors
// COORDINATOR_NOT_AVAILABLE.
//
// # Locking
//
// Coordinator.mu guards the map of groups and the partitions' ownership;
// each group has its own mutex. A group's lock may be held while
// Coordinator.mu is taken (to forget a dead group; a completing load holds
// the locks of its new, not yet reachable groups while it installs them),
// never the reverse: Unload removes the groups under Coordinator.mu, then
// takes each group's lock after releasing it, so it waits for an append in
// progress for one of them. Appends to the store are
// made under the group's lock, so a group's records are written in the
// order its state changed. Parked requests wait on channels outside every
// lock. Timers (session, rebalance, sync expirations) take the group's lock
// and check that they are still current: every timer carries the sequence
// number it was armed with.
package group
