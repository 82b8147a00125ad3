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
//     (broker/cluster/roles.go) as leader (Leader is this broker) or follower, unless
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
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/replication/host"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(4, 0, 7, handleLeaderAndIsr) }

// leaderAndIsrState is one partition state of a request, with its topic.
type leaderAndIsrState struct {
	topic   string
	topicID [16]byte
	p       *kmsg.LeaderAndISRRequestTopicPartition
	code    int16
	// accepted: the state became the partition's role.
	accepted bool
}

func handleLeaderAndIsr(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.LeaderAndISRRequest)
	if !c.authorizedCluster(acl.OpClusterAction) {
		resp := req.ResponseKind().(*kmsg.LeaderAndISRResponse)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	return c.b.leaderAndIsr(req, c.b.ctl.Fence), nil
}

// leaderAndIsr handles a LeaderAndIsr fenced by fence: the network's
// (cluster.ControlState.Fence) or the single node's own controller's
// (cluster.ControlState.Local).
func (b *Broker) leaderAndIsr(req *kmsg.LeaderAndISRRequest, fence cluster.FenceFunc) *kmsg.LeaderAndISRResponse {
	var states []leaderAndIsrState
	for i := range req.PartitionStates { // v0-v1
		states = append(states, leaderAndIsrState{topic: req.PartitionStates[i].Topic, p: &req.PartitionStates[i]})
	}
	for i := range req.TopicStates { // v2+
		ts := &req.TopicStates[i]
		for j := range ts.PartitionStates {
			states = append(states, leaderAndIsrState{topic: ts.Topic, topicID: ts.TopicID, p: &ts.PartitionStates[j]})
		}
	}
	// The topics' configs are read before the Store opens their logs
	// under its lock (replication/host/hosting.go).
	loaded := map[string]bool{}
	for _, s := range states {
		if _, ok := b.coord.Topic(s.topic); !ok && !loaded[s.topic] {
			loaded[s.topic] = true
			if err := b.coord.LoadTopic(s.topic); err != nil {
				b.log.Warn("reading a topic's config", "topic", s.topic, "err", err)
			}
		}
	}
	code := fence(req.ControllerID, req.ControllerEpoch, req.BrokerEpoch, req.Version >= 2, req.IsKRaftController,
		func() { b.becomeLeaderOrFollower(states) })
	resp := req.ResponseKind().(*kmsg.LeaderAndISRResponse)
	resp.ErrorCode = code
	for _, s := range states {
		pc := s.code
		if code != 0 {
			pc = code
		}
		rp := kmsg.NewLeaderAndISRResponseTopicPartition()
		rp.Topic, rp.Partition, rp.ErrorCode = s.topic, s.p.Partition, pc
		if req.Version < 5 {
			resp.Partitions = append(resp.Partitions, rp)
			continue
		}
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].TopicID != s.topicID {
			rt := kmsg.NewLeaderAndISRResponseTopic()
			rt.TopicID = s.topicID
			resp.Topics = append(resp.Topics, rt)
		}
		rt := &resp.Topics[len(resp.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	return resp
}

// becomeLeaderOrFollower applies accepted partition states to the role
// table, setting each one's code. Called under ControlState.mu.
func (b *Broker) becomeLeaderOrFollower(states []leaderAndIsrState) {
	roles := &b.ctl.Roles
	tab := roles.Edit()
	self := b.cfg.ID
	for i := range states {
		s := &states[i]
		tp := engine.Partition{Topic: s.topic, Partition: s.p.Partition}
		cur, hosted := tab.Roles[tp]
		held := cur.TopicID
		if !hosted {
			cur.LeaderEpoch = -1
			if t := b.topic(s.topic); t != nil {
				held = t.ID
			}
		}
		var zero [16]byte
		switch {
		case s.topicID != zero && held != zero && s.topicID != held:
			s.code = kerr.InconsistentTopicID.Code
		case s.p.LeaderEpoch > cur.LeaderEpoch:
			if !slices.Contains(s.p.Replicas, self) {
				s.code = kerr.UnknownTopicOrPartition.Code
				continue
			}
			id := s.topicID
			if id == zero {
				id = held
			}
			tab.Roles[tp] = cluster.Role{
				TopicID: id, Leader: s.p.Leader, LeaderEpoch: s.p.LeaderEpoch, IsLeader: s.p.Leader == self,
				ISR: s.p.ISR, Replicas: s.p.Replicas, ZKVersion: s.p.ZKVersion,
			}
			delete(tab.Deleted, tp)
			s.accepted = true
		case s.p.LeaderEpoch == cur.LeaderEpoch && hosted && s.topicID != zero && held == zero:
			cur.TopicID = s.topicID
			tab.Roles[tp] = cur
		case s.p.LeaderEpoch == cur.LeaderEpoch && hosted && b.replicaFailed(s.topic, s.p.Partition):
			// The controller asks after a log directory event
			// (broker/cluster/zookeeper.go): this follower's log cannot take writes.
			s.code = kerr.KafkaStorageError.Code
		default:
			s.code = kerr.StaleControllerEpoch.Code
		}
	}
	roles.Publish(tab)
	// The logs, leadership and groups follow the new roles
	// (replication/host/hosting.go).
	var order []string
	byTopic := map[string][]host.Hosted{}
	for i := range states {
		s := &states[i]
		if !s.accepted {
			continue
		}
		if _, ok := byTopic[s.topic]; !ok {
			order = append(order, s.topic)
		}
		r := tab.Roles[engine.Partition{Topic: s.topic, Partition: s.p.Partition}]
		byTopic[s.topic] = append(byTopic[s.topic], host.Hosted{Partition: s.p.Partition, TopicID: engine.TopicID(r.TopicID), Leads: r.Leads(), Leader: r.Leader,
			Leadership: host.Leadership{Epoch: r.LeaderEpoch, PartitionEpoch: r.ZKVersion, ISR: r.ISR, Replicas: r.Replicas}})
	}
	for _, name := range order {
		failed := b.replicas.Host(name, byTopic[name])
		for i := range states {
			if s := &states[i]; s.topic == name && failed[s.p.Partition] != nil {
				s.code = kerr.KafkaStorageError.Code
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
