package broker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// dialFrom is dialRaw from the local address src (any of 127/8 on Linux).
func dialFrom(t *testing.T, addr, src string) *rawConn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, src, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw-test"))}
}

func apiVersionsReq() *kmsg.ApiVersionsRequest {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "limits", "1.0"
	req.SetVersion(3)
	return req
}

// max.connections: at the bound the broker accepts nothing more; the
// waiting connection is served as soon as another one ends.
func TestMaxConnections(t *testing.T) {
	two := int32(2)
	tb := startBroker(t, t.TempDir(), func(c *config.Config) { c.Network.MaxConnections = &two })
	a, b := dialRaw(t, tb.addr), dialRaw(t, tb.addr)
	steadyOK(t, a)
	steadyOK(t, b)

	third := dialRaw(t, tb.addr) // connected by the kernel's backlog
	corr := third.send(apiVersionsReq())
	if _, err := third.readFrame(300 * time.Millisecond); !isTimeout(err) {
		t.Fatalf("a third connection at max.connections=2 was answered (or closed): %v", err)
	}
	a.nc.Close()
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	third.readResponse(corr, resp, 10*time.Second)
	steadyOK(t, b)
}

// max.connections.per.ip and its overrides, by address and by host name: a
// connection over its address's bound is closed at once; the others go on
// being served, and a freed slot can be taken again.
func TestMaxConnectionsPerIP(t *testing.T) {
	one := int32(1)
	tb := startBroker(t, t.TempDir(), func(c *config.Config) {
		c.Network.MaxConnectionsPerIP = &one
		c.Network.MaxConnectionsPerIPOverrides = map[string]int32{"localhost": 2, "127.0.0.2": 3}
	})
	for _, c := range []struct {
		src   string
		bound int
	}{{"127.0.0.1", 2}, {"127.0.0.2", 3}, {"127.0.0.3", 1}} {
		var open []*rawConn
		for range c.bound {
			rc := dialFrom(t, tb.addr, c.src)
			steadyOK(t, rc)
			open = append(open, rc)
		}
		over := dialFrom(t, tb.addr, c.src)
		over.writeMayReset(over.fmt.AppendRequest(nil, apiVersionsReq(), 1))
		over.expectClosed("connection over max.connections.per.ip from " + c.src)
		steadyOK(t, open[len(open)-1])

		// Once the broker has seen one close, a new connection gets its slot.
		open[0].nc.Close()
		deadline := time.Now().Add(10 * time.Second)
		for {
			rc := dialFrom(t, tb.addr, c.src)
			rc.writeMayReset(rc.fmt.AppendRequest(nil, apiVersionsReq(), 1))
			if _, err := rc.readFrame(5 * time.Second); err == nil {
				break
			}
			rc.nc.Close()
			if time.Now().After(deadline) {
				t.Fatalf("%s: no connection served after one of %d closed", c.src, c.bound)
			}
		}
	}
}

// max.connections.per.ip=0 admits only the overrides' addresses, and is
// refused without overrides, as in Kafka.
func TestMaxConnectionsPerIPZero(t *testing.T) {
	zero := int32(0)
	if _, err := New(config.Config{DataDir: t.TempDir(), Network: config.NetworkConfig{MaxConnectionsPerIP: &zero}}); err == nil ||
		!strings.Contains(err.Error(), "max.connections.per.ip.overrides") {
		t.Errorf("max.connections.per.ip=0 without overrides: %v", err)
	}
	tb := startBroker(t, t.TempDir(), func(c *config.Config) {
		c.Network.MaxConnectionsPerIP = &zero
		c.Network.MaxConnectionsPerIPOverrides = map[string]int32{"127.0.0.2": 1}
	})
	steadyOK(t, dialFrom(t, tb.addr, "127.0.0.2"))
	rc := dialFrom(t, tb.addr, "127.0.0.1")
	rc.writeMayReset(rc.fmt.AppendRequest(nil, apiVersionsReq(), 1))
	rc.expectClosed("a connection from an address without an override")
}

// connections.max.idle.ms: a connection that sends nothing after its last
// response is closed once the bound has passed; a long poll longer than
// the bound is not idleness.
func TestIdleConnectionsClosed(t *testing.T) {
	const idle = 400 * time.Millisecond
	tb := startBroker(t, t.TempDir(), func(c *config.Config) { c.Network.ConnectionsMaxIdle = idle })
	tb.createTopic(t, "quiet", 1)

	rc := dialRaw(t, tb.addr)
	asked := time.Now() // before the broker's response
	steadyOK(t, rc)
	rc.expectClosed("idle connection")
	if d := time.Since(asked); d < idle {
		t.Errorf("closed %v after its last request, before connections.max.idle.ms (%v) could have passed", d, idle)
	}

	poll := dialRaw(t, tb.addr)
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, int32(3*idle/time.Millisecond), 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "quiet"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	start := time.Now()
	resp := poll.roundTrip(req, 11).(*kmsg.FetchResponse)
	if d := time.Since(start); d < 3*idle || len(resp.Topics) != 1 {
		t.Errorf("long poll answered after %v (%d topics), want its full wait of %v", d, len(resp.Topics), 3*idle)
	}
	poll.expectClosed("idle connection after a long poll")
}

// socket.request.receive.timeout.ms: a request that does not arrive whole
// in time closes its connection, whether it is read in the connection's
// buffer or into its region; one that arrives in pieces within the bound is
// served.
func TestRequestReceiveBound(t *testing.T) {
	const bound = 500 * time.Millisecond
	tb := startBroker(t, t.TempDir(), func(c *config.Config) {
		c.Network.RequestReceiveTimeout = bound
		c.MessageMaxBytes = 8 << 20
	})
	tb.createTopic(t, "big", 1)
	for _, declared := range []uint32{1000, 300 << 10, 90 << 20} {
		rc := dialRaw(t, tb.addr)
		start := time.Now()
		rc.write(append(binary.BigEndian.AppendUint32(nil, declared), header(18, 3, true)...))
		rc.expectClosed("an incomplete request")
		if d := time.Since(start); d < bound {
			t.Errorf("a request of %d bytes cut short: closed after %v, before the bound (%v)", declared, d, bound)
		}
	}

	// Big requests in pieces, twice on one connection (its region reused):
	// stored as sent.
	rc := dialRaw(t, tb.addr)
	var want []string
	for i, size := range []int{3 << 20, 1<<20 + 12345} {
		value := strings.Repeat(string(rune('a'+i)), size)
		want = append(want, value)
		req := produceReq("big", 0, -1, batch(value))
		req.SetVersion(9)
		rc.corr++
		b := rc.fmt.AppendRequest(nil, req, rc.corr)
		rc.write(b[:len(b)/3])
		rc.write(b[len(b)/3:])
		resp := kmsg.NewPtrProduceResponse()
		resp.SetVersion(9)
		rc.readResponse(rc.corr, resp, 10*time.Second)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("produce of %d bytes: error %d", size, code)
		}
	}
	cl := tb.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"big": {0: kgo.NewOffset().AtStart()}}), kgo.FetchMaxBytes(16<<20), kgo.FetchMaxPartitionBytes(16<<20))
	ctx := ctxTimeout(t, 20*time.Second)
	var got []string
	for len(got) < len(want) {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for i := range want {
		if !bytes.Equal([]byte(got[i]), []byte(want[i])) {
			t.Errorf("record %d: %d bytes back, want %d as sent", i, len(got[i]), len(want[i]))
		}
	}
}

// The keys parse from server.properties with Kafka's names and checks.
func TestNetworkConfigKeys(t *testing.T) {
	var c config.Config
	unknown, err := c.Apply(map[string]string{
		"queued.max.request.bytes":          "268435456",
		"socket.request.receive.timeout.ms": "5000",
		"max.connections":                   "1000",
		"max.connections.per.ip":            "10",
		"max.connections.per.ip.overrides":  "localhost:20, 10.0.0.1 : 5,::1:7",
		"connections.max.idle.ms":           "-1",
	})
	if err != nil || len(unknown) != 0 {
		t.Fatalf("Apply: %v, unknown %v", err, unknown)
	}
	n := c.WithDefaults().Network
	if n.QueuedMaxRequestBytes != 256<<20 || n.RequestReceiveTimeout != 5*time.Second || *n.MaxConnections != 1000 ||
		*n.MaxConnectionsPerIP != 10 || n.ConnectionsMaxIdle >= 0 ||
		n.MaxConnectionsPerIPOverrides["localhost"] != 20 || n.MaxConnectionsPerIPOverrides["10.0.0.1"] != 5 || n.MaxConnectionsPerIPOverrides["::1"] != 7 {
		t.Errorf("applied %+v", n)
	}
	var d config.Config
	if dn := d.WithDefaults().Network; dn.QueuedMaxRequestBytes != config.DefaultRequestPool(100<<20) ||
		dn.RequestReceiveTimeout != 30*time.Second || dn.ConnectionsMaxIdle != 10*time.Minute {
		t.Errorf("defaults %+v", dn)
	}
	var u config.Config
	if _, err := u.Apply(map[string]string{"queued.max.request.bytes": "-1"}); err != nil || u.Network.QueuedMaxRequestBytes >= 0 {
		t.Errorf("queued.max.request.bytes=-1 (no bound): %v, %d", err, u.Network.QueuedMaxRequestBytes)
	}
	for _, bad := range []map[string]string{
		{"max.connections": "-1"},
		{"max.connections.per.ip": "x"},
		{"max.connections.per.ip.overrides": "host"},
		{"max.connections.per.ip.overrides": "host:-2"},
		{"connections.max.idle.ms": "ten"},
	} {
		var c config.Config
		if _, err := c.Apply(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	small := config.Config{DataDir: t.TempDir(), Network: config.NetworkConfig{QueuedMaxRequestBytes: 64 << 20}}
	if _, err := New(small); err == nil || !strings.Contains(err.Error(), "queued.max.request.bytes") {
		t.Errorf("a pool smaller than socket.request.max.bytes: %v", err)
	}
}

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
