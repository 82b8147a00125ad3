package broker

// The idempotent producer: Produce's deduplication and
// sequence checks, through franz-go with its default options and through
// raw requests; retries after lost responses through kafkaProxy.

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// idempotentClient is a franz-go client with its default producer options
// (idempotent, acks=all, up to 5 requests in flight), seeded at addr; only
// the partitioner is manual, so records go to the partition they name.
func idempotentClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner())}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// idempotentBatch is batch(values...) from producer pid at epoch, its
// first record at sequence seq.
func idempotentBatch(pid int64, epoch int16, seq int32, values ...string) []byte {
	return withProducer(batch(values...), pid, epoch, seq)
}

// withProducer sets the batch b's producer id, epoch and base sequence and
// recomputes its CRC. The fields are at their offsets in Kafka's
// RecordBatch v2 (producerId 43, producerEpoch 51, baseSequence 53).
func withProducer(b []byte, pid int64, epoch int16, seq int32) []byte {
	be := binary.BigEndian
	be.PutUint64(b[43:], uint64(pid))
	be.PutUint16(b[51:], uint16(epoch))
	be.PutUint32(b[53:], uint32(seq))
	return fixBatchCRC(b)
}

// fixBatchCRC recomputes the CRC-32C (at 17) of the batch b, which covers
// [21, end), and returns b.
func fixBatchCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// franz-go with its default options is an idempotent producer: it gets a
// producer id and its records are stored with it, once each, in order.
func TestIdempotentProducer(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	tb.createTopic(t, "idem", 3)
	cl := idempotentClient(t, tb.addr)
	var rs []*kgo.Record
	for i := range 100 {
		for p := range int32(3) {
			rs = append(rs, &kgo.Record{Topic: "idem", Partition: p, Value: fmt.Appendf(nil, "p%d-%d", p, i)})
		}
	}
	if err := cl.ProduceSync(ctxTimeout(t, 10*time.Second), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pid := rs[0].ProducerID
	if pid < 0 {
		t.Fatalf("produced with producer id %d: the client is not idempotent", pid)
	}
	for p := range int32(3) {
		got := tb.consumeRecords(t, "idem", p, 100)
		for i, r := range got {
			if want := fmt.Sprintf("p%d-%d", p, i); string(r.Value) != want || r.ProducerID != pid || r.ProducerEpoch != 0 {
				t.Fatalf("partition %d offset %d: %q from producer %d epoch %d, want %q from %d epoch 0", p, i, r.Value, r.ProducerID, r.ProducerEpoch, want, pid)
			}
		}
	}
}

// Produce's idempotence checks, batch by batch, at the first and the last
// served version.
func TestIdempotentProduceErrors(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	rc := dialRaw(t, tb.addr)
	a := rc.roundTrip(initProducerIDReq(nil, -1, -1), 5).(*kmsg.InitProducerIDResponse).ProducerID
	for _, v := range []int16{3, 11} {
		topic := fmt.Sprintf("idem-v%d", v)
		tb.createTopic(t, topic, 1)
		type step struct {
			what     string
			pid      int64
			epoch    int16
			seq      int32
			n        int
			want     *kerr.Error // nil: accepted
			wantBase int64       // when accepted
		}
		const unknown = 1 << 40 // an id never handed out
		steps := []step{
			{"first batch", a, 0, 0, 2, nil, 0},
			{"retry of the first batch", a, 0, 0, 2, nil, 0},
			{"a gap in sequences", a, 0, 5, 1, kerr.OutOfOrderSequenceNumber, 0},
			{"the next sequence", a, 0, 2, 3, nil, 2},
			{"a sequence already written, not a retry", a, 0, 3, 1, kerr.OutOfOrderSequenceNumber, 0},
			{"a higher epoch not at sequence 0", a, 1, 5, 1, kerr.OutOfOrderSequenceNumber, 0},
			{"a higher epoch at sequence 0", a, 1, 0, 1, nil, 5},
			{"the old epoch", a, 0, 5, 1, kerr.InvalidProducerEpoch, 0},
			{"retry of the old epoch's batch", a, 0, 2, 3, kerr.InvalidProducerEpoch, 0},
			{"an unknown producer at sequence 42", unknown, 0, 42, 2, nil, 6},
			{"its next sequence", unknown, 0, 44, 1, nil, 8},
		}
		// Six more batches of a: the first is no longer among the last
		// five, the second is.
		for i := range int32(6) {
			steps = append(steps, step{fmt.Sprintf("batch %d of epoch 1", i+2), a, 1, 1 + i, 1, nil, int64(9 + i)})
		}
		steps = append(steps,
			step{"retry of a batch among the last five", a, 1, 2, 1, nil, 10},
			step{"retry of a batch before the last five", a, 1, 1, 1, kerr.OutOfOrderSequenceNumber, 0},
		)
		for _, s := range steps {
			var values []string
			for i := range s.n {
				values = append(values, fmt.Sprintf("%d-%d-%d", s.pid, s.seq, i))
			}
			code, base := rc.produceCode(v, topic, 0, idempotentBatch(s.pid, s.epoch, s.seq, values...))
			what := fmt.Sprintf("v%d %s (producer %d epoch %d sequence %d)", v, s.what, s.pid, s.epoch, s.seq)
			if s.want != nil {
				wantCode(t, what, code, s.want)
				continue
			}
			if code != 0 || base != s.wantBase {
				t.Errorf("%s: %v at base offset %d, want accepted at %d", what, kerr.ErrorForCode(code), base, s.wantBase)
			}
		}
		// Nothing but the accepted batches was written, each once.
		if end := tb.partition(topic, 0).Log.EndOffset(); end != 15 {
			t.Errorf("v%d: the log ends at %d, want 15", v, end)
		}
	}

	t.Run("LogAppendTime", func(t *testing.T) {
		ctx := ctxTimeout(t, 10*time.Second)
		if _, err := tb.admin(t).CreateTopic(ctx, 1, 1, map[string]*string{"message.timestamp.type": kmsg.StringPtr("LogAppendTime")}, "idem-lat"); err != nil {
			t.Fatal(err)
		}
		send := func() kmsg.ProduceResponseTopicPartition {
			resp := rc.roundTrip(produceReq("idem-lat", 0, -1, idempotentBatch(a, 0, 0, "x")), 11).(*kmsg.ProduceResponse)
			return resp.Topics[0].Partitions[0]
		}
		first := send()
		retry := send()
		if first.ErrorCode != 0 || first.LogAppendTime < 0 || retry.ErrorCode != 0 || retry.BaseOffset != first.BaseOffset || retry.LogAppendTime != first.LogAppendTime {
			t.Errorf("first %+v, retry %+v: want the retry answered with the first's offset and append time", first, retry)
		}
	})
}

// lostProduceSetup starts a kafkaProxy that loses the answers to the
// Produce requests drop picks (by their count, from 1) and a broker in dir
// that advertises the proxy, so clients reach it only through the proxy;
// mod is the broker's configuration change, for a restart.
func lostProduceSetup(t *testing.T, dir string, drop func(n int) bool, hold bool) (*kafkaProxy, *testBroker, func(*config.Config)) {
	t.Helper()
	px := startProxy(t, func(key int16, n int) bool { return key == 0 && drop(n) }, hold)
	mod := func(c *config.Config) { c.Advertise = px.addr() }
	tb := startBroker(t, dir, mod)
	px.setTarget(tb.addr)
	return px, tb, mod
}

// Produce answers lost with the connection, among up to five requests in
// flight: the client retries each unanswered request, and the broker
// recognises the retries (a lost answer to a retry too), so every record is
// stored once, in order.
func TestIdempotentRetryAfterLostResponse(t *testing.T) {
	lost := map[int]bool{2: true, 3: true, 7: true, 12: true, 13: true, 20: true}
	px, tb, _ := lostProduceSetup(t, t.TempDir(), func(n int) bool { return lost[n] }, false)
	tb.createTopic(t, "retry", 3)
	cl := idempotentClient(t, px.addr(),
		// Batches of a few records (the smallest franz-go allows, 512
		// bytes, holds 6 of these): each partition's 150 take 25 requests
		// or more (one batch per partition each), so every loss above
		// happens, and several requests are in flight when one is lost.
		kgo.ProducerBatchMaxBytes(512),
		// After two failures in a row franz-go refreshes its metadata
		// before retrying, at most every MetadataMinAge (5 s by default).
		kgo.MetadataMinAge(10*time.Millisecond))
	const n = 150
	pad := strings.Repeat("x", 60)
	var (
		mu    sync.Mutex
		acked = map[int32][]int64{} // per partition, in acknowledgement order
		wg    sync.WaitGroup
	)
	ctx := ctxTimeout(t, 60*time.Second)
	for i := range n {
		for p := range int32(3) {
			wg.Add(1)
			r := &kgo.Record{Topic: "retry", Partition: p, Value: fmt.Appendf(nil, "p%d-%05d-%s", p, i, pad)}
			cl.Produce(ctx, r, func(r *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					t.Errorf("producing %s: %v", r.Value, err)
					return
				}
				mu.Lock()
				acked[r.Partition] = append(acked[r.Partition], r.Offset)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	if got := px.drops(); got != int64(len(lost)) {
		t.Fatalf("%d answers were lost, want %d", got, len(lost))
	}
	t.Logf("%d Produce answers, %d lost", px.answers(0), px.drops())
	for p := range int32(3) {
		if end := tb.partition("retry", p).Log.EndOffset(); end != n {
			t.Errorf("partition %d ends at %d, want %d: a retry was written twice", p, end, n)
		}
		for i, v := range tb.consumeValues(t, "retry", p, n) {
			if want := fmt.Sprintf("p%d-%05d-%s", p, i, pad); v != want {
				t.Fatalf("partition %d offset %d: %q, want %q", p, i, v, want)
			}
		}
		if want := offsetsUpTo(n); !slices.Equal(acked[p], want) {
			t.Errorf("partition %d: acknowledged offsets %v, want 0..%d in order", p, acked[p], n-1)
		}
	}
}

func offsetsUpTo(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}

// A Produce answer is lost and the broker restarts before the client's
// retry reaches it: the producer state it reloads recognises the retry,
// which is answered with the original offsets and not written again.
func TestIdempotentRetryAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	px, tb, mod := lostProduceSetup(t, dir, func(n int) bool { return n == 2 }, true)
	tb.createTopic(t, "restart", 1)
	cl := idempotentClient(t, px.addr())
	produceSync(t, cl, "restart", 0, "a0", "a1", "a2")

	rs := []*kgo.Record{
		{Topic: "restart", Partition: 0, Value: []byte("b0")},
		{Topic: "restart", Partition: 0, Value: []byte("b1")},
	}
	done := make(chan error, 1)
	go func() { done <- cl.ProduceSync(ctxTimeout(t, 30*time.Second), rs...).FirstErr() }()
	px.waitDropped(t, 10*time.Second)
	// The broker wrote the batch; the client has not heard. Restart the
	// broker on the same data before letting the client back in.
	end := tb.partition("restart", 0).Log.EndOffset()
	tb.stop(t)
	tb = startBroker(t, dir, mod)
	px.setTarget(tb.addr)
	px.release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the retried produce did not finish")
	}
	if got := tb.partition("restart", 0).Log.EndOffset(); got != end {
		t.Fatalf("after the retry the log ends at %d, before the restart at %d: the retry was written again", got, end)
	}
	if end != 5 {
		t.Fatalf("the lost produce ended the log at %d, want 5", end)
	}
	for i, r := range rs {
		if r.Offset != int64(3+i) {
			t.Errorf("record %q acknowledged at offset %d, want %d", r.Value, r.Offset, 3+i)
		}
	}
	if got, want := tb.consumeValues(t, "restart", 0, 5), []string{"a0", "a1", "a2", "b0", "b1"}; !slices.Equal(got, want) {
		t.Errorf("consumed %q, want %q", got, want)
	}
}
