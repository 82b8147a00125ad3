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
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(5, 0, 4, handleStopReplica) }

func handleStopReplica(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.StopReplicaRequest)
	if !c.authorizedCluster(acl.OpClusterAction) {
		resp := req.ResponseKind().(*kmsg.StopReplicaResponse)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	return c.b.stopReplica(req, c.b.plane.state.Fence), nil
}

// stopReplica handles a StopReplica fenced by fence (see leaderAndIsr).
func (b *Broker) stopReplica(req *kmsg.StopReplicaRequest, fence cluster.FenceFunc) *kmsg.StopReplicaResponse {
	states := cluster.StopReplicaStates(req)
	resp := req.ResponseKind().(*kmsg.StopReplicaResponse)
	resp.ErrorCode = fence(req.ControllerID, req.ControllerEpoch, req.BrokerEpoch, req.Version >= 1, req.IsKRaftController,
		func() { resp.Partitions = b.stopReplicas(states) })
	return resp
}

// stopReplicas applies StopReplica states to the role table
// (broker/cluster/stopreplica.go decides), stops the partitions and
// deletes their logs, and returns each partition's answer. Called under
// ControlState.mu.
func (b *Broker) stopReplicas(states []cluster.StopReplicaState) []kmsg.StopReplicaResponsePartition {
	tab := b.plane.state.Roles.Edit()
	out, stop := tab.ApplyStopReplica(states)
	b.plane.state.Roles.Publish(tab)
	for _, s := range stop {
		if err := b.replicas.Unhost(s.Partition, s.LeaderEpoch, s.Delete); err != nil {
			b.log.Error("deleting a stopped replica's log", "topic", s.Partition.Topic, "partition", s.Partition.Partition, "err", err)
			for i := range out {
				if out[i].Topic == s.Partition.Topic && out[i].Partition == s.Partition.Partition {
					out[i].ErrorCode = kerr.KafkaStorageError.Code
				}
			}
		}
	}
	return out
}
