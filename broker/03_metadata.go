package broker

// Metadata (key 3), versions 0-12.
//
// Behavior:
//   - Lists this broker (the single node is also the controller) and the
//     requested topics: all of them for a null list (an empty list in v0),
//     none for an empty list (v1+).
//   - A requested topic that does not exist is created with num.partitions
//     when auto.create.topics.enable is on and the request allows it (v4+
//     field; always for v0-v3), as Kafka does; otherwise
//     UNKNOWN_TOPIC_OR_PARTITION. An invalid name gets INVALID_TOPIC_EXCEPTION.
//   - v10+: topics are also requested by ID; an unknown ID gets
//     UNKNOWN_TOPIC_ID.
//   - Every partition is led by this broker at leader epoch 0, with itself
//     as the only replica and ISR member.
//   - v8+: each topic's authorized operations when asked
//     (IncludeTopicAuthorizedOperations), and in v8-10 the cluster's
//     (IncludeClusterAuthorizedOperations); authorizedops.go.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(3, 0, 12, handleMetadata) }

func handleMetadata(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.MetadataRequest)
	var resp *kmsg.MetadataResponse
	if c.b.cluster != nil {
		resp = c.b.clusterMetadata(req) // clustermetadata.go
	} else {
		resp = metadata(c, req)
	}
	if req.Version >= 8 && req.IncludeTopicAuthorizedOperations {
		for i := range resp.Topics {
			resp.Topics[i].AuthorizedOperations = topicOperations
		}
	}
	if req.Version >= 8 && req.Version <= 10 && req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = clusterOperations
	}
	return resp, nil
}

// metadata answers a Metadata request without authorized operations.
func metadata(c *conn, req *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	b := c.b
	self := b.self()
	br := kmsg.NewMetadataResponseBroker()
	br.NodeID, br.Host, br.Port, br.Rack = self.ID, self.Host, self.Port, self.Rack
	resp.Brokers = []kmsg.MetadataResponseBroker{br}
	cid := b.coord.ClusterID()
	resp.ClusterID = &cid
	resp.ControllerID = b.coord.ControllerID()

	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		for _, t := range b.coord.Topics() {
			if ts := b.topic(t.Name); ts != nil {
				resp.Topics = append(resp.Topics, topicMetadata(ts, self.ID))
			}
		}
		return resp
	}
	autoCreate := *b.cfg.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	for _, rt := range req.Topics {
		if rt.Topic == nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.TopicID = rt.TopicID
			ts := b.topicByID(engine.TopicID(rt.TopicID))
			if ts == nil {
				mt.ErrorCode = kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			resp.Topics = append(resp.Topics, topicMetadata(ts, self.ID))
			continue
		}
		name := *rt.Topic
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = rt.Topic
		if err := validateTopicName(name); err != nil {
			mt.ErrorCode = kerr.InvalidTopicException.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		ts := b.topic(name)
		if ts == nil && autoCreate && !isInternal(name) {
			var err error
			ts, err = b.createTopic(name, b.cfg.NumPartitions, b.cfg.DefaultReplicationFactor, nil)
			if errors.Is(err, coordinator.ErrTopicExists) {
				ts = b.topic(name)
			} else if err != nil {
				b.log.Warn("auto-creating topic", "topic", name, "err", err)
				mt.ErrorCode = kerr.LeaderNotAvailable.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
		}
		if ts == nil {
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, topicMetadata(ts, self.ID))
	}
	return resp
}

func topicMetadata(ts *topicState, self int32) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := ts.meta.Name
	mt.Topic = &name
	mt.TopicID = ts.meta.ID
	mt.IsInternal = isInternal(name)
	for _, p := range ts.partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.index
		mp.Leader = self
		mp.LeaderEpoch = 0
		mp.Replicas = []int32{self}
		mp.ISR = []int32{self}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
