package broker

// LeaderAndIsr (key 4), versions 0-7: the controller makes this broker
// leader or follower of partitions.
//
// Behavior:
//   - Fenced as every control request (broker/cluster/control.go): a stale broker
//     epoch gets STALE_BROKER_EPOCH, a sender that is not the controller or
//     a controller epoch below the highest seen STALE_CONTROLLER_EPOCH, at
//     the top level and on every partition (Kafka's getErrorResponse). The
//     single node refuses every request from the network this way (its own
//     controller's come by a call: localcontrol.go).
//   - Per partition, as ReplicaManager.becomeLeaderOrFollower: a topic id
//     other than the one this broker holds for the topic gets
//     INCONSISTENT_TOPIC_ID; a leader epoch newer than the one held (-1 for
//     a partition not hosted) is recorded in the role table
//     (broker/cluster/roles.go, decided by broker/cluster/leaderandisr.go) as leader (Leader is this broker) or follower, unless
//     this broker is not among the replicas (UNKNOWN_TOPIC_OR_PARTITION);
//     an older epoch gets STALE_CONTROLLER_EPOCH, and so does the same
//     epoch, except when it brings a topic id for a partition that had
//     none (recorded, NONE), or names a follower whose log could not take
//     the leader's records (KAFKA_STORAGE_ERROR: broker/cluster/zookeeper.go).
//   - An accepted partition's log is opened, created when new, and it
//     becomes leader or follower (replication/host/hosting.go); a log that cannot be opened
//     is KAFKA_STORAGE_ERROR. The Type field (v5+, full or incremental) is not acted on:
//     Kafka uses it only for stray partitions of a KRaft migration.
//
// Version notes: v0-v1 list partitions with their topic; v2+ group them by
// topic and carry the broker epoch; v3+ adding/removing replicas (ignored);
// v4+ flexible; v5+ topic ids, and the response groups partitions by topic
// id; v6+ leader recovery state (ignored); v7 IsKRaftController.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/replication/host"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(4, 0, 7, handleLeaderAndIsr) }

func handleLeaderAndIsr(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.LeaderAndISRRequest)
	if !c.authorizedCluster(acl.OpClusterAction) {
		resp := req.ResponseKind().(*kmsg.LeaderAndISRResponse)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	return c.b.leaderAndIsr(req, c.b.plane.state.Fence), nil
}

// leaderAndIsr handles a LeaderAndIsr fenced by fence: the network's
// (cluster.ControlState.Fence) or the single node's own controller's
// (cluster.ControlState.Local).
func (b *Broker) leaderAndIsr(req *kmsg.LeaderAndISRRequest, fence cluster.FenceFunc) *kmsg.LeaderAndISRResponse {
	states := cluster.LeaderAndIsrStates(req)
	// The topics' configs are read before the Store opens their logs
	// under its lock (replication/host/hosting.go).
	loaded := map[string]bool{}
	for _, s := range states {
		if _, ok := b.coord.Topic(s.Topic); !ok && !loaded[s.Topic] {
			loaded[s.Topic] = true
			if err := b.coord.LoadTopic(s.Topic); err != nil {
				b.log.Warn("reading a topic's config", "topic", s.Topic, "err", err)
			}
		}
	}
	code := fence(req.ControllerID, req.ControllerEpoch, req.BrokerEpoch, req.Version >= 2, req.IsKRaftController,
		func() { b.becomeLeaderOrFollower(states) })
	return cluster.LeaderAndIsrResponse(req, code, states)
}

// becomeLeaderOrFollower applies the partition states to the role table
// (broker/cluster/leaderandisr.go decides), then makes the logs of the
// accepted ones follow their roles. Called under ControlState.mu.
func (b *Broker) becomeLeaderOrFollower(states []cluster.LeaderAndIsrState) {
	tab := b.plane.state.Roles.Edit()
	tab.ApplyLeaderAndIsr(states, cluster.Hosting{Self: b.cfg.ID, Failed: b.replicaFailed,
		TopicID: func(topic string) [16]byte {
			if t := b.topic(topic); t != nil {
				return t.ID
			}
			return [16]byte{}
		}})
	b.plane.state.Roles.Publish(tab)
	// The logs, leadership and groups follow the new roles
	// (replication/host/hosting.go).
	var order []string
	byTopic := map[string][]host.Hosted{}
	for i := range states {
		s := &states[i]
		if !s.Accepted {
			continue
		}
		if _, ok := byTopic[s.Topic]; !ok {
			order = append(order, s.Topic)
		}
		r := tab.Roles[engine.Partition{Topic: s.Topic, Partition: s.P.Partition}]
		byTopic[s.Topic] = append(byTopic[s.Topic], host.Hosted{Partition: s.P.Partition, TopicID: engine.TopicID(r.TopicID), Leads: r.Leads(), Leader: r.Leader,
			Leadership: host.Leadership{Epoch: r.LeaderEpoch, PartitionEpoch: r.ZKVersion, ISR: r.ISR, Replicas: r.Replicas}})
	}
	for _, name := range order {
		failed := b.replicas.Host(name, byTopic[name])
		for i := range states {
			if s := &states[i]; s.Topic == name && failed[s.P.Partition] != nil {
				s.Code = kerr.KafkaStorageError.Code
			}
		}
	}
}

// replicaFailed reports whether this broker's replica of a partition is a
// follower whose log could not take the leader's records (a log directory
// event: broker/cluster/zookeeper.go).
func (b *Broker) replicaFailed(topic string, index int32) bool {
	p := b.partition(topic, index)
	return p != nil && p.Failed()
}
