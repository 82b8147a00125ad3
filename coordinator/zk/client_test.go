package zk

import (
	"context"
	"errors"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/sluice-io/sluice/coordinator/zk/zktest"
)

func TestParseConnect(t *testing.T) {
	for _, c := range []struct {
		in      string
		servers []string
		chroot  string
		bad     bool
	}{
		{in: "localhost:2181", servers: []string{"localhost:2181"}},
		{in: "a:1,b:2/kafka", servers: []string{"a:1", "b:2"}, chroot: "/kafka"},
		{in: "a:1, b:2/k/x", servers: []string{"a:1", "b:2"}, chroot: "/k/x"},
		{in: "a:1/", servers: []string{"a:1"}},
		{in: "a:1/k/", bad: true},
		{in: "a:1//k", bad: true},
		{in: "/k", bad: true},
		{in: "", bad: true},
	} {
		servers, chroot, err := ParseConnect(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("%q: accepted", c.in)
			}
			continue
		}
		if err != nil || chroot != c.chroot || len(servers) != len(c.servers) {
			t.Errorf("%q: %v %q %v", c.in, servers, chroot, err)
			continue
		}
		for i := range servers {
			if servers[i] != c.servers[i] {
				t.Errorf("%q: servers %v", c.in, servers)
			}
		}
	}
}

func registration(id int32, port int32) BrokerRegistration {
	return BrokerRegistration{ID: id, JMXPort: NoJMXPort, Timestamp: time.Now().UnixMilli(),
		Endpoints: []Endpoint{{Listener: "PLAINTEXT", SecurityProtocol: Plaintext, Host: "127.0.0.1", Port: port}}}
}

// A broker registers under the chroot (created by Connect) with the
// persistent paths Kafka creates; a second session with the same id waits
// for the first registration to go and gets a higher broker epoch; the
// registration is listed with its payload.
func TestRegister(t *testing.T) {
	chroot := zktest.Chroot()
	a := connect(t, chroot)
	if err := a.EnsurePersistentPaths(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e1, err := a.Register(ctx, registration(1, 9092))
	if err != nil {
		t.Fatal(err)
	}
	if again, err := a.Register(ctx, registration(1, 9092)); err != nil || again != e1 {
		t.Fatalf("registering again in the same session: epoch %d, %v; want %d", again, err, e1)
	}

	b := connect(t, chroot)
	done := make(chan error, 1)
	var e2 int64
	go func() {
		var err error
		e2, err = b.Register(ctx, registration(1, 9093))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a second session registered broker 1 while the first held it: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	a.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if e2 <= e1 {
		t.Fatalf("the new registration's epoch %d is not above the old %d", e2, e1)
	}
	brokers, err := b.Brokers()
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := brokers[1]; !ok || r.Epoch != e2 || r.Endpoints[0].Port != 9093 {
		t.Fatalf("brokers: %+v", brokers)
	}

	// A registration is held until the context ends.
	c := connect(t, chroot)
	short, cancelShort := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancelShort()
	if _, err := c.Register(short, registration(1, 9094)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("registering a held id: %v", err)
	}
}

// One controller at a time, each elected at a higher epoch; a deposed
// controller's writes fail on the epoch check, however late they come.
func TestElection(t *testing.T) {
	chroot := zktest.Chroot()
	a, b := connect(t, chroot), connect(t, chroot)
	if err := a.EnsurePersistentPaths(); err != nil {
		t.Fatal(err)
	}
	ea, err := a.Elect(1)
	if err != nil || ea.Epoch != 1 {
		t.Fatalf("first election: %+v, %v", ea, err)
	}
	if _, err := b.Elect(2); !errors.Is(err, ErrControllerMoved) {
		t.Fatalf("a second broker elected while the first holds /controller: %v", err)
	}
	ctl, ok, changed, err := b.WatchController()
	if err != nil || !ok || ctl.BrokerID != 1 {
		t.Fatalf("controller: %+v %v %v", ctl, ok, err)
	}
	// The controller writes, fenced by its epoch.
	if _, err := a.Multi(ea, &gozk.CreateRequest{Path: "/admin/by-controller-1", Acl: openACL}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event when the controller's session ended")
	}
	eb, err := b.Elect(2)
	if err != nil || eb.Epoch != 2 {
		t.Fatalf("second election: %+v, %v", eb, err)
	}
	// The deposed controller's election, used from any session, is stale.
	late := connect(t, chroot)
	if _, err := late.Multi(ea, &gozk.CreateRequest{Path: "/admin/late", Acl: openACL}); !errors.Is(err, ErrControllerMoved) {
		t.Fatalf("a deposed controller's write: %v", err)
	}
	if ok, _, _ := late.conn.Exists(late.abs("/admin/late")); ok {
		t.Fatal("the deposed controller's write was applied")
	}
	if _, err := b.Multi(eb, &gozk.CreateRequest{Path: "/admin/by-controller-2", Acl: openACL}); err != nil {
		t.Fatal(err)
	}
	data, _, err := b.Get(ControllerEpochPath)
	if e, derr := DecodeControllerEpoch(data); err != nil || derr != nil || e != 2 {
		t.Fatalf("%s: %q %v %v", ControllerEpochPath, data, err, derr)
	}
}

// BrokerAddress reads a broker's registration for the endpoint of a
// listener (the first one for ""), and names a broker or listener it
// lacks.
func TestBrokerAddress(t *testing.T) {
	chroot := zktest.Chroot()
	c := connect(t, chroot)
	if err := c.EnsurePersistentPaths(); err != nil {
		t.Fatal(err)
	}
	r := registration(2, 9092)
	r.Endpoints = append(r.Endpoints, Endpoint{Listener: "CONTROL", SecurityProtocol: Plaintext, Host: "127.0.0.2", Port: 9093})
	if _, err := c.Register(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ listener, want string }{{"", "127.0.0.1:9092"}, {"PLAINTEXT", "127.0.0.1:9092"}, {"CONTROL", "127.0.0.2:9093"}} {
		if got, err := c.BrokerAddress(2, tc.listener); err != nil || got != tc.want {
			t.Errorf("listener %q: %q, %v; want %q", tc.listener, got, err, tc.want)
		}
	}
	if _, err := c.BrokerAddress(2, "INTERNAL"); !errors.Is(err, ErrBrokerNotRegistered) {
		t.Errorf("a listener the broker lacks: %v", err)
	}
	if _, err := c.BrokerAddress(9, ""); !errors.Is(err, ErrBrokerNotRegistered) {
		t.Errorf("an unregistered broker: %v", err)
	}
}
