package broker

// CreatePartitions (key 37), versions 0-3.
//
// Behavior:
//   - Grows a topic to Count partitions: the metadata is changed durably,
//     then the new logs are created. Existing partitions keep their data
//     (keyed records may now hash to another partition, as in Kafka).
//   - Errors as Kafka: UNKNOWN_TOPIC_OR_PARTITION for a topic that does not
//     exist; INVALID_PARTITIONS for a count not above the current one;
//     INVALID_REPLICA_ASSIGNMENT for an assignment that does not give one
//     replica list per new partition, each this broker alone; INVALID_REQUEST
//     for a topic named twice; POLICY_VIOLATION for more than 10,000 new
//     partitions in one request (as CreateTopics).
//   - __consumer_offsets cannot grow (INVALID_REQUEST): groups are mapped
//     to its partitions by hash, so growing it would lose their offsets.
//   - validate_only checks everything and changes nothing.

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(37, 0, 3, handleCreatePartitions) }

func handleCreatePartitions(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	seen := map[string]int{}
	var added int64
	for _, rt := range req.Topics {
		seen[rt.Topic]++
		if _, n, ok := c.b.topicCount(rt.Topic); ok && rt.Count > n {
			added += int64(rt.Count) - int64(n)
		}
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		var code int16
		var msg string
		if added > maxPartitionsPerRequest {
			code, msg = kerr.PolicyViolation.Code, "Excessively large number of partitions per request."
		} else {
			code, msg = c.b.growOne(&rt, seen[rt.Topic] > 1, req.ValidateOnly, req.TimeoutMillis)
		}
		st.ErrorCode = code
		if code != 0 && msg != "" {
			st.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (b *Broker) growOne(rt *kmsg.CreatePartitionsRequestTopic, dup, validateOnly bool, timeoutMs int32) (int16, string) {
	if dup {
		return kerr.InvalidRequest.Code, "Duplicate topic in request."
	}
	_, current, ok := b.topicCount(rt.Topic)
	if !ok {
		return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("The topic '%s' does not exist.", rt.Topic)
	}
	if rt.Topic == offsetsTopic {
		return kerr.InvalidRequest.Code, "the partitions of " + offsetsTopic + " cannot change: every group is mapped to one of them by hash"
	}
	switch {
	case rt.Count == current:
		return kerr.InvalidPartitions.Code, fmt.Sprintf("Topic already has %d partitions.", current)
	case rt.Count < current:
		return kerr.InvalidPartitions.Code, fmt.Sprintf("Topic currently has %d partitions, which is higher than the requested %d.", current, rt.Count)
	}
	if b.cluster != nil {
		// The assignment is checked by the placement (PlaceNewPartitions).
		var assignments [][]int32
		for _, a := range rt.Assignment {
			assignments = append(assignments, a.Replicas)
		}
		if validateOnly {
			return 0, ""
		}
		return b.growClusterTopic(rt.Topic, rt.Count, assignments, timeoutMs)
	}
	if rt.Assignment != nil {
		if len(rt.Assignment) != int(rt.Count-current) {
			return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("Increasing the number of partitions by %d but %d assignments provided.", rt.Count-current, len(rt.Assignment))
		}
		self := b.self().ID
		for i, a := range rt.Assignment {
			if len(a.Replicas) != 1 || a.Replicas[0] != self {
				return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("new partition %d: replicas %v: each new partition must be on broker %d alone", current+int32(i), a.Replicas, self)
			}
		}
	}
	if validateOnly {
		return 0, ""
	}
	err := b.addPartitions(rt.Topic, rt.Count)
	switch {
	case errors.Is(err, coordinator.ErrUnknownTopic):
		return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("The topic '%s' does not exist.", rt.Topic)
	case errors.Is(err, coordinator.ErrInvalidPartitions):
		return kerr.InvalidPartitions.Code, err.Error()
	case err != nil:
		b.log.Error("adding partitions", "topic", rt.Topic, "err", err)
		return kerr.UnknownServerError.Code, err.Error()
	}
	return 0, ""
}

// topicCount is a topic's id and partition count: the cluster's in
// ZooKeeper mode, the local topic's on the single node.
func (b *Broker) topicCount(name string) (engine.TopicID, int32, bool) {
	if b.cluster != nil {
		return b.clusterTopic(name)
	}
	ts := b.topic(name)
	if ts == nil {
		return engine.TopicID{}, 0, false
	}
	return ts.meta.ID, int32(len(ts.partitions)), true
}
