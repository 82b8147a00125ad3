package broker

// Metadata, DescribeCluster and FindCoordinator in ZooKeeper mode, answered
// from the metadata cache (the controller's UpdateMetadata), as Kafka's
// ZkMetadataCache answers them: the live brokers with their endpoint, each
// partition's leader, leader epoch, replicas, ISR and offline replicas;
// the controller the last update came from.
//
// Rules as Kafka's KafkaApis.handleTopicMetadataRequest and
// ZkMetadataCache.getPartitionMetadata:
//   - A partition whose leader is not a live broker (-1, or a broker gone
//     since) is LEADER_NOT_AVAILABLE, with leader -1.
//   - A partition some replicas of which are offline lists them in
//     OfflineReplicas (v5+).
//   - A topic that does not exist is auto-created (auto.create.topics.enable,
//     the request allowing it) with num.partitions and
//     default.replication.factor, and answered LEADER_NOT_AVAILABLE until
//     the controller has created it; a replication factor above the live
//     brokers is INVALID_REPLICATION_FACTOR, as Kafka's auto-creation
//     answers.
//   - FindCoordinator names the leader of the group's partition of
//     __consumer_offsets (group.PartitionFor over
//     offsets.topic.num.partitions, which every broker of a cluster must
//     share, as in Kafka). Before that topic exists it is created with
//     offsets.topic.replication.factor, refused COORDINATOR_NOT_AVAILABLE
//     while fewer brokers are live (Kafka's rule); a partition without a
//     live leader is COORDINATOR_NOT_AVAILABLE too. A transactional id's
//     coordinator is found the same way in __transaction_state
//     (transaction.state.log.num.partitions and .replication.factor).

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/coordinator/group"
	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/security/acl"
)

// endpoint is a live broker's address on the listener named listener (a
// client is told the addresses of the listener it came on): this broker's
// own advertised address for itself (the single node's controller may have
// named it before the listener's port was known), else the broker's
// registered endpoint of that name. ok is false when the broker has none:
// Kafka leaves such a broker out.
func (b *Broker) endpoint(cb *cluster.Node, listener string) (host string, port int32, ok bool) {
	if cb.ID == b.cfg.ID {
		return b.selfEndpoint(listener)
	}
	for _, e := range cb.Endpoints {
		if e.Listener == listener {
			return e.Host, e.Port, true
		}
	}
	return "", -1, false
}

// clusterMetadata answers Metadata from the cache.
func (b *Broker) clusterMetadata(c *conn, req *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	snap := b.ctl.Cache.Load()
	for _, cb := range snap.Brokers {
		host, port, ok := b.endpoint(&cb, c.Listener().Name)
		if !ok {
			continue
		}
		br := kmsg.NewMetadataResponseBroker()
		br.NodeID, br.Host, br.Port, br.Rack = cb.ID, host, port, cb.Rack
		resp.Brokers = append(resp.Brokers, br)
	}
	cid := b.coord.ClusterID()
	resp.ClusterID = &cid
	resp.ControllerID = snap.ControllerID

	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		names := make([]string, 0, len(snap.Topics))
		for name := range snap.Topics {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			if c.authorized(acl.OpDescribe, acl.ResourceTopic, name) {
				resp.Topics = append(resp.Topics, topicMetadata(snap, req.Version, name, snap.Topics[name]))
			}
		}
		return resp
	}
	autoCreate := *b.cfg.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	for _, rt := range req.Topics {
		if rt.Topic == nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.TopicID = rt.TopicID
			mt.ErrorCode = kerr.UnknownTopicID.Code
			for name, t := range snap.Topics {
				if t.ID == rt.TopicID {
					if c.authorized(acl.OpDescribe, acl.ResourceTopic, name) {
						mt = topicMetadata(snap, req.Version, name, t)
					} else {
						mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
					}
					break
				}
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		name := *rt.Topic
		if !c.authorized(acl.OpDescribe, acl.ResourceTopic, name) {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.ErrorCode = rt.Topic, kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		if t := snap.Topics[name]; t != nil {
			resp.Topics = append(resp.Topics, topicMetadata(snap, req.Version, name, t))
			continue
		}
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = rt.Topic
		switch {
		case validateTopicName(name) != nil:
			mt.ErrorCode = kerr.InvalidTopicException.Code
		case autoCreate && !isInternal(name) && !c.authorizedCluster(acl.OpCreate) && !c.authorized(acl.OpCreate, acl.ResourceTopic, name):
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		case autoCreate && !isInternal(name):
			if mt.ErrorCode = b.autoCreateClusterTopic(name, snap); mt.ErrorCode == kerr.LeaderNotAvailable.Code {
				// Answered with the topic if the controller creates it
				// soon (on the single node, at once).
				if b.awaitMetadata(autoCreateWaitMs, func(s *cluster.Snapshot) bool { return topicLed(s, name) }) {
					now := b.ctl.Cache.Load()
					mt = topicMetadata(now, req.Version, name, now.Topics[name])
				}
			}
		default:
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		}
		resp.Topics = append(resp.Topics, mt)
	}
	return resp
}

// autoCreateClusterTopic writes a topic Metadata asked for and returns the
// code that answers it meanwhile.
func (b *Broker) autoCreateClusterTopic(name string, snap *cluster.Snapshot) int16 {
	rf := b.cfg.DefaultReplicationFactor
	if b.cluster == nil {
		rf = 1 // the single node holds one copy, whatever the default
	}
	if int(rf) > len(snap.Brokers) {
		return kerr.InvalidReplicationFactor.Code
	}
	_, err := b.coord.CreateTopic(name, controller.TopicRequest{NumPartitions: b.cfg.NumPartitions, ReplicationFactor: rf}, nil)
	if err != nil && !errors.Is(err, coordinator.ErrTopicExists) {
		b.log.Warn("auto-creating topic", "topic", name, "err", err)
		if code := controller.Code(err); code != kerr.UnknownServerError.Code {
			return code
		}
	} else if err == nil {
		b.log.Info("auto-created topic", "topic", name, "partitions", b.cfg.NumPartitions, "replication_factor", rf)
	}
	return kerr.LeaderNotAvailable.Code
}

// topicMetadata describes one cached topic.
func topicMetadata(s *cluster.Snapshot, version int16, name string, t *cluster.Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = isInternal(name)
	indexes := make([]int32, 0, len(t.Partitions))
	for i := range t.Partitions {
		indexes = append(indexes, i)
	}
	slices.Sort(indexes)
	for _, i := range indexes {
		cp := t.Partitions[i]
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = i
		mp.Leader, mp.LeaderEpoch = cp.Leader, cp.LeaderEpoch
		mp.Replicas, mp.ISR = cp.Replicas, cp.ISR
		if version >= 5 {
			mp.OfflineReplicas = cp.Offline
		}
		if cp.Leader < 0 || s.LiveBroker(cp.Leader) == nil {
			mp.Leader = -1
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// clusterCoordinator finds a group's coordinator: the leader of its
// partition of __consumer_offsets.
func (b *Broker) clusterCoordinator(key, listener string) (id int32, host string, port int32, code int16, msg string) {
	gc := b.cfg.Groups.WithDefaults()
	g := b.groups.Existing()
	return b.internalCoordinator(internalTopic{name: offsetsTopic, partitions: g.Partitions(),
		replication: gc.OffsetsReplication, replicationKey: "offsets.topic.replication.factor",
		configs: config.OffsetsTopicConfigs(gc), what: "group"}, key, listener,
		func(ctx context.Context, p int32) { _ = g.WaitLoaded(ctx, p) })
}

// internalTopic is a coordinator's internal topic, as FindCoordinator
// creates it.
type internalTopic struct {
	name           string
	partitions     int32
	replication    int16 // clamped to 1 on the single node
	replicationKey string
	configs        map[string]string
	what           string // "group" or "transactional id", for messages
}

// internalCoordinator finds the coordinator of key, with its address on
// the listener named listener (the client's): the leader of its
// partition (group.PartitionFor) of t, created first if it does not exist.
// Once this broker is the leader, wait (if set) is called, bounded by the
// auto-creation wait, so that the answer follows the partition's load when
// it comes soon.
func (b *Broker) internalCoordinator(t internalTopic, key, listener string, wait func(context.Context, int32)) (id int32, host string, port int32, code int16, msg string) {
	snap := b.ctl.Cache.Load()
	ct := snap.Topics[t.name]
	if ct == nil {
		rf := t.replication
		if b.cluster == nil {
			// The replication factor defaults to 3; a single node can only
			// hold one copy (as Kafka's KRaft single-node setups configure).
			rf = 1
		}
		if int(rf) > len(snap.Brokers) {
			return -1, "", -1, kerr.CoordinatorNotAvailable.Code, t.replicationKey + " is above the live brokers: " + t.name + " cannot be created yet"
		}
		_, err := b.coord.CreateTopic(t.name, controller.TopicRequest{NumPartitions: t.partitions, ReplicationFactor: rf}, t.configs)
		if err != nil && !errors.Is(err, coordinator.ErrTopicExists) {
			b.log.Warn("creating "+t.name, "err", err)
		} else if err == nil {
			b.log.Info("created "+t.name, "partitions", t.partitions, "replication_factor", rf)
		}
		// Answered if the controller creates it soon (on the single node,
		// at once), as the first FindCoordinator of a Kafka broker waits
		// for nothing and is retried.
		if !b.awaitMetadata(autoCreateWaitMs, func(s *cluster.Snapshot) bool { return topicLed(s, t.name) }) {
			return -1, "", -1, kerr.CoordinatorNotAvailable.Code, t.name + " is being created"
		}
		snap = b.ctl.Cache.Load()
		ct = snap.Topics[t.name]
	}
	gp := group.PartitionFor(key, t.partitions)
	p, ok := ct.Partitions[gp]
	if !ok {
		return -1, "", -1, kerr.CoordinatorNotAvailable.Code, "the " + t.what + "'s partition of " + t.name + " is unknown"
	}
	lb := snap.LiveBroker(p.Leader)
	if lb == nil {
		return -1, "", -1, kerr.CoordinatorNotAvailable.Code, "the " + t.what + "'s partition of " + t.name + " has no leader"
	}
	if lb.ID == b.cfg.ID && wait != nil {
		// Answered once this broker's coordinator has the partition
		// loaded, if it comes soon; a load still running is answered by
		// the coordinator's requests.
		ctx, cancel := context.WithTimeout(context.Background(), autoCreateWaitMs*time.Millisecond)
		wait(ctx, gp)
		cancel()
	}
	host, port, found := b.endpoint(lb, listener)
	if !found {
		return -1, "", -1, kerr.CoordinatorNotAvailable.Code, "the " + t.what + "'s coordinator has no listener " + listener
	}
	return lb.ID, host, port, 0, ""
}

// clusterBrokers lists the live brokers for DescribeCluster.
func (b *Broker) clusterBrokers(listener string) (controllerID int32, brokers []coordinator.Broker) {
	snap := b.ctl.Cache.Load()
	for _, cb := range snap.Brokers {
		host, port, ok := b.endpoint(&cb, listener)
		if ok {
			brokers = append(brokers, coordinator.Broker{ID: cb.ID, Host: host, Port: port, Rack: cb.Rack})
		}
	}
	return snap.ControllerID, brokers
}

// clusterTopic is a topic as the cache has it: its id and partition count.
func (b *Broker) clusterTopic(name string) (id engine.TopicID, partitions int32, ok bool) {
	t := b.ctl.Cache.Load().Topics[name]
	if t == nil {
		return id, 0, false
	}
	return engine.TopicID(t.ID), t.Count, true
}

// autoCreateWaitMs bounds how long Metadata and FindCoordinator wait for a
// topic they created to be led, before answering LEADER_NOT_AVAILABLE or
// COORDINATOR_NOT_AVAILABLE (the client retries).
const autoCreateWaitMs = 5000

// topicLed reports whether the snapshot has a topic with every partition
// led.
func topicLed(s *cluster.Snapshot, name string) bool {
	t := s.Topics[name]
	if t == nil || len(t.Partitions) == 0 {
		return false
	}
	for _, p := range t.Partitions {
		if p.Leader < 0 {
			return false
		}
	}
	return true
}
