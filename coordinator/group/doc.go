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
// At start every partition is read and the last record of each key wins.
//
// # Locking
//
// Coordinator.mu guards the map of groups; each group has its own mutex. A
// group's lock may be held while Coordinator.mu is taken (to forget a dead
// group), never the reverse. Appends to the store are
// made under the group's lock, so a group's records are written in the
// order its state changed. Parked requests wait on channels outside every
// lock. Timers (session, rebalance, sync expirations) take the group's lock
// and check that they are still current: every timer carries the sequence
// number it was armed with.
package group
