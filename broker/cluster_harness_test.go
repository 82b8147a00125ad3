package broker

// In-process clusters on a real ZooKeeper: several brokers of this package
// in one test process, each with its own data directory and ZooKeeper
// session, under a chroot of their own on the package's ZooKeeper (started
// on first use, stopped by TestMain). Tests that kill brokers hard run them
// as processes (cmd/sluice); these cover what a clean stop and restart
// show.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator/zk/zktest"
)

// packageZ is the package's ZooKeeper, started on first use.
var packageZ zktest.Lazy

// stopPackageZK stops the package's ZooKeeper if it was started.
func stopPackageZK() { packageZ.Stop() }

// testCluster is brokers 0..n-1 of one cluster.
type testCluster struct {
	t      testing.TB
	zkAddr string // ZooKeeper's address
	chroot string // the test's
	mod    func(*config.Config)

	mu      sync.Mutex
	brokers map[int32]*testBroker
	dirs    map[int32]string
	addrs   map[int32]string // a restarted broker listens where it did
	via     map[int32]string // a broker's own way to ZooKeeper (a LinkProxy)
}

// startCluster starts n brokers; mod adjusts every broker's configuration.
func startCluster(t testing.TB, n int, mod func(*config.Config)) *testCluster {
	t.Helper()
	zs := packageZ.Server(t)
	chroot := "/" + strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()) + fmt.Sprintf("-%d", time.Now().UnixNano())
	c := &testCluster{t: t, zkAddr: zs.Addr, chroot: chroot, mod: mod, via: map[int32]string{}, brokers: map[int32]*testBroker{}, dirs: map[int32]string{}, addrs: map[int32]string{}}
	for i := range n {
		c.start(int32(i))
	}
	c.waitAgree("all brokers registered", func(md *kmsg.MetadataResponse) bool { return len(md.Brokers) == n && md.ControllerID >= 0 })
	return c
}

// start starts (or restarts, on its data directory) broker id.
func (c *testCluster) start(id int32) *testBroker {
	c.t.Helper()
	c.mu.Lock()
	dir := c.dirs[id]
	if dir == "" {
		dir = c.t.TempDir()
		c.dirs[id] = dir
	}
	addr := c.addrs[id]
	if addr == "" {
		addr = freeLoopbackAddr(c.t)
	}
	zkAddr := c.zkAddr
	if v := c.via[id]; v != "" {
		zkAddr = v
	}
	c.mu.Unlock()
	tb := serveBroker(c.t, dir, func(cfg *config.Config) {
		cfg.ID = id
		if addr != "" {
			cfg.Listen = addr
		}
		cfg.Cluster.ZooKeeper = zkAddr + c.chroot
		cfg.Cluster.SessionTimeout = 4 * time.Second
		cfg.Groups.OffsetsPartitions = 6
		cfg.Groups.OffsetsReplication = 1
		zero := time.Duration(0)
		cfg.Groups.InitialRebalanceDelay = &zero
		if c.mod != nil {
			c.mod(cfg)
		}
	})
	c.mu.Lock()
	c.brokers[id] = tb
	c.addrs[id] = tb.addr
	c.mu.Unlock()
	// Registered after the data directory's removal: runs before it.
	c.t.Cleanup(func() { tb.stop(c.t) })
	return tb
}

// startBehindProxy starts broker id (not running yet) with its ZooKeeper link
// through a proxy, and returns the proxy to cut it.
func (c *testCluster) startBehindProxy(id int32) *zktest.LinkProxy {
	c.t.Helper()
	p, err := zktest.StartLinkProxy(c.zkAddr)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(p.Close)
	c.mu.Lock()
	c.via[id] = p.Addr()
	c.mu.Unlock()
	c.start(id)
	return p
}

// stopBroker stops broker id cleanly.
func (c *testCluster) stopBroker(id int32) {
	c.t.Helper()
	c.mu.Lock()
	tb := c.brokers[id]
	delete(c.brokers, id)
	c.mu.Unlock()
	tb.stop(c.t)
}

// live returns the running brokers, by id.
func (c *testCluster) live() []*testBroker {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]int32, 0, len(c.brokers))
	for id := range c.brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]*testBroker, 0, len(ids))
	for _, id := range ids {
		out = append(out, c.brokers[id])
	}
	return out
}

func (c *testCluster) broker(id int32) *testBroker {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.brokers[id]
}

// bootstrap lists the live brokers' addresses.
func (c *testCluster) bootstrap() []string {
	var out []string
	for _, b := range c.live() {
		out = append(out, b.addr)
	}
	return out
}

// metadata asks one broker for the metadata of every topic.
func metadataOf(t testing.TB, tb *testBroker) *kmsg.MetadataResponse {
	t.Helper()
	rc := dialRaw(t, tb.addr)
	defer rc.nc.Close()
	req := kmsg.NewPtrMetadataRequest()
	return rc.roundTrip(req, 12).(*kmsg.MetadataResponse)
}

// waitAgree polls every live broker's Metadata until cond holds on all of
// them, failing the test after 30 s with the last answers.
func (c *testCluster) waitAgree(what string, cond func(*kmsg.MetadataResponse) bool) {
	c.t.Helper()
	c.waitAgreeOn(c.live(), what, cond)
}

// waitAgreeOn is waitAgree on some brokers only.
func (c *testCluster) waitAgreeOn(brokers []*testBroker, what string, cond func(*kmsg.MetadataResponse) bool) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var bad []string
		for _, b := range brokers {
			md := metadataOf(c.t, b)
			if !cond(md) {
				bad = append(bad, fmt.Sprintf("broker %d: %s", b.cfg.ID, describeMetadata(md)))
			}
		}
		if len(bad) == 0 {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: not agreed after 30 s:\n%s", what, strings.Join(bad, "\n"))
		}
		time.Sleep(50 * time.Millisecond) // polling ZooKeeper-driven state: no event to wait on from outside
	}
}

// describeMetadata summarizes a Metadata response for failure messages.
func describeMetadata(md *kmsg.MetadataResponse) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "controller %d brokers [", md.ControllerID)
	for _, b := range md.Brokers {
		fmt.Fprintf(&sb, " %d@%s:%d", b.NodeID, b.Host, b.Port)
	}
	sb.WriteString(" ]")
	for _, t := range md.Topics {
		fmt.Fprintf(&sb, " %s(err %d, %d partitions)", *t.Topic, t.ErrorCode, len(t.Partitions))
	}
	return sb.String()
}

// topicOf returns a topic of a Metadata response, nil if absent.
func topicOf(md *kmsg.MetadataResponse, name string) *kmsg.MetadataResponseTopic {
	for i := range md.Topics {
		if t := &md.Topics[i]; t.Topic != nil && *t.Topic == name {
			return t
		}
	}
	return nil
}

// topicReady: the topic has n partitions, each with a leader.
func topicReady(name string, n int) func(*kmsg.MetadataResponse) bool {
	return func(md *kmsg.MetadataResponse) bool {
		t := topicOf(md, name)
		if t == nil || t.ErrorCode != 0 || len(t.Partitions) != n {
			return false
		}
		for _, p := range t.Partitions {
			if p.Leader < 0 || p.ErrorCode != 0 {
				return false
			}
		}
		return true
	}
}

// createTopic creates a topic through the first live broker and waits for
// every broker to serve it.
func (c *testCluster) createTopic(ctx context.Context, name string, partitions int32, rf int16) {
	c.t.Helper()
	adm := kadm.NewClient(clusterClient(c.t, c.bootstrap()[:1]))
	if r, err := adm.CreateTopic(ctx, partitions, rf, nil, name); err != nil || r.Err != nil {
		c.t.Fatalf("create %s: %v %v", name, err, r.Err)
	}
	c.waitAgree(name+" created", topicReady(name, int(partitions)))
}

// ledBy is a partition of topic that broker id leads, as broker 0 sees it;
// -1 if none.
func (c *testCluster) ledBy(id int32, topic string) int32 {
	c.t.Helper()
	for _, p := range topicOf(metadataOf(c.t, c.broker(0)), topic).Partitions {
		if p.Leader == id {
			return p.Partition
		}
	}
	return -1
}

// freeLoopbackAddr is a loopback address on a free port below Linux's
// ephemeral range (32768 and up): a port picked there could be taken by
// another test's outgoing connection while its broker is restarting.
func freeLoopbackAddr(t testing.TB) string {
	t.Helper()
	for range 100 {
		addr := fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000))
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			return addr
		}
	}
	t.Fatal("no free loopback port in [20000, 32000)")
	return ""
}
