package broker

// AddPartitionsToTxn (key 24), versions 0-5, as Kafka 3.9 serves them.
//
// Behavior:
//   - v0-3 (clients) add partitions to one transaction; v4+ (KIP-890, from
//     brokers) carry several transactions, each either added or, with
//     VerifyOnly, checked.
//   - A partition the metadata does not have is UNKNOWN_TOPIC_OR_PARTITION
//     and the transaction's other partitions OPERATION_NOT_ATTEMPTED: nothing
//     is added, as KafkaApis answers before the coordinator.
//   - Otherwise the transactional id's coordinator decides
//     (coordinator/txn): one code for every partition of the transaction
//     (INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED — INVALID_PRODUCER_EPOCH
//     before v2 —, CONCURRENT_TRANSACTIONS, NOT_COORDINATOR,
//     COORDINATOR_LOAD_IN_PROGRESS, …), answered once the transaction's new
//     state is written to __transaction_state.
//   - VerifyOnly (Kafka's handleVerifyPartitionsInTransaction): the
//     transaction's written state is checked, nothing is written: another
//     producer id INVALID_PRODUCER_ID_MAPPING, another epoch
//     PRODUCER_FENCED, a transaction being completed CONCURRENT_TRANSACTIONS,
//     else each partition 0 if it is in the ongoing transaction and
//     INVALID_TXN_STATE if not.
//   - An empty transactional id is INVALID_REQUEST.
//   - Authorization, as Kafka: v0-3 (clients) need Write on the
//     transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every
//     partition) and Write on each topic (TOPIC_AUTHORIZATION_FAILED,
//     always for internal topics; the others OPERATION_NOT_ATTEMPTED);
//     v4+ (brokers) needs ClusterAction (CLUSTER_AUTHORIZATION_FAILED).
//
// Version notes: v3+ is flexible; v4+ batches transactions and has a
// top-level error code.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/broker/cluster"
	txnhost "github.com/sluice-io/sluice/coordinator/txn/host"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(24, 0, 5, handleAddPartitionsToTxn) }

func handleAddPartitionsToTxn(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version < 4 {
		t := kmsg.NewAddPartitionsToTxnRequestTransaction()
		t.TransactionalID, t.ProducerID, t.ProducerEpoch = req.TransactionalID, req.ProducerID, req.ProducerEpoch
		for _, rt := range req.Topics {
			tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			tt.Topic, tt.Partitions = rt.Topic, rt.Partitions
			t.Topics = append(t.Topics, tt)
		}
		var results []kmsg.AddPartitionsToTxnResponseTransactionTopic
		if !c.authorized(acl.OpWrite, acl.ResourceTransactionalID, t.TransactionalID) {
			results = txnhost.FailedTopics(&t, kerr.TransactionalIDAuthorizationFailed.Code)
		} else {
			// Clients need Write on each topic; internal topics are never
			// theirs to add (Kafka leaves them out of the authorized set).
			results = c.b.addPartitionsToTxn(req.Version, &t, func(topic string) bool {
				return !cluster.IsInternal(topic) && c.authorized(acl.OpWrite, acl.ResourceTopic, topic)
			})
		}
		for _, rt := range results {
			ot := kmsg.NewAddPartitionsToTxnResponseTopic()
			ot.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				op := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				op.Partition, op.ErrorCode = rp.Partition, rp.ErrorCode
				ot.Partitions = append(ot.Partitions, op)
			}
			resp.Topics = append(resp.Topics, ot)
		}
		return resp, nil
	}
	if !c.authorizedCluster(acl.OpClusterAction) {
		// v4+ comes from brokers only.
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	for i := range req.Transactions {
		t := &req.Transactions[i]
		rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rt.TransactionalID = t.TransactionalID
		rt.Topics = c.b.addPartitionsToTxn(req.Version, t, nil)
		resp.Transactions = append(resp.Transactions, rt)
	}
	return resp, nil
}

// addPartitionsToTxn handles one transaction's partitions
// (coordinator/txn/host/addpartitions.go); writable as there.
func (b *Broker) addPartitionsToTxn(version int16, t *kmsg.AddPartitionsToTxnRequestTransaction, writable func(string) bool) []kmsg.AddPartitionsToTxnResponseTransactionTopic {
	return b.coords.txns.AddPartitions(version, t, writable, b.plane.state.Cache.HasPartition)
}
