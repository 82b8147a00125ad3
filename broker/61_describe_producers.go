package broker

// DescribeProducers (key 61), version 0: the producers a partition's log
// knows, as Kafka 3.9's Partition.activeProducerState answers it: per
// producer its id, epoch, last sequence (-1 without a batch in its epoch),
// the timestamp of its last write, the coordinator epoch of its last
// transaction marker (-1 before any) and the first offset of its open
// transaction (-1 with none).
//
// Behavior: any replica hosting the partition answers from its log, the
// leader or a follower, as Kafka (the admin client asks the leader unless
// told a broker); a partition not hosted here is NOT_LEADER_OR_FOLLOWER if
// the metadata knows it, else UNKNOWN_TOPIC_OR_PARTITION (Kafka's
// getPartitionOrError).
//
// Authorization: Read on each topic (TOPIC_AUTHORIZATION_FAILED on its
// partitions).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(61, 0, 0, handleDescribeProducers) }

func handleDescribeProducers(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	var infos []engine.ProducerInfo
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		allowed := c.authorized(acl.OpRead, acl.ResourceTopic, rt.Topic)
		for _, index := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = index
			p := c.b.partition(rt.Topic, index)
			switch {
			case !allowed:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case p == nil && c.b.plane.state.Cache.HasPartition(rt.Topic, index):
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				infos = p.Log.Producers(infos[:0])
				for _, pi := range infos {
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch, ap.LastSequence = pi.ProducerID, int32(pi.Epoch), pi.LastSequence
					ap.LastTimestamp, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = pi.LastTimestamp, pi.CoordinatorEpoch, pi.TxnStartOffset
					sp.ActiveProducers = append(sp.ActiveProducers, ap)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
