package broker

// Helpers shared by the protocol tests: a raw Kafka connection that sends
// kmsg requests at a version the test chooses (kgo always negotiates the
// highest), record batches built by hand, and a check that a broker still
// serves a well-behaved client after some misbehaviour.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
)

// rawConn is a TCP connection to the broker on which the test writes frames
// by hand.
type rawConn struct {
	t    testing.TB
	nc   net.Conn
	corr int32
	fmt  *kmsg.RequestFormatter
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw-test"))}
}

// write writes bytes as they are.
func (rc *rawConn) write(b []byte) {
	rc.t.Helper()
	rc.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := rc.nc.Write(b); err != nil {
		rc.t.Fatalf("write: %v", err)
	}
}

// writeMayReset writes bytes that the broker may refuse to read: a reset
// or broken pipe is not an error.
func (rc *rawConn) writeMayReset(b []byte) {
	rc.t.Helper()
	rc.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := rc.nc.Write(b); err != nil && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
		rc.t.Fatalf("write: %v", err)
	}
}

// send writes req, at the version set on it, and returns its correlation id.
func (rc *rawConn) send(req kmsg.Request) int32 {
	rc.t.Helper()
	rc.corr++
	rc.write(rc.fmt.AppendRequest(nil, req, rc.corr))
	return rc.corr
}

// readFrame reads one response frame (without its size prefix).
func (rc *rawConn) readFrame(timeout time.Duration) ([]byte, error) {
	rc.nc.SetReadDeadline(time.Now().Add(timeout))
	var sz [4]byte
	if _, err := io.ReadFull(rc.nc, sz[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(sz[:])
	if n > 64<<20 {
		return nil, fmt.Errorf("response frame of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(rc.nc, b); err != nil {
		return nil, err
	}
	return b, nil
}

// readResponse reads the response to the request with correlation id corr
// into resp, whose version must be set.
func (rc *rawConn) readResponse(corr int32, resp kmsg.Response, timeout time.Duration) {
	rc.t.Helper()
	frame, err := rc.readFrame(timeout)
	if err != nil {
		rc.t.Fatalf("reading %s response: %v", kmsg.NameForKey(resp.Key()), err)
	}
	if err := decodeResponse(frame, corr, resp); err != nil {
		rc.t.Fatal(err)
	}
}

// decodeResponse decodes a response frame (without its size prefix).
func decodeResponse(frame []byte, corr int32, resp kmsg.Response) error {
	if len(frame) < 4 {
		return fmt.Errorf("response frame of %d bytes", len(frame))
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
		return fmt.Errorf("response correlation id %d, want %d", got, corr)
	}
	body := frame[4:]
	if resp.IsFlexible() && resp.Key() != 18 {
		if len(body) == 0 || body[0] != 0 {
			return fmt.Errorf("%s response header: tagged fields % x, want none", kmsg.NameForKey(resp.Key()), body[:min(len(body), 1)])
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		return fmt.Errorf("decoding %s v%d response: %v", kmsg.NameForKey(resp.Key()), resp.GetVersion(), err)
	}
	return nil
}

// roundTrip sends req at version v and returns its response.
func (rc *rawConn) roundTrip(req kmsg.Request, v int16) kmsg.Response {
	rc.t.Helper()
	req.SetVersion(v)
	corr := rc.send(req)
	resp := req.ResponseKind()
	resp.SetVersion(v)
	rc.readResponse(corr, resp, 10*time.Second)
	return resp
}

// expectClosed checks that the broker closes the connection (a read returns
// EOF or a reset) within a few seconds, without sending anything first.
func (rc *rawConn) expectClosed(what string) {
	rc.t.Helper()
	rc.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var buf [1]byte
	n, err := rc.nc.Read(buf[:])
	switch {
	case n > 0:
		rc.t.Fatalf("%s: broker sent data instead of closing the connection", what)
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
	case errors.Is(err, os.ErrDeadlineExceeded):
		rc.t.Fatalf("%s: the connection was still open after 5s", what)
	default:
		rc.t.Fatalf("%s: read: %v, want EOF or a reset", what, err)
	}
}

// batch builds one uncompressed RecordBatch v2 of the given values (keys
// k0, k1, …).
func batch(values ...string) []byte {
	var bb engine.BatchBuilder
	now := time.Now().UnixMilli()
	for i, v := range values {
		bb.Add(engine.Record{Timestamp: now, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(v)})
	}
	return bb.Build()
}

// produceReq is a Produce request of one batch to one partition.
func produceReq(topic string, partition int32, acks int16, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = acks
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// produceCode sends a Produce request on rc and returns the one partition's
// error code and base offset.
func (rc *rawConn) produceCode(v int16, topic string, partition int32, records []byte) (int16, int64) {
	rc.t.Helper()
	resp := rc.roundTrip(produceReq(topic, partition, -1, records), v).(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		rc.t.Fatalf("produce response has %d topics, want 1 with 1 partition", len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	return p.ErrorCode, p.BaseOffset
}

// wantCode fails unless code is want (nil: no error).
func wantCode(t testing.TB, what string, code int16, want *kerr.Error) {
	t.Helper()
	var w int16
	if want != nil {
		w = want.Code
	}
	if code != w {
		t.Errorf("%s: error %v, want %v", what, kerr.ErrorForCode(code), want)
	}
}

// createTopic creates a topic through kadm and returns its ID.
func (tb *testBroker) createTopic(t testing.TB, name string, partitions int32) [16]byte {
	t.Helper()
	ctx := ctxTimeout(t, 10*time.Second)
	resp, err := tb.admin(t).CreateTopic(ctx, partitions, 1, nil, name)
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	return resp.ID
}

// produceSync produces values to topic/partition with kgo and waits for
// every acknowledgement.
func produceSync(t testing.TB, cl *kgo.Client, topic string, partition int32, values ...string) {
	t.Helper()
	ctx := ctxTimeout(t, 10*time.Second)
	rs := make([]*kgo.Record, len(values))
	for i, v := range values {
		rs[i] = &kgo.Record{Topic: topic, Partition: partition, Value: []byte(v)}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}

// consumeValues reads topic/partition from offset 0 with a fresh client
// until it has n records, and returns their values in offset order,
// checking the offsets are 0..n-1.
func (tb *testBroker) consumeValues(t testing.TB, topic string, partition int32, n int) []string {
	t.Helper()
	var out []string
	for _, r := range tb.consumeRecords(t, topic, partition, n) {
		out = append(out, string(r.Value))
	}
	return out
}

// consumeRecords is consumeValues returning the records.
func (tb *testBroker) consumeRecords(t testing.TB, topic string, partition int32, n int) []*kgo.Record {
	t.Helper()
	ctx := ctxTimeout(t, 10*time.Second)
	cl := tb.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(0)}}))
	defer cl.Close()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consuming %s-%d: got %d records of %d: %v", topic, partition, len(out), n, ctx.Err())
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("consuming %s-%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(len(out)) {
				t.Fatalf("consuming %s-%d: record at offset %d, want %d", topic, partition, r.Offset, len(out))
			}
			out = append(out, r)
		})
	}
	if len(out) != n {
		t.Fatalf("consuming %s-%d: %d records, want %d", topic, partition, len(out), n)
	}
	return out
}

// ledger is a topic of acknowledged records that a test checks are never
// lost, and a way to check the broker still serves well-behaved clients.
type ledger struct {
	tb     *testBroker
	topic  string
	values []string
}

func newLedger(t testing.TB, tb *testBroker, topic string) *ledger {
	t.Helper()
	tb.createTopic(t, topic, 1)
	l := &ledger{tb: tb, topic: topic}
	l.add(t, "before")
	return l
}

// add produces values (tagged with what) on a new client and records them
// as acknowledged.
func (l *ledger) add(t testing.TB, what string) {
	t.Helper()
	cl := l.tb.client(t)
	defer cl.Close()
	vs := []string{what + "-1", what + "-2", what + "-3"}
	produceSync(t, cl, l.topic, 0, vs...)
	l.values = append(l.values, vs...)
}

// check produces a few more records on a new connection and consumes the
// whole topic back: every acknowledged record, in order.
func (l *ledger) check(t testing.TB, after string) {
	t.Helper()
	l.add(t, "after-"+after)
	got := l.tb.consumeValues(t, l.topic, 0, len(l.values))
	for i := range l.values {
		if got[i] != l.values[i] {
			t.Fatalf("after %s: record %d is %q, want %q", after, i, got[i], l.values[i])
		}
	}
}
