// Package controller holds the decisions of sluice's cluster controller as
// pure functions and values: no ZooKeeper, network, goroutine or clock, so
// tests drive them directly and the controller loop (in coordinator/zk)
// only performs what they decide. Kafka 3.9's ZooKeeper-mode controller is
// the reference; each rule names where in Kafka it comes from.
//
//   - placement.go: where the replicas of new topics and partitions go.
//   - assignment.go: CreateTopics' and CreatePartitions' rules for explicit
//     assignments and counts, and which placement they get.
//   - errors.go: the errors, with Kafka's codes and messages.
package controller
