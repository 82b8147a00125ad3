package zk

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/sluice-io/sluice/coordinator/zk/zktest"
)

// zkServer is the package's ZooKeeper, started by TestMain; nil when
// ZooKeeper is not installed (then tests that need it fail under CI and
// are skipped elsewhere). zkStartErr says why.
var (
	zkServer   *zktest.Server
	zkStartErr error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-zk-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	zkServer, zkStartErr = zktest.Start(dir, zktest.Options{})
	code := m.Run()
	if zkServer != nil {
		zkServer.Stop()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// zkServerAddr is the package ZooKeeper's address (the test fails or is
// skipped without one, as connect).
func zkServerAddr(t *testing.T) string {
	t.Helper()
	requireZK(t)
	return zkServer.Addr
}

func requireZK(t *testing.T) {
	t.Helper()
	if zkServer == nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("ZooKeeper: %v", zkStartErr)
		}
		t.Skipf("ZooKeeper: %v", zkStartErr)
	}
}

// connect opens a client under a chroot of its own (shared by the test's
// other clients when given one), closed at cleanup.
func connect(t *testing.T, chroot string) *Client {
	t.Helper()
	requireZK(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Connect(ctx, zkServer.Addr+chroot, Options{
		SessionTimeout: 2 * time.Second,
		Logger:         quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
