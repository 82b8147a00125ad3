package host

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
)

// TestProduceChecks: a leader takes one batch per partition and appends
// it; an internal topic's, two batches in one, and a compacted topic's
// keyless records are refused with Kafka's codes, the keyless ones with
// an error record each; nothing refused is appended.
func TestProduceChecks(t *testing.T) {
	p := leaderPartition(t, nil)
	one := batch("a", "b")
	res, code, _, _ := p.Produce(Produce{Records: one, Version: 9, Acks: 1})
	if code != 0 || res.FirstOffset != 0 || res.LastOffset != 1 {
		t.Fatalf("append: code %d, %+v", code, res)
	}
	if _, code, msg, _ := p.Produce(Produce{Records: batch("c"), Version: 9, Acks: 1, Internal: true}); code != kerr.InvalidTopicException.Code || msg != "Cannot append to internal topic t" {
		t.Fatalf("internal topic: %d %q", code, msg)
	}
	two := append(batch("c"), batch("d")...)
	if _, code, _, _ := p.Produce(Produce{Records: two, Version: 9, Acks: 1}); code != kerr.InvalidRecord.Code {
		t.Fatalf("two batches: %d", code)
	}

	p.Compacted.Store(true)
	var bb engine.BatchBuilder
	now := time.Now().UnixMilli()
	bb.Add(engine.Record{Timestamp: now, Key: []byte("k"), Value: []byte("v")})
	bb.Add(engine.Record{Timestamp: now, Value: []byte("no key")})
	bb.Add(engine.Record{Timestamp: now, Value: []byte("no key either")})
	_, code, msg, recErrs := p.Produce(Produce{Records: bb.Build(), Version: 9, Acks: 1})
	if code != kerr.InvalidRecord.Code || len(recErrs) != 2 || recErrs[0].RelativeOffset != 1 || recErrs[1].RelativeOffset != 2 || msg == "" {
		t.Fatalf("keyless records in a compacted topic: %d %q %+v", code, msg, recErrs)
	}
	if end := p.Log.EndOffset(); end != 2 {
		t.Fatalf("log end %d after refused batches, want 2", end)
	}
}

// TestCheckTransactional: transactional batches need a transactional id
// and one producer id and epoch in the whole request.
func TestCheckTransactional(t *testing.T) {
	txnBatch := func(pid int64, epoch int16) []byte {
		var bb engine.BatchBuilder
		bb.SetProducer(pid, epoch, 0, true)
		bb.Add(engine.Record{Timestamp: time.Now().UnixMilli(), Key: []byte("k"), Value: []byte("v")})
		return bb.Build()
	}
	req := kmsg.NewPtrProduceRequest()
	rt := kmsg.NewProduceRequestTopic()
	for i, b := range [][]byte{txnBatch(7, 1), txnBatch(7, 1)} {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = int32(i), b
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	if !HasTransactional(req) || CheckTransactional(req) != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("without a transactional id: %d", CheckTransactional(req))
	}
	req.TransactionID = kmsg.StringPtr("tx")
	if code := CheckTransactional(req); code != 0 {
		t.Fatalf("one producer: %d", code)
	}
	req.Topics[0].Partitions[1].Records = txnBatch(8, 1)
	if code := CheckTransactional(req); code != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("two producers: %d", code)
	}
}
