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
//     live leader is COORDINATOR_NOT_AVAILABLE too.

import (
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/coordinator/group"
	"github.com/sluice-io/sluice/engine"
)

// endpoint is a live broker's address for clients: the endpoint of this
// broker's own listener name (PLAINTEXT: sluice has one listener), else
// the first.
func (cb *cachedBroker) endpoint() (host string, port int32, ok bool) {
	for _, e := range cb.endpoints {
		if e.listener == "PLAINTEXT" {
			return e.host, e.port, true
		}
	}
	if len(cb.endpoints) > 0 {
		return cb.endpoints[0].host, cb.endpoints[0].port, true
	}
	return "", -1, false
}

// liveBroker returns a live broker of the snapshot, nil if it is not live.
func (s *metadataSnapshot) liveBroker(id int32) *cachedBroker {
	i, ok := slices.BinarySearchFunc(s.brokers, id, func(b cachedBroker, id int32) int { return int(b.id) - int(id) })
	if !ok {
		return nil
	}
	return &s.brokers[i]
}

// clusterMetadata answers Metadata from the cache.
func (b *Broker) clusterMetadata(req *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	snap := b.ctl.cache.load()
	for _, cb := range snap.brokers {
		host, port, ok := cb.endpoint()
		if !ok {
			continue
		}
		br := kmsg.NewMetadataResponseBroker()
		br.NodeID, br.Host, br.Port, br.Rack = cb.id, host, port, cb.rack
		resp.Brokers = append(resp.Brokers, br)
	}
	cid := b.coord.ClusterID()
	resp.ClusterID = &cid
	resp.ControllerID = snap.controllerID

	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		names := make([]string, 0, len(snap.topics))
		for name := range snap.topics {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			resp.Topics = append(resp.Topics, snap.topicMetadata(req.Version, name, snap.topics[name]))
		}
		return resp
	}
	autoCreate := *b.cfg.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	for _, rt := range req.Topics {
		if rt.Topic == nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.TopicID = rt.TopicID
			mt.ErrorCode = kerr.UnknownTopicID.Code
			for name, t := range snap.topics {
				if t.id == rt.TopicID {
					mt = snap.topicMetadata(req.Version, name, t)
					break
				}
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		name := *rt.Topic
		if t := snap.topics[name]; t != nil {
			resp.Topics = append(resp.Topics, snap.topicMetadata(req.Version, name, t))
			continue
		}
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = rt.Topic
		switch {
		case validateTopicName(name) != nil:
			mt.ErrorCode = kerr.InvalidTopicException.Code
		case autoCreate && !isInternal(name):
			mt.ErrorCode = b.autoCreateClusterTopic(name, snap)
		default:
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		}
		resp.Topics = append(resp.Topics, mt)
	}
	return resp
}

// autoCreateClusterTopic writes a topic Metadata asked for and returns the
// code that answers it meanwhile.
func (b *Broker) autoCreateClusterTopic(name string, snap *metadataSnapshot) int16 {
	rf := b.cfg.DefaultReplicationFactor
	if int(rf) > len(snap.brokers) {
		return kerr.InvalidReplicationFactor.Code
	}
	_, err := b.coord.CreateTopic(coordinator.Topic{Name: name, Partitions: b.cfg.NumPartitions, ReplicationFactor: rf})
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
func (s *metadataSnapshot) topicMetadata(version int16, name string, t *cachedTopic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = &name
	mt.TopicID = t.id
	mt.IsInternal = isInternal(name)
	indexes := make([]int32, 0, len(t.partitions))
	for i := range t.partitions {
		indexes = append(indexes, i)
	}
	slices.Sort(indexes)
	for _, i := range indexes {
		cp := t.partitions[i]
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = i
		mp.Leader, mp.LeaderEpoch = cp.leader, cp.leaderEpoch
		mp.Replicas, mp.ISR = cp.replicas, cp.isr
		if version >= 5 {
			mp.OfflineReplicas = cp.offline
		}
		if cp.leader < 0 || s.liveBroker(cp.leader) == nil {
			mp.Leader = -1
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// clusterCoordinator finds a group's coordinator: the leader of its
// partition of __consumer_offsets.
func (b *Broker) clusterCoordinator(key string) (id int32, host string, port int32, code int16, msg string) {
	snap := b.ctl.cache.load()
	gc := b.cfg.Groups.withDefaults()
	t := snap.topics[offsetsTopic]
	if t == nil {
		if int(gc.OffsetsReplication) > len(snap.brokers) {
			return -1, "", -1, kerr.CoordinatorNotAvailable.Code, "offsets.topic.replication.factor is above the live brokers: " + offsetsTopic + " cannot be created yet"
		}
		_, err := b.coord.CreateTopic(coordinator.Topic{Name: offsetsTopic, Partitions: gc.OffsetsPartitions,
			ReplicationFactor: gc.OffsetsReplication, Configs: offsetsTopicConfigs(gc)})
		if err != nil && !errors.Is(err, coordinator.ErrTopicExists) {
			b.log.Warn("creating "+offsetsTopic, "err", err)
		} else if err == nil {
			b.log.Info("created "+offsetsTopic, "partitions", gc.OffsetsPartitions, "replication_factor", gc.OffsetsReplication)
		}
		return -1, "", -1, kerr.CoordinatorNotAvailable.Code, offsetsTopic + " is being created"
	}
	p, ok := t.partitions[group.PartitionFor(key, gc.OffsetsPartitions)]
	if !ok {
		return -1, "", -1, kerr.CoordinatorNotAvailable.Code, "the group's partition of " + offsetsTopic + " is unknown"
	}
	lb := snap.liveBroker(p.leader)
	if lb == nil {
		return -1, "", -1, kerr.CoordinatorNotAvailable.Code, "the group's partition of " + offsetsTopic + " has no leader"
	}
	host, port, _ = lb.endpoint()
	return lb.id, host, port, 0, ""
}

// clusterBrokers lists the live brokers for DescribeCluster.
func (b *Broker) clusterBrokers() (controllerID int32, brokers []coordinator.Broker) {
	snap := b.ctl.cache.load()
	for _, cb := range snap.brokers {
		host, port, ok := cb.endpoint()
		if ok {
			brokers = append(brokers, coordinator.Broker{ID: cb.id, Host: host, Port: port, Rack: cb.rack})
		}
	}
	return snap.controllerID, brokers
}

// clusterTopic is a topic as the cache has it: its id and partition count.
func (b *Broker) clusterTopic(name string) (id engine.TopicID, partitions int32, ok bool) {
	t := b.ctl.cache.load().topics[name]
	if t == nil {
		return id, 0, false
	}
	for i := range t.partitions {
		partitions = max(partitions, i+1)
	}
	return engine.TopicID(t.id), partitions, true
}
