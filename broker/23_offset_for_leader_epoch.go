package broker

// OffsetForLeaderEpoch (key 23), versions 0-4.
//
// Behavior:
//   - Answers the end offset of the requested leader epoch from the
//     partition's leader-epoch cache, as Kafka's
//     LeaderEpochFileCache.endOffsetFor: the log end offset for the current
//     epoch, the start of the next epoch for an older one, -1/-1 for an
//     epoch above every known one or for -1. Consumers use it to detect
//     truncation after a leader change (KIP-320).
//   - Every partition is led at epoch 0 by this broker, which counts as
//     assigned from the start (Kafka assigns the epoch in the cache when a
//     replica becomes leader): epoch 0 answers the log end offset even
//     before anything was written.
//   - v2+: a current leader epoch other than -1 is checked as Kafka does:
//     below 0 FENCED_LEADER_EPOCH, above it UNKNOWN_LEADER_EPOCH. Unknown
//     topics and partitions get UNKNOWN_TOPIC_OR_PARTITION.
//
// Needs ClusterAction on the cluster (a follower) or Describe on the topic
// (TOPIC_AUTHORIZATION_FAILED), as Kafka since KIP-320.
//
// Version notes: v0 has no epoch in the answer; v3+ carries the replica
// ID (-1 for consumers; followers come with replication).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(23, 0, 4, handleOffsetForLeaderEpoch) }

func handleOffsetForLeaderEpoch(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	replica := c.authorizedCluster(acl.OpClusterAction)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		allowed := replica || c.authorized(acl.OpDescribe, acl.ResourceTopic, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			if !allowed {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			p, code := c.b.leaderPartition(rt.Topic, rp.Partition)
			if sp.ErrorCode = code; p != nil { // replication/host/offsets.go
				sp.LeaderEpoch, sp.EndOffset, sp.ErrorCode = p.OffsetForLeaderEpoch(req.Version, rp.CurrentLeaderEpoch, rp.LeaderEpoch)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
