// Package controller holds the decisions of sluice's cluster controller as
// pure functions and values: no ZooKeeper, network, goroutine or clock, so
// tests drive them directly and the controller loop (in coordinator/zk)
// only performs what they decide. Kafka 3.9's ZooKeeper-mode controller is
// the reference; each rule names where in Kafka it comes from.
//
//   - placement.go: where the replicas of new topics and partitions go.
//   - assignment.go: CreateTopics' and CreatePartitions' rules for explicit
//     assignments and counts, and which placement they get.
//   - controller.go: the Controller (the decision core of one election),
//     its events, writes, requests, and Step, Ready and Advance.
//   - context.go: its view of the cluster (Kafka's ControllerContext).
//   - events.go: what it does on each event (KafkaController's handlers).
//   - alter.go: leaders' AlterPartition requests (processAlterPartition).
//   - elect.go: ElectLeaders' preferred and unclean elections
//     (processReplicaLeaderElection) and topics' unclean election setting.
//   - rebalance.go: the automatic leader rebalance's check
//     (checkAndTriggerAutoLeaderRebalance).
//   - reassign.go: partition reassignment (KIP-455), by
//     AlterPartitionReassignments and /admin/reassign_partitions.
//   - partitions.go: the partition state machine and the election rule.
//   - deletion.go: topic deletion (Kafka's TopicDeletionManager).
//   - requests.go: the per-broker batches of control requests (Kafka's
//     ControllerBrokerRequestBatch).
//   - errors.go: the errors, with Kafka's codes and messages.
//
// # The decision core
//
// A Controller is built by New for one election (broker id, controller
// epoch) and driven as etcd raft's RawNode: events in by Step, decisions
// out by Ready, acknowledged by Advance. The driver, on one goroutine:
//
//	c := controller.New(self, election.Epoch, controller.Options{})
//	c.Step(controller.Load{...})         // read after winning the election
//	for {
//		rd := c.Ready()
//		if rd.Resigned { stop being controller }
//		issue rd.Writes (each as a multi-op with the /controller_epoch check)
//		queue rd.Requests (per broker, in order)
//		c.Advance(rd)
//		c.Step(each event that came: a watch fired, a write's result, a response)
//	}
//
// Stepping several events before taking a Ready (the results of a
// multi-op, the responses that arrived) batches their consequences into
// fewer, larger requests.
//
// Events: Load (the whole cluster: /brokers/ids with each registration's
// czxid as broker epoch, /brokers/topics with assignments and znode
// versions, the partition state znodes with their versions,
// /admin/delete_topics), BrokersChanged (all registrations, after the
// children of /brokers/ids changed), TopicsChanged (assignments of new
// topics, and of topics whose znode changed: the driver watches each
// topic's data, as Kafka's partition modification handlers), DeleteTopics
// (the children of /admin/delete_topics), WriteResult (one per Write), and
// Response (one per Request: the broker's answer, or an error when the
// driver gave up on it), AlterPartition (a leader's request to change
// its ISR, which a later Ready answers in its Answers; the driver sends
// each Answer back to the leader after Advance), ElectLeaders (an
// administrator's election, answered likewise in Elections), TopicConfigs
// (topics' unclean.leader.election.enable, after a config change
// notification), ImbalanceCheck (a tick of the automatic rebalance, which
// the driver steps every leader.imbalance.check.interval.seconds: the core
// has no clock), AlterReassignments (an administrator's reassignment,
// answered in Reassignments) and ZkReassignments (/admin/reassign_partitions,
// read when created or changed). Liveness includes: once every follower
// caught up, no reassignment is left and each has its last target.
//
// Writes may be pipelined and batched into multi-ops; each is answered
// alone (a write that failed only because another op of its multi did is
// answered with a plain error, and asked for again). On ErrConflict for a
// state write the driver reads the znode back into WriteResult.Current.
// Requests to one broker must be delivered in Ready order, one connection
// per broker as Kafka's RequestSendThread, retried until the broker's
// registration changes; requests to different brokers are independent.
// Requests share read-only slices: the driver must not modify them.
//
// # Invariants
//
// Checked after every step by the tests' checker (invariants_test.go),
// over table tests and a seeded simulator (sim_test.go):
//
//   - Every partition state written has a non-empty ISR of replicas, and a
//     leader that is NoLeader or a live member of the ISR; its controller
//     epoch is this controller's.
//   - An election's leader comes from the committed ISR, with the recovery
//     state kept, except in an unclean election: only when the topic's
//     unclean.leader.election.enable or an ElectLeaders UNCLEAN allowed it
//     and no member of the committed ISR is live; its ISR is the new
//     leader alone, its state RECOVERING, and its write says Unclean.
//   - Leader epochs only rise: a write's is above every epoch the
//     partition's state znode has had as far as any controller saw it (an
//     update bumps the committed epoch; a state znode created again after
//     it vanished starts past the epoch it had). The exception is a
//     leader's ISR change (AlterPartition), which keeps the committed
//     leader and leader epoch and changes only the ISR.
//   - An AlterPartition answered without error for a partition carries the
//     committed state (the one just written, with the znode's new version
//     as partition epoch); the simulator checks it is ZooKeeper's and holds
//     the ISR the leader asked for.
//   - An update is conditional on the committed version; at most one state
//     write per partition is in flight; none for a topic being deleted.
//   - Every request carries this controller's id and epoch and the
//     registered epoch of the broker it goes to; none goes to a dead broker;
//     a Ready holds at most one UpdateMetadata, one LeaderAndIsr and one
//     StopReplica per broker.
//   - LeaderAndIsr and UpdateMetadata carry committed states only (with the
//     znode's version as partition epoch), never one a write in flight is
//     about to change; LeaderAndIsr goes only to replicas, never for a topic
//     being deleted; UpdateMetadata's live brokers are the controller's.
//   - StopReplica (delete=true) goes only to replicas of topics being
//     deleted, or to brokers a reassignment removed from a partition's
//     replicas; a topic's znodes are deleted only once every replica was.
//   - A state or a request names only replicas ZooKeeper's assignment has:
//     a partition whose replicas a reassignment changed is decided and told
//     of once its topic's znode holds them.
//   - An ElectLeaders answer has one result per partition asked, in
//     order; a leader it reports elected (the first replica, for a
//     preferred election) is one the committed state has had since the
//     request, as is the first replica of a preferred election not needed.
//
// Liveness, checked by the simulator once faults stop and every broker
// runs: every partition of every topic is online, every deletion has
// completed, every broker's metadata equals the controller's view,
// every replica has its partition's current leader epoch, every
// ElectLeaders is answered, and once every follower has caught up (joined
// the ISR), an ElectLeaders PREFERRED of every partition, or an imbalance
// check at 0 %, leaves each led by its first replica.
//
// # Differences from Kafka
//
// Brokers are told of a state once ZooKeeper has it, as in Kafka, but the
// writes are asynchronous: decisions made while a partition's write is in
// flight wait for its result, and a decision not yet handed out is
// replaced by a newer one. A new partition's LeaderAndIsr goes to every
// live replica (Kafka's goes to its ISR, which holds every live replica
// there). A broker's death sends UpdateMetadata for the partitions it
// hosts but no LeaderAndIsr with unchanged states to the other replicas.
// Topic deletion leaves the state znodes as they are until the topic's
// znodes go, and never sends LeaderAndIsr for the topic's partitions.
// SetAssignment is conditional on the topic znode's version. A driver that
// gives up on a request gets the broker told everything again.
package controller
