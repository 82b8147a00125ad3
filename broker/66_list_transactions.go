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
	"cmp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator/txn"
	txnhost "github.com/sluice-io/sluice/coordinator/txn/host"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(66, 0, 1, handleListTransactions) }

// txnStateByName maps Kafka's state names to states.
var txnStateByName = func() map[string]txn.State {
	m := map[string]txn.State{}
	for s := txn.Empty; s <= txn.PrepareEpochFence; s++ {
		m[s.String()] = s
	}
	return m
}()

func handleListTransactions(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	states := map[txn.State]bool{}
	for _, name := range req.StateFilters {
		if s, ok := txnStateByName[name]; ok {
			states[s] = true
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	duration := int64(-1)
	if req.Version >= 1 {
		duration = req.DurationFilterMillis
	}
	keep := func(m txn.Metadata, now int64) bool {
		switch {
		case m.State == txn.Dead:
			return false
		case len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, m.ProducerID):
			return false
		case len(req.StateFilters) > 0 && !states[m.State]:
			return false
		case duration >= 0 && now-m.StartMs <= duration:
			return false
		}
		return true
	}
	ds := c.b.txns.Drivers()
	ctx, cancel := c.b.closingContext(txnhost.CallTimeout)
	defer cancel()
	var out []kmsg.ListTransactionsResponseTransactionState
	for _, d := range ds {
		if !d.Loaded() {
			resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
			return resp, nil
		}
		d.Inspect(ctx, func(co *txn.Coordinator) {
			now := time.Now().UnixMilli()
			for _, id := range co.IDs() {
				m, _ := co.Get(id)
				if keep(m, now) {
					ts := kmsg.NewListTransactionsResponseTransactionState()
					ts.TransactionalID, ts.ProducerID, ts.TransactionState = id, m.ProducerID, m.State.String()
					out = append(out, ts)
				}
			}
		})
	}
	slices.SortFunc(out, func(a, b kmsg.ListTransactionsResponseTransactionState) int {
		return cmp.Compare(a.TransactionalID, b.TransactionalID)
	})
	// Only the transactional ids the principal may describe.
	resp.TransactionStates = slices.DeleteFunc(out, func(ts kmsg.ListTransactionsResponseTransactionState) bool {
		return !c.authorized(acl.OpDescribe, acl.ResourceTransactionalID, ts.TransactionalID)
	})
	return resp, nil
}
