package host

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDescribeAndListRefusals: an id the client may not describe is
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, one no coordinator here owns
// NOT_COORDINATOR; a state filter that names no state is reported
// unknown; with no coordinator here nothing is listed.
func TestDescribeAndListRefusals(t *testing.T) {
	cs := New(Options{StatePartitions: func() int32 { return 50 }})
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{"secret", "tx"}
	resp := cs.Describe(req, func(id string) bool { return id != "secret" }, func(string) bool { return true })
	if s := resp.TransactionStates; len(s) != 2 || s[0].ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code || s[1].ErrorCode != kerr.NotCoordinator.Code || s[1].ProducerID != -1 {
		t.Fatalf("describe: %+v", resp.TransactionStates)
	}
	list := kmsg.NewPtrListTransactionsRequest()
	list.StateFilters = []string{"Ongoing", "Sleeping"}
	lr := cs.List(list, func(string) bool { return true })
	if lr.ErrorCode != 0 || len(lr.TransactionStates) != 0 || len(lr.UnknownStateFilters) != 1 || lr.UnknownStateFilters[0] != "Sleeping" {
		t.Fatalf("list: %+v", lr)
	}
}
