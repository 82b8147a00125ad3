package broker

// TxnOffsetCommit (key 28), versions 0-3, answered by coordinator/group
// (txnoffsets.go): the offsets are appended to the group's
// __consumer_offsets partition as one transactional batch of the request's
// producer id and epoch, and become the group's committed offsets only
// when that producer's COMMIT marker lands on the partition
// (27_write_txn_markers.go); an ABORT drops them. Unknown topics and
// partitions get UNKNOWN_TOPIC_OR_PARTITION, as OffsetCommit. With
// transaction.partition.verification.enable (KIP-890) the group's
// partition must be in the transaction first (the producer's
// AddOffsetsToTxn added it): the group coordinator verifies it with the
// transaction coordinator (txnverify.go's verifyOffsets), else every
// partition is INVALID_TXN_STATE and nothing is written.
//
// Needs Write on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED
// for every partition), Read on the group (GROUP_AUTHORIZATION_FAILED) and
// Read on each topic (TOPIC_AUTHORIZATION_FAILED for that topic alone).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(28, 0, 3, handleTxnOffsetCommit) }

func handleTxnOffsetCommit(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.TxnOffsetCommitRequest)
	failAll := func(code int16, topics []kmsg.TxnOffsetCommitRequestTopic, resp *kmsg.TxnOffsetCommitResponse) {
		for _, rt := range topics {
			st := kmsg.NewTxnOffsetCommitResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
	}
	refuse := func(code int16) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		failAll(code, req.Topics, resp)
		return resp, nil
	}
	if !c.authorized(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID) {
		return refuse(kerr.TransactionalIDAuthorizationFailed.Code)
	}
	if !c.authorized(acl.OpRead, acl.ResourceGroup, req.Group) {
		return refuse(kerr.GroupAuthorizationFailed.Code)
	}
	// Topics the principal may not Read fail alone; the rest are committed.
	var denied []kmsg.TxnOffsetCommitRequestTopic
	req.Topics, denied = readableTopics(c, req.Topics, func(t *kmsg.TxnOffsetCommitRequestTopic) string { return t.Topic })
	g, err := c.b.groupCoordinator()
	if err != nil {
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		failAll(kerr.CoordinatorNotAvailable.Code, req.Topics, resp)
		failAll(kerr.TopicAuthorizationFailed.Code, denied, resp)
		return resp, nil
	}
	resp := g.TxnOffsetCommit(req)
	failAll(kerr.TopicAuthorizationFailed.Code, denied, resp)
	return resp, nil
}
