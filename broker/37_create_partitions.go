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
//   - controller_mutation_rate: the partitions each topic gains, strict
//     from v3 (THROTTLING_QUOTA_EXCEEDED; mutationquota.go).
//
// Authorization: Alter on each topic (TOPIC_AUTHORIZATION_FAILED).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/security/quota"
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
	mq := c.mutationQuota(req.Version, 3)
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		var code int16
		var msg string
		if added > maxPartitionsPerRequest {
			code, msg = kerr.PolicyViolation.Code, "Excessively large number of partitions per request."
		} else if seen[rt.Topic] == 1 && !c.authorized(acl.OpAlter, acl.ResourceTopic, rt.Topic) {
			code, msg = kerr.TopicAuthorizationFailed.Code, "The topic authorization is failed."
		} else {
			code, msg = c.b.growOne(&rt, seen[rt.Topic] > 1, req.ValidateOnly, req.TimeoutMillis, mq)
		}
		st.ErrorCode = code
		if code != 0 && msg != "" {
			st.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// growOne grows one topic, the partitions it gains recorded against mq
// (mutationquota.go).
func (b *Broker) growOne(rt *kmsg.CreatePartitionsRequestTopic, dup, validateOnly bool, timeoutMs int32, mq *quota.Mutations) (int16, string) {
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
	if rt.Topic == txnStateTopic {
		return kerr.InvalidRequest.Code, "the partitions of " + txnStateTopic + " cannot change: every transactional id is mapped to one of them by hash"
	}
	switch {
	case rt.Count == current:
		return kerr.InvalidPartitions.Code, fmt.Sprintf("Topic already has %d partitions.", current)
	case rt.Count < current:
		return kerr.InvalidPartitions.Code, fmt.Sprintf("Topic currently has %d partitions, which is higher than the requested %d.", current, rt.Count)
	}
	// The assignment is checked by the placement (PlaceNewPartitions).
	var assignments [][]int32
	for _, a := range rt.Assignment {
		assignments = append(assignments, a.Replicas)
	}
	if validateOnly {
		return 0, ""
	}
	if code, msg := recordMutations(mq, int64(rt.Count)-int64(current)); code != 0 {
		return code, msg
	}
	return b.dir.GrowTopic(rt.Topic, rt.Count, assignments, timeoutMs)
}

// topicCount is a topic's id and partition count, as the controller's
// metadata has them.
func (b *Broker) topicCount(name string) (engine.TopicID, int32, bool) {
	return b.dir.Topic(name)
}
