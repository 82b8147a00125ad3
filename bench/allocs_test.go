package bench

// BenchmarkBrokerAllocs measures the in-process sluice broker's allocations
// on the produce and fetch paths exactly: a raw client replays one
// pre-encoded request over loopback and reads each response into a reused
// buffer, allocating nothing itself, so the process's allocations
// (allocs/op, B/op: per request) are the broker's. It also reports them per
// record.
//
//	go test -run '^$' -bench BrokerAllocs ./bench/

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/wire"
)

// appendRequest appends req as a whole request frame with correlation id
// corr and a null client id.
func appendRequest(b []byte, req kmsg.Request, corr int32) []byte {
	start := len(b)
	b = append(b, 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 0xffff) // null client id
	if req.IsFlexible() {
		b = append(b, 0) // no header tags
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b
}

// rawProduceRequest is a Produce v9 request, acks=1, of one batch of n
// records of 100 B for each of partitions partitions.
func rawProduceRequest(topic string, partitions int32, n int) []byte {
	return produceRequestOf(topic, partitions, recordBatch(n))
}

// recordBatch is an uncompressed batch of n records of 100 B.
func recordBatch(n int) []byte {
	var bb engine.BatchBuilder
	value := make([]byte, benchRecordBytes)
	for i := range value {
		value[i] = byte(i * 7)
	}
	ts := time.Now().UnixMilli()
	for range n {
		bb.Add(engine.Record{Timestamp: ts, Value: value})
	}
	return bb.Build()
}

// produceRequestOf is a Produce v9 request, acks=1, of batch for each of
// partitions partitions.
func produceRequestOf(topic string, partitions int32, batch []byte) []byte {
	return produceRequestAcks(topic, partitions, batch, 1)
}

// produceRequestAcks is produceRequestOf with the given acks.
func produceRequestAcks(topic string, partitions int32, batch []byte, acks int16) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = acks
	req.TimeoutMillis = 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	for p := range partitions {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = p
		rp.Records = batch
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return appendRequest(nil, req, 1)
}

// rawFetchRequest is a Fetch v11 request from offset 0 of every partition,
// up to partBytes each.
func rawFetchRequest(topic string, partitions int32, partBytes int32) []byte {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 1
	req.MaxBytes = 64 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	for p := range partitions {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p
		rp.FetchOffset = 0
		rp.PartitionMaxBytes = partBytes
		rp.CurrentLeaderEpoch = -1
		rp.LogStartOffset = -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return appendRequest(nil, req, 2)
}

// rawConn is the allocation-free client side.
type rawConn struct {
	c   net.Conn
	r   *bufio.Reader
	buf []byte
}

func (rc *rawConn) roundTrip(tb testing.TB, req []byte) []byte {
	if _, err := rc.c.Write(req); err != nil {
		tb.Fatal(err)
	}
	frame, err := wire.ReadFrame(rc.r, rc.buf, wire.DefaultMaxFrame)
	if err != nil {
		tb.Fatal(err)
	}
	rc.buf = frame[:0]
	return frame
}

// sluiceWithTopic starts a sluice broker with a topic of the given
// partitions and returns a raw connection to it.
func sluiceWithTopic(b *testing.B, topic string, partitions int32) *rawConn {
	return sluiceWithTopics(b, partitions, map[string]map[string]string{topic: nil})
}

// sluiceWithTopics starts a sluice broker with topics of the given
// partitions, each with its configs, and returns a raw connection to it.
func sluiceWithTopics(b *testing.B, partitions int32, topics map[string]map[string]string) *rawConn {
	return sluiceWithTopicsCfg(b, partitions, topics, nil)
}

// sluiceWithTopicsCfg is sluiceWithTopics with the broker's configuration
// adjusted by mod.
func sluiceWithTopicsCfg(b *testing.B, partitions int32, topics map[string]map[string]string, mod func(*config.Config)) *rawConn {
	addr, stop, err := startSluiceCfg(b, mod)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(stop)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for topic, configs := range topics {
		cfg := map[string]*string{}
		for k, v := range configs {
			cfg[k] = kadm.StringPtr(v)
		}
		resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, cfg, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	return dialRaw(b, addr)
}

// dialRaw opens a raw connection to addr, closed at cleanup.
func dialRaw(b *testing.B, addr string) *rawConn {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return &rawConn{c: c, r: bufio.NewReaderSize(c, 64<<10)}
}

// checkProduced fails unless frame is a Produce v9 response without errors.
func checkProduced(tb testing.TB, frame []byte) {
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(9)
	if err := resp.ReadFrom(frame[5:]); err != nil {
		tb.Fatal(err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				tb.Fatalf("produce %s/%d: error %d", t.Topic, p.Partition, p.ErrorCode)
			}
		}
	}
}

// fetchedRecords counts the records of a Fetch v11 response.
func fetchedRecords(tb testing.TB, frame []byte) int {
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(11)
	if err := resp.ReadFrom(frame[4:]); err != nil {
		tb.Fatal(err)
	}
	n := 0
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				tb.Fatalf("fetch %s/%d: error %d", t.Topic, p.Partition, p.ErrorCode)
			}
			for recs := p.RecordBatches; len(recs) >= engine.BatchHeaderSize; {
				h, err := engine.ParseBatchHeader(recs)
				if err != nil || h.Size() > int64(len(recs)) {
					break
				}
				n += int(h.LastOffsetDelta) + 1
				recs = recs[h.Size():]
			}
		}
	}
	return n
}

func BenchmarkBrokerAllocs(b *testing.B) {
	const partitions = 8
	// Records per batch: 1000 makes a 0.9 MB request; 4000 a 3.6 MB one,
	// as franz-go sends at saturation (1 MB batches, several partitions).
	for _, perBatch := range []int{1000, 4000} {
		req := rawProduceRequest("allocs", partitions, perBatch)
		b.Run(fmt.Sprintf("produce/request=%.1fMB", float64(len(req))/1e6), func(b *testing.B) {
			rc := sluiceWithTopic(b, "allocs", partitions)
			checkProduced(b, rc.roundTrip(b, req))
			b.SetBytes(int64(len(req)))
			timedAllocs(b, partitions*perBatch, func() { rc.roundTrip(b, req) })
		})
	}
	b.Run("fetch/partition=1MiB", func(b *testing.B) {
		rc := sluiceWithTopic(b, "allocs", partitions)
		prod := rawProduceRequest("allocs", partitions, 1000)
		for range 20 {
			checkProduced(b, rc.roundTrip(b, prod))
		}
		req := rawFetchRequest("allocs", partitions, 1<<20)
		records := fetchedRecords(b, rc.roundTrip(b, req))
		if records == 0 {
			b.Fatal("fetch returned no records")
		}
		timedAllocs(b, records, func() { rc.roundTrip(b, req) })
	})
}

// BenchmarkBrokerCompression is the produce path of BenchmarkBrokerAllocs
// under each of compression.type producer (the batch stored as sent), lz4
// and zstd (recompressed at the default level), in one broker and one run:
// a topic of each type, and for each a request of 8 uncompressed batches of
// 1,000 event-like records (a key and a JSON value, about 110 B), acks=1.
// An op is one round trip to each topic on one connection, in an order that
// rotates every op, each timed on its own: <type>-MB/s counts request bytes over
// that type's time, <type>/producer is the throughput as a fraction of
// producer's. allocs/record and B/record are the process's over the three
// round trips' records.
//
//	go test -run '^$' -bench BrokerCompression ./bench/
func BenchmarkBrokerCompression(b *testing.B) {
	const partitions, perBatch = 8, 1000
	types := []string{"producer", "lz4", "zstd"}
	batch := eventBatch(perBatch)
	topics := map[string]map[string]string{}
	for _, typ := range types {
		topics["compressed-"+typ] = map[string]string{"compression.type": typ}
	}
	rc := sluiceWithTopics(b, partitions, topics)
	reqs := make([][]byte, len(types))
	for i, typ := range types {
		reqs[i] = produceRequestOf("compressed-"+typ, partitions, batch)
		checkProduced(b, rc.roundTrip(b, reqs[i]))
	}
	spent := make([]time.Duration, len(types))
	n := 0
	timedAllocs(b, len(types)*partitions*perBatch, func() {
		n++
		for k := range types {
			i := (k + n) % len(types)
			start := time.Now()
			rc.roundTrip(b, reqs[i])
			spent[i] += time.Since(start)
		}
	})
	for i, typ := range types {
		b.ReportMetric(float64(b.N)*float64(len(reqs[i]))/1e6/spent[i].Seconds(), typ+"-MB/s")
		if i > 0 {
			b.ReportMetric(spent[0].Seconds()/spent[i].Seconds(), typ+"/producer")
		}
	}
}

// eventBatch is an uncompressed batch of n records shaped like application
// events, from a fixed seed: they compress about as real data does.
func eventBatch(n int) []byte {
	rng := rand.New(rand.NewPCG(5, 6))
	kinds := [...]string{"click", "view", "purchase", "signup", "search"}
	var bb engine.BatchBuilder
	ts := time.Now().UnixMilli()
	for i := range n {
		user := rng.IntN(10_000)
		bb.Add(engine.Record{
			Timestamp: ts + int64(i),
			Key:       fmt.Appendf(nil, "u%05d", user),
			Value: fmt.Appendf(nil, `{"user":"u%05d","kind":%q,"session":"%016x","path":"/item/%d","took_ms":%d}`,
				user, kinds[rng.IntN(len(kinds))], rng.Uint64(), rng.IntN(500), rng.IntN(3000)),
		})
	}
	return bb.Build()
}

// timedAllocs runs op b.N times, timed, and reports the process's
// allocations (all the broker's) per op and per record.
func timedAllocs(b *testing.B, recordsPerOp int, op func()) {
	b.ReportAllocs()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	b.ResetTimer()
	for range b.N {
		op()
	}
	b.StopTimer()
	runtime.ReadMemStats(&m1)
	allocs := float64(m1.Mallocs-m0.Mallocs) / float64(b.N)
	bytes := float64(m1.TotalAlloc-m0.TotalAlloc) / float64(b.N)
	b.ReportMetric(float64(recordsPerOp), "records/op")
	b.ReportMetric(allocs/float64(recordsPerOp), "allocs/record")
	b.ReportMetric(bytes/float64(recordsPerOp), "B/record")
}
