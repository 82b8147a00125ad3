package host

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAddPartitionsRefusals: a topic the client may not write, or a
// partition nobody has, fails the whole transaction's partitions (the
// others OPERATION_NOT_ATTEMPTED); an empty transactional id is
// INVALID_REQUEST; a coordinator not here is NOT_COORDINATOR, also for a
// verification.
func TestAddPartitionsRefusals(t *testing.T) {
	cs := New(Options{StatePartitions: func() int32 { return 50 }})
	txnOf := func(id string, topics ...string) *kmsg.AddPartitionsToTxnRequestTransaction {
		tr := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tr.TransactionalID = id
		for _, name := range topics {
			tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			tt.Topic, tt.Partitions = name, []int32{0}
			tr.Topics = append(tr.Topics, tt)
		}
		return &tr
	}
	exists := func(topic string, _ int32) bool { return topic != "missing" }
	writable := func(topic string) bool { return topic != "secret" }
	codes := func(rs []kmsg.AddPartitionsToTxnResponseTransactionTopic) []int16 {
		var out []int16
		for _, r := range rs {
			for _, p := range r.Partitions {
				out = append(out, p.ErrorCode)
			}
		}
		return out
	}
	got := codes(cs.AddPartitions(3, txnOf("tx", "ok", "secret", "missing"), writable, exists))
	want := []int16{kerr.OperationNotAttempted.Code, kerr.TopicAuthorizationFailed.Code, kerr.UnknownTopicOrPartition.Code}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("refused partitions: %v, want %v", got, want)
	}
	if got := codes(cs.AddPartitions(3, txnOf("", "ok"), nil, exists)); got[0] != kerr.InvalidRequest.Code {
		t.Fatalf("empty transactional id: %v", got)
	}
	if got := codes(cs.AddPartitions(3, txnOf("tx", "ok"), nil, exists)); got[0] != kerr.NotCoordinator.Code {
		t.Fatalf("no coordinator here: %v", got)
	}
	verify := txnOf("tx", "ok")
	verify.VerifyOnly = true
	if got := codes(cs.AddPartitions(4, verify, nil, exists)); got[0] != kerr.NotCoordinator.Code {
		t.Fatalf("verification without a coordinator: %v", got)
	}
}
