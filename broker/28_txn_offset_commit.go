package broker

// TxnOffsetCommit (key 28), versions 0-3, answered by coordinator/group
// (txnoffsets.go): the offsets are appended to the group's
// __consumer_offsets partition as one transactional batch of the request's
// producer id and epoch, and become the group's committed offsets only
// when that producer's COMMIT marker lands on the partition
// (27_write_txn_markers.go); an ABORT drops them. Unknown topics and
// partitions get UNKNOWN_TOPIC_OR_PARTITION, as OffsetCommit. Not done:
// KIP-890's verification that the coordinator added the offsets partition
// to the transaction.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/wire"
)

func init() { register(28, 0, 3, handleTxnOffsetCommit) }

func handleTxnOffsetCommit(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.TxnOffsetCommitRequest)
	g, err := c.b.groupCoordinator()
	if err != nil {
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewTxnOffsetCommitResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.CoordinatorNotAvailable.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
	return g.TxnOffsetCommit(req), nil
}
