package broker

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
)

// Shape of the benchmark's log: rcbTxns transactions of rcbBatches
// batches of rcbRecords records of 100 B, every rcbAbortEvery-th aborted,
// from rcbProducers producers taking turns.
const (
	rcbTxns       = 100
	rcbBatches    = 10
	rcbRecords    = 100
	rcbAbortEvery = 4
	rcbProducers  = 4
)

// BenchmarkReadCommittedFetch reads one partition holding committed and
// aborted transactions (100,000 records of 100 B, a quarter aborted, 200
// markers) from its start to its end, read_uncommitted and read_committed,
// in the same run over the same log: raw (a Fetch v17 loop on one
// connection, 1 MiB per partition: the broker's cost, the client only
// splits batches) and kgo (a new franz-go consumer per op, which drops the
// aborted records itself).
func BenchmarkReadCommittedFetch(b *testing.B) {
	tb := startBroker(b, b.TempDir(), nil)
	id := tb.createTopic(b, "rcb", 1)
	rc := dialRaw(b, tb.addr)
	var pids [rcbProducers]int64
	for i := range pids {
		pids[i] = rc.roundTrip(initProducerIDReq(nil, -1, -1), 5).(*kmsg.InitProducerIDResponse).ProducerID
	}
	value := bytes.Repeat([]byte("v"), 100)
	var seqs [rcbProducers]int32
	committed := 0
	for txn := range rcbTxns {
		pi := txn % rcbProducers
		for range rcbBatches {
			var bb engine.BatchBuilder
			bb.SetProducer(pids[pi], 0, seqs[pi], true)
			now := time.Now().UnixMilli()
			for range rcbRecords {
				bb.Add(engine.Record{Timestamp: now, Value: value})
			}
			seqs[pi] += rcbRecords
			if code, _ := txnProduce(rc, "rcb", 0, bb.Build()); code != 0 {
				b.Fatal(kerr.ErrorForCode(code))
			}
		}
		commit := txn%rcbAbortEvery != rcbAbortEvery-1
		if commit {
			committed += rcbBatches * rcbRecords
		}
		if codes := writeMarker(rc, pids[pi], 0, commit, 0, "rcb", 0); codes[0] != 0 {
			b.Fatal(kerr.ErrorForCode(codes[0]))
		}
	}
	end := tb.partition("rcb", 0).log.EndOffset()
	total := rcbTxns * rcbBatches * rcbRecords
	for _, iso := range []struct {
		name  string
		level int8
		want  int
	}{{"read_uncommitted", 0, total}, {"read_committed", 1, committed}} {
		b.Run("raw/"+iso.name, func(b *testing.B) {
			var bytesRead int64
			b.ReportAllocs()
			for range b.N {
				bytesRead = 0
				for off := int64(0); off < end; {
					p := rawFetch(rc, "rcb", id, off, iso.level)
					if p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
						b.Fatalf("fetch at %d: %v, %d bytes", off, kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches))
					}
					bytesRead += int64(len(p.RecordBatches))
					for rest := p.RecordBatches; len(rest) > 0; {
						h, err := engine.ParseBatchHeader(rest)
						if err != nil {
							b.Fatal(err)
						}
						off = h.LastOffset() + 1
						rest = rest[h.Size():]
					}
				}
			}
			b.SetBytes(bytesRead)
			b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
		b.Run("kgo/"+iso.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				cl := tb.ownClient(b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"rcb": {0: kgo.NewOffset().At(0)}}),
					kgo.FetchIsolationLevel(map[int8]kgo.IsolationLevel{0: kgo.ReadUncommitted(), 1: kgo.ReadCommitted()}[iso.level]))
				ctx := ctxTimeout(b, 30*time.Second)
				n := 0
				for n < iso.want {
					fs := cl.PollFetches(ctx)
					if ctx.Err() != nil {
						b.Fatalf("consumed %d records of %d: %v", n, iso.want, ctx.Err())
					}
					fs.EachError(func(_ string, _ int32, err error) { b.Fatal(err) })
					n += fs.NumRecords()
				}
				cl.Close()
				if n != iso.want {
					b.Fatalf("%s consumed %d records, want %d", iso.name, n, iso.want)
				}
			}
			b.ReportMetric(float64(iso.want)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
