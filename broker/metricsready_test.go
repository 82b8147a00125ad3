package broker

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator/zk"
	"github.com/sluice-io/sluice/coordinator/zk/zktest"
)

// /readyz of a broker joining a cluster: not ready while its id is still
// registered by another ZooKeeper session (a previous incarnation's, which
// it waits out), nor once registered while the controller cannot reach it
// with UpdateMetadata (its advertised address is a cut link); ready once
// the metadata arrives.
func TestReadyzInCluster(t *testing.T) {
	c := startCluster(t, 1, nil)
	ctx := ctxTimeout(t, 60*time.Second)

	// Broker 1 listens on addr and advertises the link to it, cut for now.
	addr := freeLoopbackAddr(t)
	link, err := zktest.StartLinkProxy(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
	link.SetCut(true)
	host, port, _ := net.SplitHostPort(link.Addr())
	portNum, _ := strconv.Atoi(port)

	// Another session holds /brokers/ids/1.
	holder, err := zk.Connect(ctx, c.zkAddr+c.chroot, zk.Options{SessionTimeout: 4 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.Register(ctx, zk.BrokerRegistration{ID: 1, JMXPort: zk.NoJMXPort,
		Endpoints: []zk.Endpoint{{Listener: zk.Plaintext, SecurityProtocol: zk.Plaintext, Host: host, Port: int32(portNum)}}}); err != nil {
		t.Fatal(err)
	}

	c.mu.Lock()
	c.addrs[1] = addr
	c.mu.Unlock()
	c.mod = func(cfg *config.Config) {
		if cfg.ID == 1 {
			cfg.Advertise = link.Addr()
			cfg.Observability.MetricsListen = "127.0.0.1:0"
		}
	}
	maddr := c.start(1).MetricsAddr().String()
	waitReadyz := func(wantCode int, want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, why, err := readyz(maddr)
			if err == nil && code == wantCode && why == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("/readyz: %d %q %v, want %d %q", code, why, err, wantCode, want)
			}
			time.Sleep(5 * time.Millisecond) // polling an endpoint, with a deadline
		}
	}
	waitReadyz(http.StatusServiceUnavailable, "not registered in ZooKeeper yet")
	holder.Close()
	waitReadyz(http.StatusServiceUnavailable, "no metadata from the current controller yet")
	link.SetCut(false)
	waitReadyz(http.StatusOK, "ready")
	if md := metadataOf(t, c.broker(1)); md.ControllerID != 0 || len(md.Brokers) != 2 {
		t.Fatalf("broker 1 names controller %d and %d brokers, want 0 and 2", md.ControllerID, len(md.Brokers))
	}
}
