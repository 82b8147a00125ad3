package cluster

// The directory: what a client asks of the cluster's shape, answered from
// the metadata cache (the controller's UpdateMetadata) as Kafka's
// ZkMetadataCache and ZkAdminManager answer it: Metadata, the live
// brokers of DescribeCluster, a coordinator's broker for FindCoordinator,
// and the topic administration that writes the metadata backend and waits
// for the controller to carry the change out.
//
// Metadata rules, as Kafka's KafkaApis.handleTopicMetadataRequest and
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
//   - A coordinator is the leader of its key's partition (group.PartitionFor)
//     of its internal topic (__consumer_offsets over
//     offsets.topic.num.partitions, which every broker of a cluster must
//     share, as in Kafka; __transaction_state likewise). Before that topic
//     exists it is created with its replication factor, refused
//     COORDINATOR_NOT_AVAILABLE while fewer brokers are live (Kafka's
//     rule); a partition without a live leader is COORDINATOR_NOT_AVAILABLE
//     too.
//
// Topic administration, as Kafka's ZkAdminManager: CreateTopic, DeleteTopic
// and GrowTopic write the backend (coordinator/zk's admin.go: the
// assignment, a deletion marker; the single node's store) and the
// controller does the rest. They are answered once the cache shows the
// change done (the controller's UpdateMetadata reached this broker), or at
// the request's timeout with REQUEST_TIMED_OUT, as Kafka's delayed
// operations answer; a timeout of 0 or less answers at once, the change
// under way.

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/coordinator/group"
	"github.com/sluice-io/sluice/coordinator/zk"
	"github.com/sluice-io/sluice/engine"
)

// Topics is the metadata backend's topic administration the directory
// writes through (coordinator.Coordinator has it).
type Topics interface {
	ClusterID() string
	CreateTopic(name string, req controller.TopicRequest, configs map[string]string) (coordinator.Assignment, error)
	AddPartitions(name string, count int32, assignments [][]int32) (coordinator.Assignment, error)
	DeleteTopic(name string) error
	AwaitDeleted(ctx context.Context, name string) error
}

// DirectoryOptions are a Directory's collaborators and settings.
type DirectoryOptions struct {
	Self   int32 // this broker's id
	Cache  *Cache
	Topics Topics
	// SingleNode clamps the replication factor of the topics the directory
	// creates by itself to 1: a single node holds one copy.
	SingleNode bool
	// SelfEndpoint is this broker's own address on a listener (its
	// advertised one: the single node's controller may have named the
	// broker before the listener's port was known).
	SelfEndpoint func(listener string) (host string, port int32, ok bool)
	// AutoCreate, NumPartitions and ReplicationFactor are
	// auto.create.topics.enable, num.partitions and
	// default.replication.factor.
	AutoCreate        bool
	NumPartitions     int32
	ReplicationFactor int16
	// Layers are the broker's configuration layers now (the defaults
	// and validation of a created topic's configs).
	Layers func() config.Layers
	// Controller is the controller driver running on this broker, nil
	// when none does (controlleradmin.go).
	Controller func() Controller
	// Closing ends the waits for the controller when the broker closes.
	Closing <-chan struct{}
	Log     *slog.Logger
}

// Directory answers the cluster's shape from the cache and administers
// its topics. It holds no lock of its own; its methods are safe for
// concurrent use.
type Directory struct {
	o DirectoryOptions
}

// NewDirectory returns a directory over o.Cache.
func NewDirectory(o DirectoryOptions) *Directory {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Directory{o: o}
}

// AutoCreateWait bounds how long Metadata and Coordinator wait for a topic
// they created to be led, before answering LEADER_NOT_AVAILABLE or
// COORDINATOR_NOT_AVAILABLE (the client retries).
const AutoCreateWait = 5 * time.Second

// Client is what the directory needs to know of the client asking: the
// listener it came on (it is told the addresses of that listener) and
// what it may see and create.
type Client struct {
	Listener string
	// Describe reports whether the client may describe a topic.
	Describe func(topic string) bool
	// Create reports whether the client may create a topic (on the
	// cluster or the topic).
	Create func(topic string) bool
}

// endpoint is a live broker's address on a listener; ok is false when the
// broker has none: Kafka leaves such a broker out.
func (d *Directory) endpoint(n *Node, listener string) (host string, port int32, ok bool) {
	if n.ID == d.o.Self {
		return d.o.SelfEndpoint(listener)
	}
	for _, e := range n.Endpoints {
		if e.Listener == listener {
			return e.Host, e.Port, true
		}
	}
	return "", -1, false
}

// Metadata answers a Metadata request from the cache.
func (d *Directory) Metadata(req *kmsg.MetadataRequest, c Client) *kmsg.MetadataResponse {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	snap := d.o.Cache.Load()
	for _, n := range snap.Brokers {
		host, port, ok := d.endpoint(&n, c.Listener)
		if !ok {
			continue
		}
		br := kmsg.NewMetadataResponseBroker()
		br.NodeID, br.Host, br.Port, br.Rack = n.ID, host, port, n.Rack
		resp.Brokers = append(resp.Brokers, br)
	}
	cid := d.o.Topics.ClusterID()
	resp.ClusterID = &cid
	resp.ControllerID = snap.ControllerID

	if req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0) {
		names := make([]string, 0, len(snap.Topics))
		for name := range snap.Topics {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			if c.Describe(name) {
				resp.Topics = append(resp.Topics, topicMetadata(snap, req.Version, name, snap.Topics[name]))
			}
		}
		return resp
	}
	autoCreate := d.o.AutoCreate && (req.Version < 4 || req.AllowAutoTopicCreation)
	for _, rt := range req.Topics {
		if rt.Topic == nil {
			resp.Topics = append(resp.Topics, d.topicByID(snap, req.Version, rt.TopicID, c))
			continue
		}
		name := *rt.Topic
		if !c.Describe(name) {
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
		case ValidateTopicName(name) != nil:
			mt.ErrorCode = kerr.InvalidTopicException.Code
		case autoCreate && !IsInternal(name) && !c.Create(name):
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		case autoCreate && !IsInternal(name):
			if mt.ErrorCode = d.autoCreate(name, snap); mt.ErrorCode == kerr.LeaderNotAvailable.Code {
				// Answered with the topic if the controller creates it
				// soon (on the single node, at once).
				if d.await(AutoCreateWait, func(s *Snapshot) bool { return topicLed(s, name) }) {
					now := d.o.Cache.Load()
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

// topicByID answers a topic Metadata names by its id (v10+).
func (d *Directory) topicByID(snap *Snapshot, version int16, id [16]byte, c Client) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.TopicID = id
	mt.ErrorCode = kerr.UnknownTopicID.Code
	for name, t := range snap.Topics {
		if t.ID != id {
			continue
		}
		if c.Describe(name) {
			return topicMetadata(snap, version, name, t)
		}
		mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		break
	}
	return mt
}

// autoCreate writes a topic Metadata asked for and returns the code that
// answers it meanwhile.
func (d *Directory) autoCreate(name string, snap *Snapshot) int16 {
	rf := d.o.ReplicationFactor
	if d.o.SingleNode {
		rf = 1 // the single node holds one copy, whatever the default
	}
	if int(rf) > len(snap.Brokers) {
		return kerr.InvalidReplicationFactor.Code
	}
	_, err := d.o.Topics.CreateTopic(name, controller.TopicRequest{NumPartitions: d.o.NumPartitions, ReplicationFactor: rf}, nil)
	if err != nil && !errors.Is(err, coordinator.ErrTopicExists) {
		d.o.Log.Warn("auto-creating topic", "topic", name, "err", err)
		if code := controller.Code(err); code != kerr.UnknownServerError.Code {
			return code
		}
	} else if err == nil {
		d.o.Log.Info("auto-created topic", "topic", name, "partitions", d.o.NumPartitions, "replication_factor", rf)
	}
	return kerr.LeaderNotAvailable.Code
}

// topicMetadata describes one cached topic.
func topicMetadata(s *Snapshot, version int16, name string, t *Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = IsInternal(name)
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

// InternalTopic is a coordinator's internal topic, as Coordinator creates
// it.
type InternalTopic struct {
	Name           string
	Partitions     int32
	Replication    int16 // clamped to 1 on the single node
	ReplicationKey string
	Configs        map[string]string
	What           string // "group" or "transactional id", for messages
}

// Coordinator finds the coordinator of key, with its address on the
// client's listener: the leader of its partition (group.PartitionFor) of
// t, created first if it does not exist. Once this broker is the leader,
// wait (if set) is called, bounded by AutoCreateWait, so that the answer
// follows the partition's load when it comes soon. A code other than 0
// refuses, with its message.
func (d *Directory) Coordinator(t InternalTopic, key, listener string, wait func(context.Context, int32)) (id int32, host string, port int32, code int16, msg string) {
	snap := d.o.Cache.Load()
	ct := snap.Topics[t.Name]
	if ct == nil {
		rf := t.Replication
		if d.o.SingleNode {
			// The replication factor defaults to 3; a single node can only
			// hold one copy (as Kafka's KRaft single-node setups configure).
			rf = 1
		}
		if int(rf) > len(snap.Brokers) {
			return -1, "", -1, kerr.CoordinatorNotAvailable.Code, t.ReplicationKey + " is above the live brokers: " + t.Name + " cannot be created yet"
		}
		_, err := d.o.Topics.CreateTopic(t.Name, controller.TopicRequest{NumPartitions: t.Partitions, ReplicationFactor: rf}, t.Configs)
		if err != nil && !errors.Is(err, coordinator.ErrTopicExists) {
			d.o.Log.Warn("creating "+t.Name, "err", err)
		} else if err == nil {
			d.o.Log.Info("created "+t.Name, "partitions", t.Partitions, "replication_factor", rf)
		}
		// Answered if the controller creates it soon (on the single node,
		// at once), as the first FindCoordinator of a Kafka broker waits
		// for nothing and is retried.
		if !d.await(AutoCreateWait, func(s *Snapshot) bool { return topicLed(s, t.Name) }) {
			return -1, "", -1, kerr.CoordinatorNotAvailable.Code, t.Name + " is being created"
		}
		snap = d.o.Cache.Load()
		ct = snap.Topics[t.Name]
	}
	gp := group.PartitionFor(key, t.Partitions)
	p, ok := ct.Partitions[gp]
	if !ok {
		return -1, "", -1, kerr.CoordinatorNotAvailable.Code, "the " + t.What + "'s partition of " + t.Name + " is unknown"
	}
	lb := snap.LiveBroker(p.Leader)
	if lb == nil {
		return -1, "", -1, kerr.CoordinatorNotAvailable.Code, "the " + t.What + "'s partition of " + t.Name + " has no leader"
	}
	if lb.ID == d.o.Self && wait != nil {
		// Answered once this broker's coordinator has the partition
		// loaded, if it comes soon; a load still running is answered by
		// the coordinator's requests.
		ctx, cancel := context.WithTimeout(context.Background(), AutoCreateWait)
		wait(ctx, gp)
		cancel()
	}
	host, port, found := d.endpoint(lb, listener)
	if !found {
		return -1, "", -1, kerr.CoordinatorNotAvailable.Code, "the " + t.What + "'s coordinator has no listener " + listener
	}
	return lb.ID, host, port, 0, ""
}

// Brokers lists the live brokers with their addresses on a listener, and
// the controller, for DescribeCluster.
func (d *Directory) Brokers(listener string) (controllerID int32, brokers []coordinator.Broker) {
	snap := d.o.Cache.Load()
	for _, n := range snap.Brokers {
		host, port, ok := d.endpoint(&n, listener)
		if ok {
			brokers = append(brokers, coordinator.Broker{ID: n.ID, Host: host, Port: port, Rack: n.Rack})
		}
	}
	return snap.ControllerID, brokers
}

// LiveBrokers is the number of live brokers the cache lists.
func (d *Directory) LiveBrokers() int { return len(d.o.Cache.Load().Brokers) }

// Topic is a topic as the cache has it: its id and partition count.
func (d *Directory) Topic(name string) (id engine.TopicID, partitions int32, ok bool) {
	t := d.o.Cache.Load().Topics[name]
	if t == nil {
		return id, 0, false
	}
	return engine.TopicID(t.ID), t.Count, true
}

// CreateTopic writes a new topic; it returns its id, or the code and
// message refusing it. It does not wait: AwaitCreated does.
func (d *Directory) CreateTopic(name string, req controller.TopicRequest, configs map[string]string) (engine.TopicID, int16, string) {
	a, err := d.o.Topics.CreateTopic(name, req, configs)
	switch {
	case errors.Is(err, coordinator.ErrTopicExists):
		return engine.TopicID{}, kerr.TopicAlreadyExists.Code, zk.Message(err)
	case errors.Is(err, zk.ErrTopicCollision):
		return engine.TopicID{}, kerr.InvalidTopicException.Code, zk.Message(err)
	case err != nil && controller.Code(err) != kerr.UnknownServerError.Code:
		return engine.TopicID{}, controller.Code(err), controller.Message(err)
	case err != nil:
		d.o.Log.Error("creating topic", "topic", name, "err", err)
		return engine.TopicID{}, kerr.UnknownServerError.Code, err.Error()
	}
	d.o.Log.Info("created topic", "topic", name, "partitions", len(a.Replicas), "id", a.ID.String())
	return a.ID, 0, ""
}

// AwaitCreated waits, until timeoutMs has passed, for the cache to have
// the topic at its id with all its partitions; false when it did not.
func (d *Directory) AwaitCreated(timeoutMs int32, name string, id engine.TopicID, partitions int) bool {
	return d.awaitMs(timeoutMs, func(s *Snapshot) bool {
		t := s.Topics[name]
		return t != nil && t.ID == id && len(t.Partitions) >= partitions
	})
}

// DeleteTopic marks a topic for deletion and waits for it to go; a code
// other than 0 refuses, with its message.
func (d *Directory) DeleteTopic(name string, id engine.TopicID, timeoutMs int32) (int16, string) {
	err := d.o.Topics.DeleteTopic(name)
	switch {
	case errors.Is(err, coordinator.ErrUnknownTopic):
		return kerr.UnknownTopicOrPartition.Code, zk.Message(err)
	case err != nil:
		d.o.Log.Error("deleting topic", "topic", name, "err", err)
		return kerr.UnknownServerError.Code, err.Error()
	}
	d.o.Log.Info("marked topic for deletion", "topic", name, "id", id.String())
	gone := func(s *Snapshot) bool {
		t := s.Topics[name]
		return t == nil || t.ID != id
	}
	if !d.awaitMs(timeoutMs, gone) {
		return kerr.RequestTimedOut.Code, "the controller has not deleted the topic yet"
	}
	if timeoutMs > 0 {
		// On the single node, until the name can be taken again.
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(timeoutMs)*time.Millisecond)
		defer cancel()
		if err := d.o.Topics.AwaitDeleted(ctx, name); err != nil {
			return kerr.RequestTimedOut.Code, "the controller has not deleted the topic yet"
		}
	}
	return 0, ""
}

// GrowTopic adds partitions (placed, or as assignments gives them) and
// waits for the controller to create them.
func (d *Directory) GrowTopic(name string, count int32, assignments [][]int32, timeoutMs int32) (int16, string) {
	a, err := d.o.Topics.AddPartitions(name, count, assignments)
	switch {
	case errors.Is(err, coordinator.ErrUnknownTopic):
		return kerr.UnknownTopicOrPartition.Code, zk.Message(err)
	case errors.Is(err, coordinator.ErrTopicDeleting):
		return kerr.InvalidTopicException.Code, zk.Message(err)
	case err != nil && controller.Code(err) != kerr.UnknownServerError.Code:
		return controller.Code(err), controller.Message(err)
	case err != nil:
		d.o.Log.Error("adding partitions", "topic", name, "err", err)
		return kerr.UnknownServerError.Code, err.Error()
	}
	d.o.Log.Info("added partitions", "topic", name, "partitions", count)
	if !d.AwaitCreated(timeoutMs, name, a.ID, len(a.Replicas)) {
		return kerr.RequestTimedOut.Code, "the controller has not created the partitions yet"
	}
	return 0, ""
}

// awaitMs waits, until timeoutMs has passed, for cond to hold of the
// cache; a timeout of 0 or less does not wait and holds.
func (d *Directory) awaitMs(timeoutMs int32, cond func(*Snapshot) bool) bool {
	if timeoutMs <= 0 {
		return true
	}
	return d.await(time.Duration(timeoutMs)*time.Millisecond, cond)
}

// await waits, until timeout has passed or the broker closes, for cond to
// hold of the cache.
func (d *Directory) await(timeout time.Duration, cond func(*Snapshot) bool) bool {
	ctx, cancel := d.closingContext(timeout)
	defer cancel()
	return d.o.Cache.Wait(ctx, cond)
}

// topicLed reports whether the snapshot has a topic with every partition
// led.
func topicLed(s *Snapshot, name string) bool {
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
