// Package txn holds the decisions of sluice's transaction coordinator for
// one partition of __transaction_state, as pure values: no log, network,
// goroutine or clock, so tests drive it directly and a driver
// (coordinator/txn/host: one per partition of __transaction_state the
// broker leads) only performs what it decides. Kafka 3.9's TransactionCoordinator, TransactionMetadata and
// TransactionStateManager are the reference.
//
//   - state.go: the states, Kafka's legal transitions, a transactional
//     id's metadata.
//   - coordinator.go: the Coordinator, its events, Ready and Advance.
//   - handlers.go: what each request and periodic check decides.
//   - load.go: rebuilding the state from the partition's records.
//   - record.go: the TransactionLog key and value format.
//
// # The decision core
//
// A Coordinator is built by New for one leadership of a __transaction_state
// partition (its leader epoch is the coordinator epoch the markers carry)
// and driven as etcd raft's RawNode. The driver, on one goroutine:
//
//	c := txn.New(partition, leaderEpoch, txn.Options{NewProducerID: ids.Next})
//	for each record of the partition { c.Load(key, value) }
//	c.Step(txn.Loaded{})
//	for {
//		rd := c.Ready()
//		append rd.Writes to the partition in order (acks=all)
//		send rd.Markers (WriteTxnMarkers, batched per leader)
//		send rd.Answers to the clients waiting on their Req
//		c.Advance(rd)
//		c.Step(txn.Tick{NowMs: now})
//		c.Step(each event that came: a request, a WriteResult, a MarkerResult,
//		       AbortTimedOut or ExpireIDs when their interval passed)
//	}
//
// No event may be stepped between Ready and Advance. Every Write is
// answered by exactly one WriteResult and every Marker by MarkerResults
// until one has Code 0 or Gone; a Marker or Write that failed and must be
// retried appears again in a later Ready with the same ID (the driver may
// wait before sending it again).
//
// # What decides what (Kafka's rules)
//
// A request that changes state is answered only once its record is
// written; one that fails validation, or changes nothing, at once. At most
// one transition per transactional id is in flight (Kafka's pendingState):
// a request meeting one gets CONCURRENT_TRANSACTIONS.
//
//   - InitProducerId: a new id gets a producer id from Options.NewProducerID
//     and epoch 0; a known one in Empty or Complete* an epoch bump (a new
//     producer id, epoch 0, once the epoch is exhausted), which fences the
//     older producer; Ongoing is first aborted under a bumped epoch and
//     answered CONCURRENT_TRANSACTIONS, so the client retries and bumps
//     again; Prepare* is CONCURRENT_TRANSACTIONS. KIP-360's producer id and
//     epoch: another producer id is PRODUCER_FENCED, the previous epoch a
//     retry answered with the bump it missed.
//   - AddPartitionsToTxn and AddOffsetsToTxn (the group's __consumer_offsets
//     partition) start or extend a transaction: unknown id or producer id
//     INVALID_PRODUCER_ID_MAPPING, other epoch PRODUCER_FENCED, Prepare*
//     CONCURRENT_TRANSACTIONS.
//   - EndTxn: Ongoing writes PrepareCommit or PrepareAbort and is answered
//     when that is written; then the markers go to every partition, and
//     once all are written Complete* is written (retried until it is). A
//     retry of the outcome already decided is CONCURRENT_TRANSACTIONS while
//     preparing and success once complete; the other outcome, or Empty,
//     INVALID_TXN_STATE.
//   - Versions from before PRODUCER_FENCED (InitProducerId < 4, the others
//     < 2) get INVALID_PRODUCER_EPOCH instead, as KafkaApis answers them.
//   - A failed record answers its request with Kafka's mapping
//     (NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT and the like:
//     COORDINATOR_NOT_AVAILABLE; NOT_LEADER_OR_FOLLOWER: NOT_COORDINATOR)
//     and changes nothing, except that a fencing epoch bump stays in memory
//     (the old epoch stays fenced) and is not bumped again by the next
//     fence (hasFailedEpochFence).
//   - AbortTimedOut aborts, under a bumped epoch, every Ongoing transaction
//     begun more than its timeout ago; ExpireIDs writes a tombstone for each
//     id idle (Empty or Complete*) for transactional.id.expiration.ms and
//     forgets it once written.
//   - A marker refused with INVALID_PRODUCER_EPOCH or
//     TRANSACTION_COORDINATOR_FENCED stops the sending of that
//     transaction's markers (Kafka's abortSending): it stays prepared until
//     a newer coordinator loads it. Other marker errors are retried.
//   - A new id whose first record failed is kept in memory with epoch -1
//     and its producer id, as Kafka's putTransactionStateIfNotExists
//     leaves it, so the retry reuses that producer id.
//   - Loaded resends the markers of transactions left in Prepare*.
//
// # Invariants
//
// Checked by the seeded simulator (sim_test.go) after every step: a
// transaction ends committed or aborted, never both; no marker is sent
// before its Prepare record is written; no request under a fenced epoch is
// answered with success; a producer id's epochs only rise; every request
// is answered once.
//
// # Differences from Kafka
//
//   - The state of a partition is one Coordinator, not one lock per
//     transactional id: the driver serializes events.
//   - The broker validates topics, authorization and the v4+ verification
//     form of AddPartitionsToTxn before stepping; non-transactional
//     InitProducerId never reaches this package.
//   - A Complete* record that fails is retried whatever the error; Kafka
//     stops when the coordinator moved (this core is then dropped anyway).
//   - Kafka 4.0's KIP-890 (transaction version 2, the previous and next
//     producer ids of the value's tagged fields) is not implemented:
//     LastProducerID and LastEpoch live in memory only, as in Kafka 3.9.
//   - A KIP-360 InitProducerId that retries, with the previous epoch, a
//     bump to an exhausted epoch gets that epoch back; Kafka's
//     prepareIncrementProducerEpoch throws (UNKNOWN_SERVER_ERROR).
//   - PrepareEpochFence is never written or kept: the fence bumps the epoch
//     at once and writes PrepareAbort, which is what Kafka 3.9 appends.
package txn
