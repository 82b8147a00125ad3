// Package reassign is the replica reassignment planner of sluice's
// console tools (sluice cluster rebalance, sluice cluster decommission,
// sluice topic reassign --generate) and the JSON files of Kafka's
// kafka-reassign-partitions.sh they read and write. It owns plan.go (Plan:
// pure functions from the current assignment and the brokers that may
// hold replicas to the partitions whose replicas change) and json.go (the
// reassignment and topics-to-move files, with errors that name the file,
// line and column). It may call nothing of the project: cmd/sluice reads
// the cluster, plans here and carries the plan out.
package reassign
