package broker

// DeleteTopics (key 20), versions 0-6.
//
// Behavior:
//   - Each topic is removed from the metadata (durably) and its logs
//     deleted before the answer: a Metadata request that follows no longer
//     lists it, and its name can be created again at once, with a new ID.
//     Fetches waiting on its partitions return.
//   - __consumer_offsets cannot be deleted (INVALID_REQUEST): the group
//     coordinator keeps every group's offsets there. Kafka lets it go and
//     loses them; sluice refuses.
//   - A topic that does not exist gets UNKNOWN_TOPIC_OR_PARTITION, an
//     unknown ID (v6+) UNKNOWN_TOPIC_ID; a topic given by both name and ID
//     INVALID_REQUEST, as are names or IDs given twice in one request (as
//     Kafka's controller answers them).
//
//   - controller_mutation_rate: each topic's partitions, strict from v5
//     (THROTTLING_QUOTA_EXCEEDED; mutationquota.go).
//
// Version notes: v0-5 name topics, v6+ name them or give their IDs; v5+
// carry error messages.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/security/quota"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(20, 0, 6, handleDeleteTopics) }

func handleDeleteTopics(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	topics := req.Topics
	if req.Version < 6 {
		topics = nil
		for _, name := range req.TopicNames {
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.Topic = &name
			topics = append(topics, rt)
		}
	}
	names := map[string]int{}
	ids := map[[16]byte]int{}
	for _, rt := range topics {
		if rt.Topic != nil {
			names[*rt.Topic]++
		} else {
			ids[rt.TopicID]++
		}
	}
	mq := c.mutationQuota(req.Version, 5)
	for _, rt := range topics {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var code int16
		var msg string
		if name, ok := c.b.topicNameOf(rt.Topic, rt.TopicID); ok && !c.authorized(acl.OpDelete, acl.ResourceTopic, name) {
			code, msg = kerr.TopicAuthorizationFailed.Code, "Authorization failed."
		} else {
			code, msg = c.b.deleteClusterOne(&rt, &st, names, ids, req.TimeoutMillis, mq)
		}
		st.ErrorCode = code
		if code != 0 && req.Version >= 5 && msg != "" {
			st.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// deleteClusterOne deletes one topic of the request: looked up in the
// cluster's metadata and deleted by the controller (broker/cluster/directory.go), its
// partitions recorded against mq (mutationquota.go).
func (b *Broker) deleteClusterOne(rt *kmsg.DeleteTopicsRequestTopic, st *kmsg.DeleteTopicsResponseTopic, names map[string]int, ids map[[16]byte]int, timeoutMs int32, mq *quota.Mutations) (int16, string) {
	snap := b.ctl.Cache.Load()
	var name string
	var id engine.TopicID
	if code, msg := checkDeleteNaming(rt, names, ids); code != 0 {
		return code, msg
	}
	switch {
	case rt.Topic != nil:
		t := snap.Topics[*rt.Topic]
		if t == nil {
			return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("topic %s does not exist", *rt.Topic)
		}
		name, id = *rt.Topic, engine.TopicID(t.ID)
	default:
		for n, t := range snap.Topics {
			if t.ID == rt.TopicID {
				name, id = n, engine.TopicID(t.ID)
			}
		}
		if name == "" {
			return kerr.UnknownTopicID.Code, fmt.Sprintf("topic ID %s does not exist", engine.TopicID(rt.TopicID))
		}
	}
	st.Topic, st.TopicID = &name, id
	if name == offsetsTopic {
		return kerr.InvalidRequest.Code, "the internal topic " + offsetsTopic + " holds the groups' offsets and cannot be deleted"
	}
	if name == txnStateTopic {
		return kerr.InvalidRequest.Code, "the internal topic " + txnStateTopic + " holds the transactions' states and cannot be deleted"
	}
	if code, msg := recordMutations(mq, int64(len(snap.Topics[name].Partitions))); code != 0 {
		return code, msg
	}
	return b.dir.DeleteTopic(name, id, timeoutMs)
}

// checkDeleteNaming refuses a topic named both ways, or more than once.
func checkDeleteNaming(rt *kmsg.DeleteTopicsRequestTopic, names map[string]int, ids map[[16]byte]int) (int16, string) {
	switch {
	case rt.Topic != nil && rt.TopicID != [16]byte{}:
		return kerr.InvalidRequest.Code, "give a topic's name or its ID, not both"
	case rt.Topic != nil && names[*rt.Topic] > 1:
		return kerr.InvalidRequest.Code, fmt.Sprintf("topic %s is named more than once in the request", *rt.Topic)
	case rt.Topic == nil && ids[rt.TopicID] > 1:
		return kerr.InvalidRequest.Code, fmt.Sprintf("topic ID %s is given more than once in the request", engine.TopicID(rt.TopicID))
	}
	return 0, ""
}
