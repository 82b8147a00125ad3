package cluster

// StopReplica's decisions over the role table, as Kafka's
// ReplicaManager.stopReplicas makes them (the rules are written in
// broker/05_stop_replica.go): which partitions stop or are deleted, and
// each one's answer. No I/O: the
// broker stops the partitions and deletes their logs after
// (replication/host's Unhost).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
)

// Leader epochs that skip StopReplica's epoch check (Kafka's
// LeaderAndIsr.EPOCH_DURING_DELETE and NO_EPOCH).
const (
	epochDuringDelete = -2
	noEpoch           = -1
)

// StopReplicaState is one partition of a StopReplica.
type StopReplicaState struct {
	Partition   engine.Partition
	LeaderEpoch int32 // once applied, the epoch the partition stops at
	Delete      bool
}

// StopReplicaStates lists a request's partitions (v0 pairs, v1-v2 by topic
// with one delete flag, v3+ with an epoch and a flag each).
func StopReplicaStates(req *kmsg.StopReplicaRequest) []StopReplicaState {
	var states []StopReplicaState
	for _, t := range req.Topics {
		switch {
		case req.Version == 0:
			states = append(states, StopReplicaState{engine.Partition{Topic: t.Topic, Partition: t.Partition}, noEpoch, req.DeletePartitions})
		case req.Version <= 2:
			for _, p := range t.Partitions {
				states = append(states, StopReplicaState{engine.Partition{Topic: t.Topic, Partition: p}, noEpoch, req.DeletePartitions})
			}
		default:
			for _, p := range t.PartitionStates {
				states = append(states, StopReplicaState{engine.Partition{Topic: t.Topic, Partition: p.Partition}, p.LeaderEpoch, p.Delete})
			}
		}
	}
	return states
}

// ApplyStopReplica decides each state against t (an edited copy,
// published by the caller): it returns each partition's answer, and the
// states to stop (with deletion when asked; a partition not hosted is
// deleted too, a log left from before this broker's start).
func (t *RoleTable) ApplyStopReplica(states []StopReplicaState) (out []kmsg.StopReplicaResponsePartition, stop []StopReplicaState) {
	out = make([]kmsg.StopReplicaResponsePartition, 0, len(states))
	for _, s := range states {
		rp := kmsg.NewStopReplicaResponsePartition()
		rp.Topic, rp.Partition = s.Partition.Topic, s.Partition.Partition
		cur, hosted := t.Roles[s.Partition]
		switch {
		case !hosted:
			if s.Delete {
				t.Deleted[s.Partition] = struct{}{}
				stop = append(stop, s)
			}
		case s.LeaderEpoch == epochDuringDelete || s.LeaderEpoch == noEpoch || s.LeaderEpoch >= cur.LeaderEpoch:
			if s.Delete {
				delete(t.Roles, s.Partition)
				t.Deleted[s.Partition] = struct{}{}
			} else {
				cur.Stopped, cur.IsLeader = true, false
				t.Roles[s.Partition] = cur
			}
			s.LeaderEpoch = max(s.LeaderEpoch, cur.LeaderEpoch) // the groups' unload epoch
			stop = append(stop, s)
		default:
			rp.ErrorCode = kerr.FencedLeaderEpoch.Code
		}
		out = append(out, rp)
	}
	return out, stop
}
