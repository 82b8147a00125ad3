package interbroker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/wire"
)

// fakeBroker is a listener on loopback that reads control requests with
// the broker's own framing code and, unless silent, answers each with its
// response kind carrying STALE_CONTROLLER_EPOCH (so a decoded body is told
// from a default one).
type fakeBroker struct {
	ln       net.Listener
	silent   bool
	seen     chan seenRequest
	accepted atomic.Int32

	mu    sync.Mutex
	conns []net.Conn
}

type seenRequest struct {
	h   wire.Header
	req kmsg.Request
}

func startFakeBroker(t *testing.T, silent bool) *fakeBroker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &fakeBroker{ln: ln, silent: silent, seen: make(chan seenRequest, 16)}
	go b.accept()
	t.Cleanup(b.stop)
	return b
}

func (b *fakeBroker) accept() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.accepted.Add(1)
		b.mu.Lock()
		b.conns = append(b.conns, c)
		b.mu.Unlock()
		go b.serve(c)
	}
}

func (b *fakeBroker) serve(c net.Conn) {
	defer c.Close()
	var buf, out, recs []byte // reused: the fake allocates little per request
	for {
		frame, err := wire.ReadFrame(c, buf, wire.DefaultMaxFrame)
		if err != nil {
			return
		}
		h, req, err := wire.ParseRequest(frame)
		if err != nil {
			return
		}
		b.seen <- seenRequest{h, req}
		if b.silent {
			continue
		}
		resp := req.ResponseKind()
		code := kerr.StaleControllerEpoch.Code
		switch r := resp.(type) {
		case *kmsg.LeaderAndISRResponse:
			r.ErrorCode = code
		case *kmsg.UpdateMetadataResponse:
			r.ErrorCode = code
		case *kmsg.StopReplicaResponse:
			r.ErrorCode = code
		case *kmsg.FetchResponse:
			// Records of fetchBytes bytes, each the correlation id's low byte.
			rt := kmsg.NewFetchResponseTopic()
			rp := kmsg.NewFetchResponseTopicPartition()
			if recs == nil {
				recs = make([]byte, fetchBytes)
			}
			for i := range recs {
				recs[i] = byte(h.CorrelationID)
			}
			rp.RecordBatches = recs
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
		}
		out = wire.AppendResponse(out[:0], h.CorrelationID, resp)
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// fetchBytes is the size of the records the fake broker answers a Fetch
// with.
const fetchBytes = 64 << 10

// stop closes the listener and every connection, as a broker's process
// ending.
func (b *fakeBroker) stop() {
	b.ln.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.conns {
		c.Close()
	}
}

// next is the next request the broker read.
func (b *fakeBroker) next(t *testing.T) seenRequest {
	t.Helper()
	select {
	case s := <-b.seen:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("the broker received no request")
		return seenRequest{}
	}
}

// book is a static AddressBook: each broker's endpoints, in order (the
// listener "" asks for the first).
type book struct {
	mu    sync.Mutex
	addrs map[int32][][2]string // listener, address
}

var errUnknown = errors.New("no such broker")

func newBook() *book { return &book{addrs: map[int32][][2]string{}} }

// set gives broker id the address of b on listener.
func (k *book) set(id int32, listener string, b *fakeBroker) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, e := range k.addrs[id] {
		if e[0] == listener {
			k.addrs[id][i][1] = b.ln.Addr().String()
			return
		}
	}
	k.addrs[id] = append(k.addrs[id], [2]string{listener, b.ln.Addr().String()})
}

func (k *book) BrokerAddress(broker int32, listener string) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, e := range k.addrs[broker] {
		if listener == "" || e[0] == listener {
			return e[1], nil
		}
	}
	return "", fmt.Errorf("%w: %d on %q", errUnknown, broker, listener)
}

// register is a book with broker id at b.
func register(id int32, b *fakeBroker) *book {
	k := newBook()
	k.set(id, "PLAINTEXT", b)
	return k
}

func leaderAndISR(v int16) *kmsg.LeaderAndISRRequest {
	r := kmsg.NewPtrLeaderAndISRRequest()
	r.Version, r.ControllerID, r.ControllerEpoch, r.BrokerEpoch = v, 0, 3, 77
	return r
}

func updateMetadata(v int16) *kmsg.UpdateMetadataRequest {
	r := kmsg.NewPtrUpdateMetadataRequest()
	r.Version, r.ControllerID, r.ControllerEpoch, r.BrokerEpoch = v, 0, 3, 77
	return r
}

// errorCode is the top-level error code of a control response.
func errorCode(t *testing.T, resp kmsg.Response) int16 {
	t.Helper()
	switch r := resp.(type) {
	case *kmsg.LeaderAndISRResponse:
		return r.ErrorCode
	case *kmsg.UpdateMetadataResponse:
		return r.ErrorCode
	case *kmsg.StopReplicaResponse:
		return r.ErrorCode
	}
	t.Fatalf("response %T", resp)
	return 0
}

// Control requests round-trip over one kept connection with the
// controller's client id and increasing correlation ids, flexible (header
// v2) and not; a broker that restarts at a new port is found by the next
// request.
func TestClient(t *testing.T) {
	b := startFakeBroker(t, false)
	k := register(1, b)
	s := New(5, k, Options{})
	t.Cleanup(s.Close)
	ctx := context.Background()

	stop := kmsg.NewPtrStopReplicaRequest()
	stop.Version, stop.ControllerID, stop.ControllerEpoch = 1, 5, 3 // not flexible
	reqs := []kmsg.Request{leaderAndISR(7), updateMetadata(8), stop}
	var last int32
	for _, req := range reqs {
		resp, err := s.Send(ctx, 1, req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Key() != req.Key() || resp.GetVersion() != req.GetVersion() || errorCode(t, resp) != kerr.StaleControllerEpoch.Code {
			t.Fatalf("%s v%d: response %T v%d %+v", kmsg.NameForKey(req.Key()), req.GetVersion(), resp, resp.GetVersion(), resp)
		}
		got := b.next(t)
		if got.h.Key != req.Key() || got.h.Version != req.GetVersion() || got.h.ClientID == nil || *got.h.ClientID != "sluice-controller-5" {
			t.Fatalf("the broker read header %+v (client id %v)", got.h, got.h.ClientID)
		}
		if got.h.CorrelationID <= last {
			t.Fatalf("correlation id %d after %d", got.h.CorrelationID, last)
		}
		last = got.h.CorrelationID
	}
	if n := b.accepted.Load(); n != 1 {
		t.Fatalf("%d connections for %d requests, want one kept", n, len(reqs))
	}

	// The broker restarts at another port and registers again.
	b.stop()
	b2 := startFakeBroker(t, false)
	k.set(1, "PLAINTEXT", b2)
	resp, err := s.Send(ctx, 1, updateMetadata(8))
	if err != nil {
		t.Fatalf("the first request after the restart: %v", err)
	}
	if errorCode(t, resp) != kerr.StaleControllerEpoch.Code {
		t.Fatalf("response %+v", resp)
	}
	if got := b2.next(t); got.h.CorrelationID <= last {
		t.Fatalf("correlation id %d after %d on the new connection", got.h.CorrelationID, last)
	}
}

// The endpoint of the configured listener is dialled, not the first; the
// address book's refusal is the request's error.
func TestClientListener(t *testing.T) {
	b := startFakeBroker(t, false)
	dead := startFakeBroker(t, true)
	k := register(2, dead)
	k.set(2, "CONTROL", b)
	s := New(0, k, Options{Listener: "CONTROL", RequestTimeout: 5 * time.Second})
	t.Cleanup(s.Close)
	if _, err := s.Send(context.Background(), 2, updateMetadata(8)); err != nil {
		t.Fatal(err)
	}
	if dead.accepted.Load() != 0 {
		t.Fatal("the first endpoint was dialled")
	}
	other := New(0, k, Options{Listener: "INTERNAL"})
	t.Cleanup(other.Close)
	if _, err := other.Send(context.Background(), 2, updateMetadata(8)); !errors.Is(err, errUnknown) {
		t.Fatalf("a listener the broker lacks: %v", err)
	}
	if _, err := s.Send(context.Background(), 9, updateMetadata(8)); !errors.Is(err, errUnknown) {
		t.Fatalf("an unknown broker: %v", err)
	}
}

// sendAsync runs a Send and returns its error on a channel.
func sendAsync(ctx context.Context, s *Client, broker int32) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := s.Send(ctx, broker, leaderAndISR(7))
		done <- err
	}()
	return done
}

func wait(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: Send hung", what)
		return nil
	}
}

// A broker that does not answer fails the request at the request timeout,
// and the connection is closed (the next request dials again); a
// cancelled context ends a request at once.
func TestClientTimeouts(t *testing.T) {
	b := startFakeBroker(t, true)
	sc := register(3, b)

	s := New(0, sc, Options{RequestTimeout: 300 * time.Millisecond})
	t.Cleanup(s.Close)
	if err := wait(t, sendAsync(context.Background(), s, 3), "timeout"); !errors.Is(err, ErrRequestTimeout) {
		t.Fatalf("a silent broker: %v", err)
	}
	b.next(t)
	if err := wait(t, sendAsync(context.Background(), s, 3), "timeout again"); !errors.Is(err, ErrRequestTimeout) {
		t.Fatalf("a silent broker again: %v", err)
	}
	b.next(t)
	if n := b.accepted.Load(); n != 2 {
		t.Fatalf("%d connections for two timed-out requests, want a new one each", n)
	}

	long := New(0, sc, Options{}) // 30 s
	t.Cleanup(long.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := sendAsync(ctx, long, 3)
	b.next(t) // the request is out, its answer awaited
	cancel()
	if err := wait(t, done, "cancel"); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled request: %v", err)
	}
	if _, err := long.Send(ctx, 3, leaderAndISR(7)); !errors.Is(err, context.Canceled) {
		t.Fatalf("a request on a cancelled context: %v", err)
	}
	long.Close()
	if _, err := long.Send(context.Background(), 3, leaderAndISR(7)); !errors.Is(err, ErrClosed) {
		t.Fatalf("a request after Close: %v", err)
	}
}

// By default a response's byte fields stay as they were read after later
// requests; with ReuseResponses they alias the link's one buffer, which
// the next response to that broker overwrites, and a run of responses
// allocates far less than their size.
func TestClientReuseResponses(t *testing.T) {
	b := startFakeBroker(t, false)
	sc := register(1, b)
	records := func(s *Client) []byte {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(12)
		resp, err := s.Send(context.Background(), 1, req)
		if err != nil {
			t.Fatal(err)
		}
		b.next(t)
		return resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches
	}
	for _, reuse := range []bool{false, true} {
		s := New(0, sc, Options{ReuseResponses: reuse})
		first := records(s)
		was := first[0]
		second := records(s)
		if len(first) != fetchBytes || len(second) != fetchBytes || second[0] == was {
			t.Fatalf("reuse %v: records of %d and %d bytes, %#x then %#x", reuse, len(first), len(second), was, second[0])
		}
		if overwritten := first[0] != was; overwritten != reuse {
			t.Errorf("reuse %v: the first response's records overwritten by the second: %v", reuse, overwritten)
		}
		const n = 50
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		for range n {
			records(s)
		}
		runtime.ReadMemStats(&m1)
		perResponse := (m1.TotalAlloc - m0.TotalAlloc) / n
		if reuse && perResponse > fetchBytes/4 || !reuse && perResponse < fetchBytes {
			t.Errorf("reuse %v: %d bytes allocated per response of %d bytes of records", reuse, perResponse, fetchBytes)
		}
		s.Close()
	}
}
