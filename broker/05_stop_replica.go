package broker

// StopReplica (key 5), versions 0-4: the controller tells this broker to
// stop replicating partitions, and to delete them when their topic is
// deleted or moved away.
//
// Behavior:
//   - Fenced as every control request (broker/cluster/control.go): a refused request
//     gets its code (STALE_BROKER_EPOCH or STALE_CONTROLLER_EPOCH) at the
//     top level with no partitions, as Kafka's KafkaApis and
//     ReplicaManager.stopReplicas answer. The single node refuses every
//     request from the network this way.
//   - Per partition, as stopReplicas: a partition not hosted is answered
//     NONE (and, if deleted, its logs are due for deletion: Kafka deletes
//     logs a returning broker no longer hosts); a hosted one whose request
//     leader epoch is -2 (deletion), -1 (none sent, before v3) or at least
//     the one held is stopped (NONE): removed from the role table when
//     deleted, else kept as neither leader nor follower; an older leader
//     epoch gets FENCED_LEADER_EPOCH.
//   - A stopped partition serves no more (NOT_LEADER_OR_FOLLOWER); a
//     deleted one has its log deleted (replication/host/hosting.go), also when this broker
//     was not hosting it since its start (KAFKA_STORAGE_ERROR if that
//     fails).
//
// Version notes: v0 lists topic-partition pairs and v1-v2 partitions by
// topic, with one DeletePartitions flag; v1+ broker epoch; v2+ flexible;
// v3+ per-partition leader epoch and delete flag; v4 IsKRaftController.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(5, 0, 4, handleStopReplica) }

// Leader epochs that skip StopReplica's epoch check (Kafka's
// LeaderAndIsr.EPOCH_DURING_DELETE and NO_EPOCH).
const (
	epochDuringDelete = -2
	noEpoch           = -1
)

// stopReplicaState is one partition of a request.
type stopReplicaState struct {
	tp          engine.Partition
	leaderEpoch int32
	delete      bool
}

func handleStopReplica(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.StopReplicaRequest)
	if !c.authorizedCluster(acl.OpClusterAction) {
		resp := req.ResponseKind().(*kmsg.StopReplicaResponse)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	return c.b.stopReplica(req, c.b.ctl.Fence), nil
}

// stopReplica handles a StopReplica fenced by fence (see leaderAndIsr).
func (b *Broker) stopReplica(req *kmsg.StopReplicaRequest, fence cluster.FenceFunc) *kmsg.StopReplicaResponse {
	var states []stopReplicaState
	for _, t := range req.Topics {
		switch {
		case req.Version == 0:
			states = append(states, stopReplicaState{engine.Partition{Topic: t.Topic, Partition: t.Partition}, noEpoch, req.DeletePartitions})
		case req.Version <= 2:
			for _, p := range t.Partitions {
				states = append(states, stopReplicaState{engine.Partition{Topic: t.Topic, Partition: p}, noEpoch, req.DeletePartitions})
			}
		default:
			for _, p := range t.PartitionStates {
				states = append(states, stopReplicaState{engine.Partition{Topic: t.Topic, Partition: p.Partition}, p.LeaderEpoch, p.Delete})
			}
		}
	}
	resp := req.ResponseKind().(*kmsg.StopReplicaResponse)
	resp.ErrorCode = fence(req.ControllerID, req.ControllerEpoch, req.BrokerEpoch, req.Version >= 1, req.IsKRaftController,
		func() { resp.Partitions = b.stopReplicas(states) })
	return resp
}

// stopReplicas applies accepted StopReplica states to the role table and
// returns each partition's answer. Called under ControlState.mu.
func (b *Broker) stopReplicas(states []stopReplicaState) []kmsg.StopReplicaResponsePartition {
	roles := &b.ctl.Roles
	tab := roles.Edit()
	out := make([]kmsg.StopReplicaResponsePartition, 0, len(states))
	var stop []stopReplicaState
	for _, s := range states {
		rp := kmsg.NewStopReplicaResponsePartition()
		rp.Topic, rp.Partition = s.tp.Topic, s.tp.Partition
		cur, hosted := tab.Roles[s.tp]
		switch {
		case !hosted:
			if s.delete {
				tab.Deleted[s.tp] = struct{}{}
				stop = append(stop, s) // a log left from before this broker's start
			}
		case s.leaderEpoch == epochDuringDelete || s.leaderEpoch == noEpoch || s.leaderEpoch >= cur.LeaderEpoch:
			if s.delete {
				delete(tab.Roles, s.tp)
				tab.Deleted[s.tp] = struct{}{}
			} else {
				cur.Stopped, cur.IsLeader = true, false
				tab.Roles[s.tp] = cur
			}
			s.leaderEpoch = max(s.leaderEpoch, cur.LeaderEpoch) // the groups' unload epoch
			stop = append(stop, s)
		default:
			rp.ErrorCode = kerr.FencedLeaderEpoch.Code
		}
		out = append(out, rp)
	}
	roles.Publish(tab)
	for _, s := range stop {
		if err := b.replicas.Unhost(s.tp, s.leaderEpoch, s.delete); err != nil {
			b.log.Error("deleting a stopped replica's log", "topic", s.tp.Topic, "partition", s.tp.Partition, "err", err)
			for i := range out {
				if out[i].Topic == s.tp.Topic && out[i].Partition == s.tp.Partition {
					out[i].ErrorCode = kerr.KafkaStorageError.Code
				}
			}
		}
	}
	return out
}
