package controller

// The assignments of CreateTopics and CreatePartitions: Kafka 3.9's rules
// for which requests are refused, with which error and message, and the
// placement of those it accepts. Messages are ZooKeeper mode's
// (ZkAdminManager, AdminZkClient); where that mode has none for a case, or
// one that prints a Scala collection, the KRaft controller's
// (ReplicationControlManager).

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// PartitionAssignment is one partition of a CreateTopics topic's explicit
// assignment (CreatableReplicaAssignment).
type PartitionAssignment struct {
	Partition int32
	Replicas  []int32
}

// TopicRequest is what placement needs of one topic of CreateTopics.
type TopicRequest struct {
	// NumPartitions is the partition count; -1 for Defaults.Partitions.
	NumPartitions int32
	// ReplicationFactor is the replication factor; -1 for
	// Defaults.ReplicationFactor.
	ReplicationFactor int16
	// Assignments is an explicit assignment, or empty for placement. With
	// one, both counts must be -1.
	Assignments []PartitionAssignment
}

// Defaults are the broker's num.partitions and default.replication.factor.
type Defaults struct {
	Partitions        int32
	ReplicationFactor int16
}

// PlaceTopic returns the replicas of each partition of a new topic, index
// p for partition p, as Kafka's CreateTopics decides them
// (ZkAdminManager.createTopics): an explicit assignment as given, once
// CheckTopicAssignment accepts it, or AssignReplicas over the live brokers
// from a RandomStart. As in Kafka's ZooKeeper mode, an explicit assignment
// may name brokers that are not live (their replicas are offline until
// they return); CheckTopicAssignment can refuse those instead.
func PlaceTopic(req TopicRequest, d Defaults, brokers []Broker, rng *rand.Rand) ([][]int32, error) {
	if len(req.Assignments) > 0 {
		if req.NumPartitions != -1 || req.ReplicationFactor != -1 {
			return nil, fail(ErrInvalidRequest, "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.")
		}
		return CheckTopicAssignment(req.Assignments, nil)
	}
	partitions, rf := req.NumPartitions, req.ReplicationFactor
	if partitions == -1 {
		partitions = d.Partitions
	}
	if rf == -1 {
		rf = d.ReplicationFactor
	}
	return AssignReplicas(brokers, partitions, rf, RandomStart(rng, len(brokers)), 0)
}

// CheckTopicAssignment checks a new topic's explicit assignment and
// returns a copy of it indexed by partition.
// Refused, with ErrInvalidReplicaAssignment: a partition given twice; an
// empty replica list; a broker twice in one list; a broker not in known,
// unless known is nil (Kafka's ZooKeeper mode does not check; its KRaft
// mode refuses unregistered brokers); lists of different lengths; and
// partitions that are not numbered 0 to n-1.
func CheckTopicAssignment(assignments []PartitionAssignment, known []Broker) ([][]int32, error) {
	if len(assignments) == 0 {
		return nil, fail(ErrInvalidReplicaAssignment, "partitions should be a consecutive 0-based integer sequence")
	}
	byPartition := make(map[int32][]int32, len(assignments))
	rf := len(assignments[0].Replicas)
	for _, a := range assignments {
		if _, dup := byPartition[a.Partition]; dup {
			return nil, fail(ErrInvalidReplicaAssignment, "Found multiple manual partition assignments for partition %d", a.Partition)
		}
		if len(a.Replicas) == 0 {
			return nil, fail(ErrInvalidReplicaAssignment, "The manual partition assignment includes an empty replica list.")
		}
		ids := slices.Sorted(slices.Values(a.Replicas))
		for i, id := range ids {
			if known != nil && !slices.ContainsFunc(known, func(b Broker) bool { return b.ID == id }) {
				return nil, fail(ErrInvalidReplicaAssignment, "The manual partition assignment includes broker %d, but no such broker is registered.", id)
			}
			if i > 0 && ids[i-1] == id {
				return nil, fail(ErrInvalidReplicaAssignment, "The manual partition assignment includes the broker %d more than once.", id)
			}
		}
		if len(a.Replicas) != rf {
			return nil, fail(ErrInvalidReplicaAssignment, "All partitions should have the same number of replicas")
		}
		byPartition[a.Partition] = a.Replicas
	}
	out := make([][]int32, len(byPartition))
	for p, replicas := range byPartition {
		if p < 0 || int(p) >= len(out) {
			return nil, fail(ErrInvalidReplicaAssignment, "partitions should be a consecutive 0-based integer sequence")
		}
		out[p] = slices.Clone(replicas)
	}
	return out, nil
}

// PlaceNewPartitions returns the replicas of the partitions CreatePartitions
// adds to a topic whose current assignment is existing (index p for
// partition p): element i is partition len(existing)+i's. assignments, when
// not nil, are the request's explicit ones, in partition order; otherwise
// AssignReplicas places them over brokers (the live brokers) with
// NewPartitionsStart and the replication factor of partition 0, as
// ZkAdminManager.createPartitions and AdminZkClient.addPartitions do.
// A reassignment in progress (REASSIGNMENT_IN_PROGRESS) is the caller's
// check.
func PlaceNewPartitions(existing [][]int32, count int32, assignments [][]int32, brokers []Broker) ([][]int32, error) {
	if len(existing) == 0 || len(existing[0]) == 0 {
		// Kafka's AdminOperationException: UNKNOWN_SERVER_ERROR.
		return nil, errors.New("controller: unexpected existing replica assignment: partition id 0 is missing")
	}
	have := int32(len(existing))
	add := count - have
	switch {
	case add < 0:
		return nil, fail(ErrInvalidPartitions, "Topic currently has %d partitions, which is higher than the requested %d.", have, count)
	case add == 0:
		return nil, fail(ErrInvalidPartitions, "Topic already has %d partitions.", have)
	}
	rf := len(existing[0])
	if assignments == nil {
		return AssignReplicas(brokers, add, int16(rf), NewPartitionsStart(brokers, existing[0][0]), have)
	}
	var unknown []int32
	for _, replicas := range assignments {
		for _, id := range replicas {
			if !slices.ContainsFunc(brokers, func(b Broker) bool { return b.ID == id }) && !slices.Contains(unknown, id) {
				unknown = append(unknown, id)
			}
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, fail(ErrInvalidReplicaAssignment, "Unknown broker(s) in replica assignment: %s.", join(unknown))
	}
	if len(assignments) != int(add) {
		return nil, fail(ErrInvalidReplicaAssignment, "Increasing the number of partitions by %d but %d assignments provided.", add, len(assignments))
	}
	var badPartitions, badFactors []int32
	for i, replicas := range assignments {
		p := have + int32(i)
		if len(replicas) == 0 {
			return nil, fail(ErrInvalidReplicaAssignment, "Cannot have replication factor of 0 for partition id %d.", p)
		}
		if len(slices.Compact(slices.Sorted(slices.Values(replicas)))) != len(replicas) {
			return nil, fail(ErrInvalidReplicaAssignment, "Duplicate brokers not allowed in replica assignment: %s for partition id %d.", join(replicas), p)
		}
		if len(replicas) != rf {
			badPartitions = append(badPartitions, p)
			badFactors = append(badFactors, int32(len(replicas)))
		}
	}
	if len(badPartitions) > 0 {
		return nil, fail(ErrInvalidReplicaAssignment, "Inconsistent replication factor between partitions, partition 0 has %d while partitions [%s] have replication factors [%s], respectively.",
			rf, join(badPartitions), join(badFactors))
	}
	out := make([][]int32, len(assignments))
	for i, replicas := range assignments {
		out[i] = slices.Clone(replicas)
	}
	return out, nil
}

// join writes ids as Scala's mkString(", ") does.
func join(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ", ")
}
