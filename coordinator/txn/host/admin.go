package host

// DescribeTransactions and ListTransactions answered from the
// coordinators' state (Kafka's TransactionCoordinator.handleDescribe and
// handleListTransactions): the rules are written in
// broker/65_describe_transactions.go and broker/66_list_transactions.go.

import (
	"cmp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator/txn"
)

// Describe answers a DescribeTransactions request. describeID and
// describeTopic report what the client may describe: a transactional id
// it may not is TRANSACTIONAL_ID_AUTHORIZATION_FAILED, a topic it may not
// is left out of the transaction's partitions.
func (cs *Coordinators) Describe(req *kmsg.DescribeTransactionsRequest, describeID, describeTopic func(string) bool) *kmsg.DescribeTransactionsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	ctx, cancel := cs.closingContext(CallTimeout)
	defer cancel()
	for _, id := range req.TransactionalIDs {
		ts := kmsg.NewDescribeTransactionsResponseTransactionState()
		ts.TransactionalID, ts.ProducerID, ts.ProducerEpoch, ts.StartTimestamp = id, -1, -1, -1
		if !describeID(id) {
			ts.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			resp.TransactionStates = append(resp.TransactionStates, ts)
			continue
		}
		d, code := cs.DriverFor(id)
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
				if !describeTopic(p.Topic) {
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
	return resp
}

// stateByName maps Kafka's state names to states.
var stateByName = func() map[string]txn.State {
	m := map[string]txn.State{}
	for s := txn.Empty; s <= txn.PrepareEpochFence; s++ {
		m[s.String()] = s
	}
	return m
}()

// List answers a ListTransactions request with the transactions of every
// coordinator here, sorted by transactional id, those describeID allows.
func (cs *Coordinators) List(req *kmsg.ListTransactionsRequest, describeID func(string) bool) *kmsg.ListTransactionsResponse {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	states := map[txn.State]bool{}
	for _, name := range req.StateFilters {
		if s, ok := stateByName[name]; ok {
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
	ds := cs.Drivers()
	ctx, cancel := cs.closingContext(CallTimeout)
	defer cancel()
	var out []kmsg.ListTransactionsResponseTransactionState
	for _, d := range ds {
		if !d.Loaded() {
			resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
			return resp
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
	resp.TransactionStates = slices.DeleteFunc(out, func(ts kmsg.ListTransactionsResponseTransactionState) bool {
		return !describeID(ts.TransactionalID)
	})
	return resp
}
