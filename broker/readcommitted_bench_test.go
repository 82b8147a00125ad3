package broker

import (
	"bytes"
	"encoding/binary"
	"io"
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
// in the same run over the same log: raw (one Fetch v17 of the whole log
// per op, pre-encoded, its response read into a reused buffer, so
// allocs/op are the broker's) and kgo (a new franz-go consumer per op,
// reading until it has every record its isolation level lets through; it
// drops the aborted records itself; each op reads both ways, alternating
// which first, each timed on its own).
//
//	go test -run '^$' -bench ReadCommittedFetch -benchtime 20x -count 3 ./broker/
func BenchmarkReadCommittedFetch(b *testing.B) {
	tb := startBroker(b, b.TempDir(), noTxnVerification) // no coordinator
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
	end := tb.partition("rcb", 0).Log.EndOffset()
	total := rcbTxns * rcbBatches * rcbRecords
	for _, iso := range []struct {
		name  string
		level int8
		want  int
	}{{"read_uncommitted", 0, total}, {"read_committed", 1, committed}} {
		b.Run("raw/"+iso.name, func(b *testing.B) {
			// One Fetch of the whole log, pre-encoded, its response read
			// into a reused buffer: the process's allocations are the
			// broker's.
			req := fetchReq("rcb", id, 0, 0, 64<<20)
			req.IsolationLevel = iso.level
			req.SetVersion(17)
			frame := rc.fmt.AppendRequest(nil, req, 1)
			var buf []byte
			roundTrip := func() {
				rc.write(frame)
				var sz [4]byte
				if _, err := io.ReadFull(rc.nc, sz[:]); err != nil {
					b.Fatal(err)
				}
				n := int(binary.BigEndian.Uint32(sz[:]))
				if cap(buf) < n {
					buf = make([]byte, n)
				}
				buf = buf[:n]
				if _, err := io.ReadFull(rc.nc, buf); err != nil {
					b.Fatal(err)
				}
			}
			roundTrip()
			resp := kmsg.NewPtrFetchResponse()
			resp.SetVersion(17)
			if err := resp.ReadFrom(buf[5:]); err != nil {
				b.Fatal(err)
			}
			p := resp.Topics[0].Partitions[0]
			if hs := batchesIn(b, p.RecordBatches); p.ErrorCode != 0 || hs[len(hs)-1].LastOffset() != end-1 {
				b.Fatalf("the fetch did not return the whole log: %v", kerr.ErrorForCode(p.ErrorCode))
			}
			if wantAborted := rcbTxns / rcbAbortEvery; iso.level == 1 && len(p.AbortedTransactions) != wantAborted || iso.level == 0 && len(p.AbortedTransactions) != 0 {
				b.Fatalf("%d aborted transactions", len(p.AbortedTransactions))
			}
			b.SetBytes(int64(len(p.RecordBatches)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				roundTrip()
			}
			b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
	consume := func(b *testing.B, level kgo.IsolationLevel, want int) time.Duration {
		start := time.Now()
		cl := tb.ownClient(b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"rcb": {0: kgo.NewOffset().At(0)}}), kgo.FetchIsolationLevel(level))
		defer cl.Close()
		ctx := ctxTimeout(b, 30*time.Second)
		n := 0
		for n < want {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				b.Fatalf("consumed %d records of %d: %v", n, want, ctx.Err())
			}
			fs.EachError(func(_ string, _ int32, err error) { b.Fatal(err) })
			n += fs.NumRecords()
		}
		if n != want {
			b.Fatalf("consumed %d records, want %d", n, want)
		}
		return time.Since(start)
	}
	// kgo: each op consumes the log read_uncommitted and read_committed,
	// in an order that alternates, each timed on its own.
	b.Run("kgo", func(b *testing.B) {
		b.ReportAllocs()
		var unc, com time.Duration
		for i := range b.N {
			if i%2 == 0 {
				unc += consume(b, kgo.ReadUncommitted(), total)
				com += consume(b, kgo.ReadCommitted(), committed)
			} else {
				com += consume(b, kgo.ReadCommitted(), committed)
				unc += consume(b, kgo.ReadUncommitted(), total)
			}
		}
		b.ReportMetric(float64(unc.Microseconds())/1e3/float64(b.N), "uncommitted-ms")
		b.ReportMetric(float64(com.Microseconds())/1e3/float64(b.N), "committed-ms")
		b.ReportMetric(float64(total)*float64(b.N)/unc.Seconds(), "uncommitted-records/s")
		b.ReportMetric(float64(committed)*float64(b.N)/com.Seconds(), "committed-records/s")
		b.ReportMetric(com.Seconds()/unc.Seconds(), "committed/uncommitted-time")
	})
}
