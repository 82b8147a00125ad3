package zk

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/sluice-io/sluice/coordinator/zk/zktest"
)

// linkProxy is a TCP proxy between one client and ZooKeeper whose link a
// test can cut (every connection closed, new ones refused) and restore.
type linkProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]struct{}
}

func startLinkProxy(t *testing.T, target string) *linkProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &linkProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.setCut(true) })
	return p
}

func (p *linkProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[s] = struct{}{}, struct{}{}
		p.mu.Unlock()
		go func() { io.Copy(s, c); s.Close() }()
		go func() { io.Copy(c, s); c.Close() }()
	}
}

func (p *linkProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
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
	c, err := Connect(ctx, proxy.ln.Addr().String()+chroot, Options{SessionTimeout: time.Second, Logger: quietLogger()})
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
	proxy.setCut(true)
	// The server drops the registration when the session expires.
	select {
	case ev := <-gone:
		if ev.Type != gozk.EventNodeDeleted {
			t.Fatalf("watch event %+v", ev)
		}
	case <-ctx.Done():
		t.Fatal("the registration outlived its session")
	}
	proxy.setCut(false)
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
