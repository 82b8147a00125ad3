package broker

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
)

// BenchmarkTransactionalProduce is the partition leader's share of a
// transaction's cost: per op, a transaction of k transactional batches
// (Produce v11, acks=all, 100 records of 100 B each) ended by its COMMIT
// marker (WriteTxnMarkers v1), against k idempotent batches of the same
// size, on two connections to one partition each way, interleaved (the
// order alternates per op), each timed on its own: txn/idempotent-median
// is the median over ops of the idempotent time over the transaction's
// (the transactional throughput as a fraction), -total the same of the
// total times. No transaction
// coordinator is involved (no AddPartitionsToTxn, EndTxn or
// __transaction_state writes): those are the coordinator's share.
//
//	go test -run '^$' -bench TransactionalProduce -benchtime 200x -count 3 ./broker/
func BenchmarkTransactionalProduce(b *testing.B) {
	for _, k := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("batches=%d", k), func(b *testing.B) {
			tb := startBroker(b, b.TempDir(), noTxnVerification) // no coordinator
			tb.createTopic(b, "tx", 1)
			tb.createTopic(b, "idem", 1)
			rcTx, rcIdem := dialRaw(b, tb.addr), dialRaw(b, tb.addr)
			pidTx := rcTx.roundTrip(initProducerIDReq(nil, -1, -1), 5).(*kmsg.InitProducerIDResponse).ProducerID
			pidIdem := rcIdem.roundTrip(initProducerIDReq(nil, -1, -1), 5).(*kmsg.InitProducerIDResponse).ProducerID
			value := bytes.Repeat([]byte("v"), 100)
			var seqTx, seqIdem int32
			build := func(pid int64, seq int32, txn bool) []byte {
				var bb engine.BatchBuilder
				bb.SetProducer(pid, 0, seq, txn)
				now := time.Now().UnixMilli()
				for range 100 {
					bb.Add(engine.Record{Timestamp: now, Value: value})
				}
				return bytes.Clone(bb.Build())
			}
			produce := func(rc *rawConn, topic string, batch []byte, txn bool) {
				req := produceReq(topic, 0, -1, batch)
				if txn {
					req.TransactionID = kmsg.StringPtr("bench")
				}
				p := rc.roundTrip(req, 11).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
				if p.ErrorCode != 0 {
					b.Fatalf("produce to %s: %v", topic, kerr.ErrorForCode(p.ErrorCode))
				}
			}
			txn := func() time.Duration {
				start := time.Now()
				for range k {
					produce(rcTx, "tx", build(pidTx, seqTx, true), true)
					seqTx += 100
				}
				if codes := writeMarker(rcTx, pidTx, 0, true, 0, "tx", 0); codes[0] != 0 {
					b.Fatal(kerr.ErrorForCode(codes[0]))
				}
				return time.Since(start)
			}
			idem := func() time.Duration {
				start := time.Now()
				for range k {
					produce(rcIdem, "idem", build(pidIdem, seqIdem, false), false)
					seqIdem += 100
				}
				return time.Since(start)
			}
			var tTx, tIdem time.Duration
			ratios := make([]float64, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				var x, y time.Duration
				if i%2 == 0 {
					x = txn()
					y = idem()
				} else {
					y = idem()
					x = txn()
				}
				tTx, tIdem = tTx+x, tIdem+y
				ratios = append(ratios, y.Seconds()/x.Seconds())
			}
			b.StopTimer()
			slices.Sort(ratios)
			records := float64(b.N * k * 100)
			b.ReportMetric(records/tTx.Seconds(), "txn-records/s")
			b.ReportMetric(records/tIdem.Seconds(), "idempotent-records/s")
			b.ReportMetric(ratios[len(ratios)/2], "txn/idempotent-median")
			b.ReportMetric(tIdem.Seconds()/tTx.Seconds(), "txn/idempotent-total")
			if p := tb.partition("tx", 0); p.Log.FirstUnstableOffset() != -1 {
				b.Fatalf("a transaction left open at %d", p.Log.FirstUnstableOffset())
			}
		})
	}
}
