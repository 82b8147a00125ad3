package broker

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testBroker is a broker serving on a random loopback port.
type testBroker struct {
	*Broker
	addr string
	dir  string
	done chan error
}

func startBroker(t testing.TB, dir string, mod func(*Config)) *testBroker {
	t.Helper()
	tb := serveBroker(t, dir, mod)
	t.Cleanup(func() { tb.stop(t) })
	return tb
}

// serveBroker is startBroker without the stop at cleanup: the caller stops
// it (and nothing keeps it reachable after).
func serveBroker(t testing.TB, dir string, mod func(*Config)) *testBroker {
	t.Helper()
	cfg := Config{DataDir: dir, Listen: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if testing.Verbose() {
		cfg.Logger = slog.Default()
	}
	if mod != nil {
		mod(&cfg)
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatalf("broker.New: %v", err)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		t.Fatal(err)
	}
	tb := &testBroker{Broker: b, addr: ln.Addr().String(), dir: dir, done: make(chan error, 1)}
	go func() { tb.done <- b.Serve(ln) }()
	return tb
}

// stop closes the broker (idempotent) and waits for Serve to return.
func (tb *testBroker) stop(t testing.TB) {
	t.Helper()
	if err := tb.Close(); err != nil {
		t.Errorf("broker.Close: %v", err)
	}
	select {
	case <-tb.done:
		tb.done <- nil // later stops return at once
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after Close")
	}
}

// client returns a franz-go client for the broker, closed at cleanup.
func (tb *testBroker) client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl := tb.ownClient(t, opts...)
	t.Cleanup(cl.Close)
	return cl
}

// ownClient is client without the close at cleanup: the caller closes it
// (and nothing keeps it reachable after).
func (tb *testBroker) ownClient(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{kgo.SeedBrokers(tb.addr), kgo.DisableIdempotentWrite(), kgo.ProducerLinger(0)}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func (tb *testBroker) admin(t testing.TB) *kadm.Client {
	return kadm.NewClient(tb.client(t))
}

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
