package broker

// ListTransactions (key 66), versions 0-1, as Kafka 3.9 serves them: the
// transactional ids of every partition of __transaction_state this broker
// coordinates, with their producer id and state, filtered as Kafka's
// TransactionStateManager.listTransactionStates filters:
//   - StateFilters by state name; a name that is no state goes to
//     UnknownStateFilters (and, as in Kafka, matches nothing);
//   - ProducerIDFilters by producer id;
//   - DurationFilterMillis (v1, -1 for none): only transactions running
//     longer than it (now minus the start time, which is -1 with none
//     begun, as Kafka computes it).
//
// Dead ids are never listed. While a partition is still loading, the
// answer is COORDINATOR_LOAD_IN_PROGRESS with no transaction.
//
// Authorization: only the transactional ids the principal may Describe are
// listed.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(66, 0, 1, handleListTransactions) }

func handleListTransactions(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.ListTransactionsRequest)
	return c.b.coords.txns.List(req, func(id string) bool { // coordinator/txn/host/admin.go
		return c.authorized(acl.OpDescribe, acl.ResourceTransactionalID, id)
	}), nil
}
