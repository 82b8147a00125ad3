package zk

import (
	"context"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/sluice-io/sluice/coordinator/zk/zktest"
)

// startLinkProxy starts a zktest.LinkProxy to target, closed at cleanup.
func startLinkProxy(t *testing.T, target string) *zktest.LinkProxy {
	t.Helper()
	p, err := zktest.StartLinkProxy(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// A session whose link is cut past its timeout expires: Expired fires
// once the client reaches ZooKeeper again, the registration is gone, and
// registering again gives a higher broker epoch.
func TestSessionExpiry(t *testing.T) {
	chroot := zktest.Chroot()
	watcher := connect(t, chroot)
	if err := watcher.EnsurePersistentPaths(); err != nil {
		t.Fatal(err)
	}
	proxy := startLinkProxy(t, zkServerAddr(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Connect(ctx, proxy.Addr()+chroot, Options{SessionTimeout: time.Second, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	epoch, err := c.Register(ctx, registration(3, 9092))
	if err != nil {
		t.Fatal(err)
	}
	expired := c.Expired()
	ok, _, gone, err := watcher.conn.ExistsW(watcher.abs(BrokerPath(3)))
	if err != nil || !ok {
		t.Fatalf("registration: %v %v", ok, err)
	}
	proxy.SetCut(true)
	// The server drops the registration when the session expires.
	select {
	case ev := <-gone:
		if ev.Type != gozk.EventNodeDeleted {
			t.Fatalf("watch event %+v", ev)
		}
	case <-ctx.Done():
		t.Fatal("the registration outlived its session")
	}
	proxy.SetCut(false)
	select {
	case <-expired:
	case <-ctx.Done():
		t.Fatal("the client never learned its session expired")
	}
	if err := c.waitSession(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := c.Register(ctx, registration(3, 9092))
	if err != nil {
		t.Fatal(err)
	}
	if again <= epoch {
		t.Fatalf("re-registered at epoch %d, not above %d", again, epoch)
	}
}
