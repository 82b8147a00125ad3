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
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(65, 0, 0, handleDescribeTransactions) }

func handleDescribeTransactions(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeTransactionsRequest)
	return c.b.coords.txns.Describe(req, // coordinator/txn/host/admin.go
		func(id string) bool { return c.authorized(acl.OpDescribe, acl.ResourceTransactionalID, id) },
		func(topic string) bool { return c.authorized(acl.OpDescribe, acl.ResourceTopic, topic) }), nil
}
