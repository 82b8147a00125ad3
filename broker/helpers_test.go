package broker

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
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

func startBroker(t testing.TB, dir string, mod func(*config.Config)) *testBroker {
	t.Helper()
	tb := serveBroker(t, dir, mod)
	t.Cleanup(func() { tb.stop(t) })
	return tb
}

// serveBroker is startBroker without the stop at cleanup: the caller stops
// it (and nothing keeps it reachable after).
func serveBroker(t testing.TB, dir string, mod func(*config.Config)) *testBroker {
	t.Helper()
	cfg := config.Config{DataDir: dir, Listen: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
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
	addr := cfg.Listen
	if len(cfg.Listeners) > 0 {
		addr = cfg.Listeners[0].Addr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	tb := &testBroker{Broker: b, addr: ln.Addr().String(), dir: dir, done: make(chan error, 1)}
	go func() { tb.done <- b.Serve(ln) }()
	return tb
}

// listenerAddr waits for the broker to bind its listeners and returns the
// address of the one named name.
func (tb *testBroker) listenerAddr(t testing.TB, name string) string {
	t.Helper()
	select {
	case <-tb.Listening():
	case err := <-tb.done:
		t.Fatalf("Serve returned before listening: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the broker did not bind its listeners in 10s")
	}
	a := tb.ListenerAddr(name)
	if a == nil {
		t.Fatalf("no listener %s", name)
	}
	return a.String()
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
