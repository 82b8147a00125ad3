package broker

// DescribeTransactions (key 65), version 0, as Kafka 3.9 serves it: each
// transactional id's state as its coordinator last wrote it: the state's
// name (Kafka's: Empty, Ongoing, PrepareCommit, …), timeout, start time
// (-1 with none begun), producer id and epoch, and the partitions of the
// transaction by topic. An id whose coordinator is not this broker is
// NOT_COORDINATOR, one still loading COORDINATOR_LOAD_IN_PROGRESS, an
// unknown one TRANSACTIONAL_ID_NOT_FOUND.
//
// Authorization: Describe on each transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); only the topics the principal
// may Describe are listed.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator/txn"
	txnhost "github.com/sluice-io/sluice/coordinator/txn/host"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(65, 0, 0, handleDescribeTransactions) }

func handleDescribeTransactions(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	ctx, cancel := c.b.closingContext(txnhost.CallTimeout)
	defer cancel()
	for _, id := range req.TransactionalIDs {
		ts := kmsg.NewDescribeTransactionsResponseTransactionState()
		ts.TransactionalID, ts.ProducerID, ts.ProducerEpoch, ts.StartTimestamp = id, -1, -1, -1
		if !c.authorized(acl.OpDescribe, acl.ResourceTransactionalID, id) {
			ts.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			resp.TransactionStates = append(resp.TransactionStates, ts)
			continue
		}
		d, code := c.b.txns.DriverFor(id)
		var m txn.Metadata
		found := false
		switch {
		case d == nil:
			ts.ErrorCode = code
		case !d.Inspect(ctx, func(c *txn.Coordinator) { m, found = c.Get(id) }):
			ts.ErrorCode = kerr.NotCoordinator.Code
		case !found:
			ts.ErrorCode = kerr.TransactionalIDNotFound.Code
		default:
			ts.State, ts.TimeoutMillis, ts.StartTimestamp = m.State.String(), m.TimeoutMs, m.StartMs
			ts.ProducerID, ts.ProducerEpoch = m.ProducerID, m.Epoch
			for _, p := range m.Partitions {
				// Only the topics the principal may describe.
				if !c.authorized(acl.OpDescribe, acl.ResourceTopic, p.Topic) {
					continue
				}
				if n := len(ts.Topics); n == 0 || ts.Topics[n-1].Topic != p.Topic {
					tt := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
					tt.Topic = p.Topic
					ts.Topics = append(ts.Topics, tt)
				}
				tt := &ts.Topics[len(ts.Topics)-1]
				tt.Partitions = append(tt.Partitions, p.Partition)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, ts)
	}
	return resp, nil
}
