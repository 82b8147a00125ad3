// Package replication holds the replication logic of a Kafka partition as
// a deterministic state machine: no I/O, goroutine or clock (time comes in
// as events), so tests drive it directly and a simulator runs thousands of
// interleavings per second. The broker drives it and performs its
// effects. Kafka 3.9 (ZooKeeper mode) is the reference: Partition.scala
// and Replica.scala for the leader, AbstractFetcherThread for the
// follower; each rule names its origin.
//
//   - replica.go: the Replica, its Config, events, Ready, and Step, Ready
//     and Advance.
//   - leader.go: the leader (follower fetch states, ISR and AlterPartition,
//     high watermark, acks=all waiters).
//   - follower.go: the follower (what to fetch, truncation by epoch, log
//     start catch-up, the high watermark learnt from the leader).
//   - epochs.go: its copy of the log's leader-epoch cache.
//   - errors.go: the errors it decides (franz-go kerr values).
//
// # The loop
//
// One Replica per partition replica on a broker, driven as etcd raft's
// RawNode, on one goroutine (or under the partition's lock):
//
//	r := replication.New(replication.Config{Self: id, MinInsyncReplicas: 2})
//	r.Step(replication.BecomeFollower{...}) // a LeaderAndIsr
//	for {
//		rd := r.Ready()
//		if rd.Truncated { log.TruncateTo(rd.Truncate.Offset) (or truncate fully and start there) }
//		append rd.Append (the FetchResult's batches, as the leader wrote them)
//		if rd.NewEpoch { the log has recorded rd.AssignEpoch (the driver's BecomeLeader does it first) }
//		publish rd.HighWatermark, rd.LogStart; send rd.AlterPartition (once per Seq), rd.Fetch;
//		answer rd.Answers (records [From, LogEnd) of the log) and rd.Completed
//		r.Advance()
//		if rd.Append was performed { r.Step(FetchAppended{rd.AppendSeq, the log's end after it, its error}) }
//		r.Step(the next event: Appended, FollowerFetch, Tick, FetchResult, ...)
//	}
//
// Ready must be taken after each Step that can truncate or append (a
// FetchResult, BecomeFollower). Its log view is handed in by BecomeLeader,
// BecomeFollower and Resume (LogState) and kept in step by Appended, by its
// truncations and by FetchAppended: a follower's view moves over fetched
// batches only once the log says it took them, so a refused append is
// never counted as held. Records refused as damaged are fetched again from
// where the log ends, after the driver's backoff (FetchRequest.Backoff);
// any other failure of the log (a storage error, a log that does not end
// where the view does) fails the follower (Failed) until Resume or a role
// change, and the leader, which no longer hears from it, shrinks it out of
// the ISR.
//
// # Invariants
//
// Checked after every step by the simulator (sim_test.go,
// invariants_test.go) over seeded schedules of crashes, restarts, leader
// changes and a network that delays, drops, duplicates and reorders:
//
//   - An acknowledged acks=all record is held by every member of the
//     controller's ISR, unless a crash took it from a member that stayed in
//     the ISR (the last one, or several crashing together), which Kafka
//     does not promise either; with every message flushed, never.
//   - Replicas whose log was validated against the current leader epoch
//     (the leader, and followers that fetched at it without divergence)
//     hold the same records below both of their high watermarks; ISR
//     members hold the leader's records below its high watermark.
//   - At most one leader per leader epoch; the leader's high watermark
//     never goes back within its epoch, and never passes its log end.
//   - The leader's high watermark is the smallest log end over the maximal
//     ISR (committed ISR and the change in flight, KIP-497) and the
//     caught-up followers about to join it, and does not advance while the
//     committed ISR is below min(min.insync.replicas, replicas) (KIP-966's
//     rule, Kafka 3.7+). A new leader's may lag until its followers fetch.
//   - Every replica's view of its log is the log (its end and epochs),
//     but a failed follower's, which Resume reads again.
//   - One AlterPartition in flight per partition; a follower joins the ISR
//     only once it reached the high watermark and the leader's epoch start,
//     and the request names its broker epoch (KIP-903), so one that
//     restarted since is refused. Answers are matched by Seq.
//   - Followers truncate by leader epoch, never to the high watermark
//     (KIP-101), one epoch at a time through fast leader changes (KIP-279),
//     on the fetch response's DivergingEpoch (KIP-320).
//   - An acks=all produce completes when the high watermark reaches its
//     last offset + 1 (NOT_ENOUGH_REPLICAS_AFTER_APPEND if the maximal ISR
//     is then below min.insync.replicas), times out at its deadline, and
//     fails with NOT_LEADER_OR_FOLLOWER when its leader steps down.
//
// Broken variants, behind test seams, are caught by the simulator within
// the CI run (TestSimulatorCatchesTruncationToHighWatermark,
// TestSimulatorCatchesKnownBadVariants): followers truncating to the high
// watermark; a follower counting a refused append as held; a client
// append written after its broker became a follower; an old leader's
// fetch answer appended between the log's and the core's leadership; ISR
// changes never sent again after a retriable error. The faults include
// append refusals and failures (a prefix taken or none), every
// AlterPartition error a controller gives (NOT_CONTROLLER,
// REQUEST_TIMED_OUT applied or not, UNKNOWN_SERVER_ERROR,
// OPERATION_NOT_ATTEMPTED, and the fencing ones), and client appends and
// role changes in flight across fetch answers.
//
// AlterPartition errors are handled as Kafka's AlterPartitionManager and
// Partition.handleAlterPartitionError: OPERATION_NOT_ATTEMPTED and
// INELIGIBLE_REPLICA go back to the committed ISR; FENCED_LEADER_EPOCH,
// INVALID_UPDATE_VERSION, UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST and
// NEW_LEADER_ELECTED wait for a LeaderAndIsr; any other error, and no
// answer, send the same proposal again.
//
// # Differences from Kafka
//
// The leader's fetch answer names a range [From, LogEnd); the byte limits
// and the waiting for replica.fetch.min.bytes are the driver's. The
// follower retries at once after an error; replica.fetch.backoff.ms is
// the driver's. A truncation drops epoch-cache entries from its offset on
// even when the log does not shrink (an epoch recorded by a former leader
// at its log end with no records), so that the next fetch names the epoch
// of its last record.
package replication
