package bench

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sluice-io/sluice/broker"
	"github.com/sluice-io/sluice/config"
)

// A target is a broker the benchmarks run against, started in-process on
// loopback. Every goroutine it starts carries the pprof label broker=<name>,
// so a CPU profile of a benchmark separates the broker from the client:
//
//	go tool pprof -tagfocus broker=sluice -top bench.test cpu.out
type target struct {
	name  string
	fetch bool // serves Fetch: can be consumed from
	start func(tb testing.TB) (addr string, stop func(), err error)
}

var allTargets = []target{
	{name: "sluice", fetch: true, start: startSluice},
	{name: "kfake", fetch: true, start: startKfake},
	{name: "null", fetch: false, start: startNull},
}

// nullPartitions is the partition count the null broker reports for every
// topic; the benchmark that starts it sets it.
var nullPartitions int32 = 8

// labeled runs fn with the pprof label broker=name; goroutines fn starts
// inherit it.
func labeled(name string, fn func()) {
	pprof.Do(context.Background(), pprof.Labels("broker", name), func(context.Context) { fn() })
}

// startSluice starts a sluice broker with its data in a fresh directory
// under tb.TempDir(), removed at stop. The configuration is the default:
// no forced flush.
func startSluice(tb testing.TB) (string, func(), error) { return startSluiceCfg(tb, nil) }

// startSluiceCfg is startSluice with the configuration adjusted by mod.
func startSluiceCfg(tb testing.TB, mod func(*config.Config)) (string, func(), error) {
	dir, err := os.MkdirTemp(tb.TempDir(), "sluice")
	if err != nil {
		return "", nil, err
	}
	s, err := serveSluice("sluice", dir, mod)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	stop := func() {
		if err := s.close(); err != nil {
			tb.Errorf("sluice broker close: %v", err)
		}
		// Removing the data and writing back what is dirty now, outside
		// every measured window, keeps this run's disk work out of the
		// next run's (of whichever broker).
		os.RemoveAll(dir)
		syscall.Sync()
	}
	return s.addr, stop, nil
}

// inProcess is a sluice broker serving in this process.
type inProcess struct {
	b    *broker.Broker
	addr string
	done chan error // Serve's result
}

// serveSluice starts a sluice broker on a free loopback port with its data
// in dir, its goroutines labeled broker=label; mod, if set, adjusts the
// configuration (the default otherwise, logs discarded).
func serveSluice(label, dir string, mod func(*config.Config)) (*inProcess, error) {
	s := &inProcess{done: make(chan error, 1)}
	var err error
	labeled(label, func() {
		var ln net.Listener
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return
		}
		cfg := config.Config{DataDir: dir, Listen: ln.Addr().String(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if mod != nil {
			mod(&cfg)
		}
		if s.b, err = broker.New(cfg); err != nil {
			ln.Close()
			return
		}
		s.addr = ln.Addr().String()
		go func() { s.done <- s.b.Serve(ln) }()
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// close closes the broker and waits for Serve to return.
func (s *inProcess) close() error {
	err := s.b.Close()
	<-s.done
	return err
}

// startKfake starts franz-go's in-memory fake cluster with one broker.
func startKfake(testing.TB) (string, func(), error) {
	var c *kfake.Cluster
	var err error
	labeled("kfake", func() { c, err = kfake.NewCluster(kfake.NumBrokers(1)) })
	if err != nil {
		return "", nil, err
	}
	return c.ListenAddrs()[0], c.Close, nil
}

func startNull(testing.TB) (string, func(), error) {
	var nb *nullBroker
	var err error
	labeled("null", func() { nb, err = startNullBroker(nullPartitions) })
	if err != nil {
		return "", nil, err
	}
	return nb.Addr(), nb.Close, nil
}

// selectTargets returns the targets named in the comma-separated list,
// those that serve Fetch only when fetch is set.
func selectTargets(tb testing.TB, list string, fetch bool) []target {
	var out []target
	for _, name := range strings.Split(list, ",") {
		found := false
		for _, t := range allTargets {
			if t.name == strings.TrimSpace(name) {
				found = true
				if t.fetch || !fetch {
					out = append(out, t)
				}
			}
		}
		if !found {
			tb.Fatalf("unknown broker %q in -sluice.brokers (sluice, kfake, null)", name)
		}
	}
	if len(out) == 0 {
		tb.Skipf("no broker in %q serves this benchmark", list)
	}
	return out
}
