package host

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
)

// verifyTxn is a transaction of one topic's partitions to verify.
func verifyTxn(id string, epoch int16, topic string, partitions ...int32) kmsg.AddPartitionsToTxnRequestTransaction {
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch = id, 1, epoch
	tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	tt.Topic, tt.Partitions = topic, partitions
	tx.Topics = append(tx.Topics, tt)
	return tx
}

// TestTxnVerifierBatches: while a request to a coordinator is in flight,
// the next verifications queue and go as one request; a second
// verification of a queued transactional id replaces it (the first gets
// NETWORK_EXCEPTION, or INVALID_PRODUCER_EPOCH when the second has a newer
// epoch); an older epoch than the queued one is refused at once.
func TestTxnVerifierBatches(t *testing.T) {
	type call struct {
		req   *kmsg.AddPartitionsToTxnRequest
		reply chan *kmsg.AddPartitionsToTxnResponse
	}
	calls := make(chan call)
	v := &Verifier{send: func(_ context.Context, _ int32, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
		c := call{req, make(chan *kmsg.AddPartitionsToTxnResponse)}
		calls <- c
		if r := <-c.reply; r != nil {
			return r, nil
		}
		return nil, errors.New("connection refused")
	}}
	recv := func() call {
		t.Helper()
		select {
		case c := <-calls:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("no request sent")
			return call{}
		}
	}
	got := func(ch <-chan Codes) Codes {
		t.Helper()
		select {
		case c := <-ch:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("no answer")
			return nil
		}
	}
	first := v.verify(7, verifyTxn("a", 0, "t", 0))
	c1 := recv() // in flight
	b0 := v.verify(7, verifyTxn("b", 0, "t", 1))
	b1 := v.verify(7, verifyTxn("b", 0, "t", 1)) // a retry replaces it
	if c := got(b0); c[engine.Partition{Topic: "t", Partition: 1}] != kerr.NetworkException.Code {
		t.Fatalf("replaced verification: %v", c)
	}
	b2 := v.verify(7, verifyTxn("b", 1, "t", 1)) // a newer epoch fences it
	if c := got(b1); c[engine.Partition{Topic: "t", Partition: 1}] != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("fenced verification: %v", c)
	}
	if c := got(v.verify(7, verifyTxn("b", 0, "t", 1))); c[engine.Partition{Topic: "t", Partition: 1}] != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("older epoch: %v", c)
	}
	cc := v.verify(7, verifyTxn("c", 0, "t", 2))
	resp := c1.req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
	rt.TransactionalID = "a"
	rt.Topics = FailedTopics(&c1.req.Transactions[0], kerr.InvalidTxnState.Code)
	resp.Transactions = append(resp.Transactions, rt)
	c1.reply <- resp
	if c := got(first); c[engine.Partition{Topic: "t", Partition: 0}] != kerr.InvalidTxnState.Code {
		t.Fatalf("a: %v", c)
	}
	c2 := recv()
	if n := len(c2.req.Transactions); n != 2 || !c2.req.Transactions[0].VerifyOnly || c2.req.Version < 4 {
		t.Fatalf("second request: %d transactions (%+v)", n, c2.req)
	}
	c2.reply <- nil // the request fails
	for _, ch := range []<-chan Codes{b2, cc} {
		c := got(ch)
		if len(c) != 1 {
			t.Fatalf("failed request: %v", c)
		}
		for _, code := range c {
			if code != kerr.NetworkException.Code {
				t.Fatalf("failed request: %v", c)
			}
		}
	}
}

// TestVerifyAnswers: the coordinator's codes as Kafka's
// AddPartitionsToTxnManager and ReplicaManager translate them.
func TestVerifyAnswers(t *testing.T) {
	txns := []kmsg.AddPartitionsToTxnRequestTransaction{verifyTxn("a", 0, "t", 0, 1)}
	tp0, tp1 := engine.Partition{Topic: "t", Partition: 0}, engine.Partition{Topic: "t", Partition: 1}
	resp := kmsg.NewPtrAddPartitionsToTxnResponse()
	resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	if got := verifyAnswers(txns, resp, nil)["a"]; got[tp0] != kerr.InvalidTxnState.Code || got[tp1] != kerr.InvalidTxnState.Code {
		t.Errorf("CLUSTER_AUTHORIZATION_FAILED: %v", got)
	}
	resp.ErrorCode = 0
	rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
	rt.TransactionalID = "a"
	rt.Topics = FailedTopics(&txns[0], kerr.ProducerFenced.Code)
	rt.Topics[0].Partitions[1].ErrorCode = 0
	resp.Transactions = append(resp.Transactions, rt)
	if got := verifyAnswers(txns, resp, nil)["a"]; len(got) != 1 || got[tp0] != kerr.InvalidProducerEpoch.Code {
		t.Errorf("PRODUCER_FENCED and verified: %v", got)
	}
	for code, want := range map[int16]int16{
		kerr.InvalidTxnState.Code:           kerr.InvalidTxnState.Code,
		kerr.NotCoordinator.Code:            kerr.NotEnoughReplicas.Code,
		kerr.ConcurrentTransactions.Code:    kerr.NotEnoughReplicas.Code,
		kerr.CoordinatorNotAvailable.Code:   kerr.NotEnoughReplicas.Code,
		kerr.NetworkException.Code:          kerr.NotEnoughReplicas.Code,
		kerr.CoordinatorLoadInProgress.Code: kerr.NotEnoughReplicas.Code,
		kerr.InvalidProducerEpoch.Code:      kerr.InvalidProducerEpoch.Code,
	} {
		if got, _ := ProduceError(code); got != want {
			t.Errorf("%v: answered %v, want %v", kerr.ErrorForCode(code), kerr.ErrorForCode(got), kerr.ErrorForCode(want))
		}
	}
}
