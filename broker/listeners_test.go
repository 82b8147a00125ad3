package broker

import (
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator/zk"
)

// Listener keys are read as Kafka reads them and refused as Kafka refuses
// them at start.
func TestListenerConfig(t *testing.T) {
	var c config.Config
	_, err := c.Apply(map[string]string{
		"listeners":                      "plaintext://:9092,SASL_SSL://0.0.0.0:9093,internal://[::1]:9094",
		"advertised.listeners":           "PLAINTEXT://b1:9092,INTERNAL://b1.internal:9094",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,INTERNAL:SASL_PLAINTEXT",
		"inter.broker.listener.name":     "internal",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []config.ListenerConfig{{Name: "PLAINTEXT", Addr: ":9092"}, {Name: "SASL_SSL", Addr: "0.0.0.0:9093"}, {Name: "INTERNAL", Addr: "[::1]:9094"}}
	if len(c.Listeners) != 3 || c.Listeners[0] != want[0] || c.Listeners[1] != want[1] || c.Listeners[2] != want[2] {
		t.Fatalf("listeners: %v", c.Listeners)
	}
	c.Cluster.ZooKeeper = "localhost:2181"
	s, err := c.ListenerSetup()
	if err != nil {
		t.Fatal(err)
	}
	if s.InterName != "INTERNAL" || s.Protocols["INTERNAL"] != config.ProtoSASLPlaintext || s.Advertised["INTERNAL"] != "b1.internal:9094" {
		t.Fatalf("setup: %+v", s)
	}
	if _, ok := s.Advertised["SASL_SSL"]; ok {
		t.Fatalf("SASL_SSL is advertised though advertised.listeners leaves it out: %v", s.Advertised)
	}

	refused := []struct {
		props map[string]string
		why   string
	}{
		{map[string]string{"listeners": "PLAINTEXT://:9092,PLAINTEXT://:9093"}, "given twice"},
		{map[string]string{"listeners": "localhost:9092"}, "NAME://host:port"},
		{map[string]string{"listeners": "PLAINTEXT://:99999"}, "bad port"},
		{map[string]string{"listeners": "EXTERNAL://:9092"}, "no security protocol"},
		{map[string]string{"listener.security.protocol.map": "A:TLS"}, "NAME:PROTOCOL"},
		{map[string]string{"listeners": "PLAINTEXT://:9092", "advertised.listeners": "SSL://x:1"}, "not one of listeners"},
		{map[string]string{"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "PLAINTEXT"}, "only one of"},
		{map[string]string{"security.inter.broker.protocol": "TLS"}, "one of PLAINTEXT"},
		{map[string]string{"listeners": "PLAINTEXT://:9092,SSL://:9093", "inter.broker.listener.name": "INTERNAL"}, "not an advertised listener"},
	}
	for _, r := range refused {
		c := config.Config{Cluster: config.ClusterConfig{ZooKeeper: "localhost:2181"}}
		_, err := c.Apply(r.props)
		if err == nil {
			_, err = c.ListenerSetup()
		}
		if err == nil || !strings.Contains(err.Error(), r.why) {
			t.Errorf("%v: %v, want an error saying %q", r.props, err, r.why)
		}
	}
}

// A broker with two listeners serves on both, and each client is told the
// addresses of the listener it came on: Metadata, FindCoordinator and
// DescribeCluster answer with that listener's port.
func TestTwoListeners(t *testing.T) {
	tb := startBroker(t, t.TempDir(), func(c *config.Config) {
		c.Listeners = []config.ListenerConfig{{Name: "PLAINTEXT", Addr: "127.0.0.1:0"}, {Name: "EXTERNAL", Addr: "127.0.0.1:0"}}
		c.ListenerProtocols = map[string]string{"PLAINTEXT": config.ProtoPlaintext, "EXTERNAL": config.ProtoPlaintext}
	})
	for _, name := range []string{"PLAINTEXT", "EXTERNAL"} {
		addr := tb.listenerAddr(t, name)
		_, portStr, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(portStr)
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("two-listeners"), kgo.AllowAutoTopicCreation())
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx := ctxTimeout(t, 15e9)
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(name)}).FirstErr(); err != nil {
			t.Fatalf("produce via %s: %v", name, err)
		}
		meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err != nil || len(meta.Brokers) != 1 || meta.Brokers[0].Port != int32(port) {
			t.Fatalf("Metadata via %s (port %d): %+v, %v", name, port, meta, err)
		}
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKey = "g"
		fr, err := fc.RequestWith(ctx, cl)
		if err != nil || fr.ErrorCode != 0 || fr.Port != int32(port) {
			t.Fatalf("FindCoordinator via %s (port %d): %+v, %v", name, port, fr, err)
		}
		dc, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
		if err != nil || len(dc.Brokers) != 1 || dc.Brokers[0].Port != int32(port) {
			t.Fatalf("DescribeCluster via %s (port %d): %+v, %v", name, port, dc, err)
		}
	}
}

// In a cluster with a client listener and an inter-broker one, every
// broker registers both endpoints, clients are told the client
// listener's addresses, and replication runs (over the inter-broker
// listener) as before.
func TestClusterInterBrokerListener(t *testing.T) {
	internal := map[int32]string{}
	var mu sync.Mutex
	c := startCluster(t, 2, func(cfg *config.Config) {
		mu.Lock()
		defer mu.Unlock()
		if internal[cfg.ID] == "" {
			internal[cfg.ID] = freeLoopbackAddr(t)
		}
		cfg.Listeners = []config.ListenerConfig{{Name: "CLIENT", Addr: cfg.Listen}, {Name: "INTERNAL", Addr: internal[cfg.ID]}}
		cfg.ListenerProtocols = map[string]string{"CLIENT": config.ProtoPlaintext, "INTERNAL": config.ProtoPlaintext}
		cfg.InterBrokerListener = "INTERNAL"
	})
	zc := c.broker(0).plane.zk.Client()
	for id := range int32(2) {
		data, _, err := zc.Get(zk.BrokerPath(id))
		if err != nil {
			t.Fatal(err)
		}
		reg, err := zk.DecodeBroker(id, data)
		if err != nil || len(reg.Endpoints) != 2 || reg.Endpoints[0].Listener != "CLIENT" || reg.Endpoints[1].Listener != "INTERNAL" ||
			net.JoinHostPort(reg.Endpoints[1].Host, strconv.Itoa(int(reg.Endpoints[1].Port))) != internal[id] {
			t.Fatalf("broker %d registered %s (%v)", id, data, err)
		}
	}
	md := metadataOf(t, c.broker(0))
	for _, br := range md.Brokers {
		if addr := net.JoinHostPort(br.Host, strconv.Itoa(int(br.Port))); addr != c.broker(br.NodeID).addr {
			t.Fatalf("Metadata on the client listener names broker %d at %s, want %s", br.NodeID, addr, c.broker(br.NodeID).addr)
		}
	}
	ctx := ctxTimeout(t, 30*time.Second)
	c.createTopic(ctx, "replicated", 2, 2)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.bootstrap()...), kgo.DefaultProduceTopic("replicated"), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 20 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatalf("acks=all produce %d: %v", i, err)
		}
	}
}
