package bench

// An in-process sluice cluster for the replication benchmarks: n brokers
// of package broker in this process, each with its own data directory,
// loopback listener and ZooKeeper session, under a chroot of their own on
// the package's ZooKeeper (Debian's zookeeper package, a child process,
// started on first use and stopped by TestMain). Only benchmarks start
// one: `go test ./...` without -bench never does.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator/zk/zktest"
)

// packageZ is the package's ZooKeeper, started on first use.
var packageZ zktest.Lazy

// cluster is brokers 0..n-1 of one ZooKeeper-mode cluster.
type cluster struct {
	tb      testing.TB
	zk      *zktest.Server
	connect string // zookeeper.connect, with the cluster's chroot
	dirs    []string
	// live is the running brokers by id, nil while stopped; ctl is each
	// one's client for requests aimed at that broker alone.
	live []*inProcess
	ctl  []*kgo.Client
	// mod adjusts every broker's configuration (startClusterWith).
	mod func(*config.Config)
}

// startCluster starts n brokers and waits until every one is registered
// and a controller elected; they are stopped at the benchmark's cleanup.
func startCluster(tb testing.TB, n int) *cluster {
	tb.Helper()
	return startClusterWith(tb, n, nil)
}

// startClusterWith is startCluster with mod adjusting every broker's
// configuration.
func startClusterWith(tb testing.TB, n int, mod func(*config.Config)) *cluster {
	tb.Helper()
	zs := packageZ.Server(tb)
	c := &cluster{tb: tb, zk: zs, connect: zs.Addr + zktest.Chroot(), live: make([]*inProcess, n), ctl: make([]*kgo.Client, n), mod: mod}
	for range n {
		c.dirs = append(c.dirs, tb.TempDir())
	}
	tb.Cleanup(func() {
		for id := range c.live {
			if c.live[id] != nil {
				c.stop(int32(id))
			}
		}
	})
	for id := range n {
		c.start(int32(id))
	}
	c.waitMetadata("every broker registered", func(md *kmsg.MetadataResponse) bool {
		return len(md.Brokers) == n && md.ControllerID >= 0
	})
	return c
}

// start starts (or restarts, on its data directory) broker id.
func (c *cluster) start(id int32) {
	c.tb.Helper()
	s, err := serveSluice(fmt.Sprintf("sluice-%d", id), c.dirs[id], func(cfg *config.Config) {
		cfg.ID = id
		cfg.Cluster.ZooKeeper = c.connect
		if c.mod != nil {
			c.mod(cfg)
		}
	})
	if err != nil {
		c.tb.Fatalf("start broker %d: %v", id, err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.addr))
	if err != nil {
		c.tb.Fatal(err)
	}
	c.live[id], c.ctl[id] = s, cl
}

// stop stops broker id cleanly: its registration goes, the controller
// moves its leaderships and takes it out of every ISR.
func (c *cluster) stop(id int32) {
	c.tb.Helper()
	c.ctl[id].Close()
	if err := c.live[id].close(); err != nil {
		c.tb.Errorf("broker %d close: %v", id, err)
	}
	c.live[id], c.ctl[id] = nil, nil
}

// add starts one more broker, the next id, on a new data directory.
func (c *cluster) add() int32 {
	c.tb.Helper()
	id := int32(len(c.live))
	c.dirs = append(c.dirs, c.tb.TempDir())
	c.live, c.ctl = append(c.live, nil), append(c.ctl, nil)
	c.start(id)
	return id
}

// close stops every running broker and removes the data directories now,
// not at the benchmark's cleanup, so that a benchmark building clusters
// in turn holds one cluster's data at a time.
func (c *cluster) close() {
	c.tb.Helper()
	for id, s := range c.live {
		if s != nil {
			c.stop(int32(id))
		}
	}
	for _, d := range c.dirs {
		if err := os.RemoveAll(d); err != nil {
			c.tb.Error(err)
		}
	}
}

// addrs lists the running brokers' addresses.
func (c *cluster) addrs() []string {
	var out []string
	for _, s := range c.live {
		if s != nil {
			out = append(out, s.addr)
		}
	}
	return out
}

// request sends req to broker id itself.
func (c *cluster) request(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	return c.ctl[id].SeedBrokers()[0].Request(ctx, req)
}

// metadata is broker id's metadata of every topic.
func (c *cluster) metadata(ctx context.Context, id int32) (*kmsg.MetadataResponse, error) {
	resp, err := c.request(ctx, id, kmsg.NewPtrMetadataRequest())
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// waitMetadata polls every running broker's metadata until cond holds on
// all of them, failing the benchmark after 60 s.
func (c *cluster) waitMetadata(what string, cond func(*kmsg.MetadataResponse) bool) {
	c.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		var bad []string
		for id, s := range c.live {
			if s == nil {
				continue
			}
			md, err := c.metadata(ctx, int32(id))
			if err == nil && !cond(md) {
				err = fmt.Errorf("not yet: %s", describe(md))
			}
			if err != nil {
				bad = append(bad, fmt.Sprintf("broker %d: %v", id, err))
			}
		}
		if len(bad) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			c.tb.Fatalf("%s: not after 60 s:\n%s", what, strings.Join(bad, "\n"))
		case <-time.After(20 * time.Millisecond): // ZooKeeper-driven state: no event to wait on from outside
		}
	}
}

// describe sums a Metadata response up for failure messages.
func describe(md *kmsg.MetadataResponse) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "controller %d, %d brokers", md.ControllerID, len(md.Brokers))
	for _, t := range md.Topics {
		fmt.Fprintf(&sb, "; %s (error %d):", *t.Topic, t.ErrorCode)
		for _, p := range t.Partitions {
			fmt.Fprintf(&sb, " %d@%d%v", p.Partition, p.Leader, p.ISR)
		}
	}
	return sb.String()
}

// partitionsOf is a topic's partitions in md, nil if md lacks the topic.
func partitionsOf(md *kmsg.MetadataResponse, topic string) []kmsg.MetadataResponseTopicPartition {
	for _, t := range md.Topics {
		if t.Topic != nil && *t.Topic == topic && t.ErrorCode == 0 {
			return t.Partitions
		}
	}
	return nil
}

// inSync reports whether every one of the topic's n partitions has a
// leader and an ISR of isr replicas, with (or, for a negative id,
// regardless of) broker with among them.
func inSync(topic string, n, isr int, with int32) func(*kmsg.MetadataResponse) bool {
	return func(md *kmsg.MetadataResponse) bool {
		ps := partitionsOf(md, topic)
		if len(ps) != n {
			return false
		}
		for _, p := range ps {
			if p.ErrorCode != 0 || p.Leader < 0 || len(p.ISR) != isr || (with >= 0 && !slices.Contains(p.ISR, with)) {
				return false
			}
		}
		return true
	}
}

// createTopic creates a topic of partitions partitions and replication
// factor rf with the given configs, and waits until every running broker
// sees each partition led and its ISR whole.
func (c *cluster) createTopic(ctx context.Context, name string, partitions int32, rf int16, configs map[string]string) {
	c.tb.Helper()
	createTopicAt(c.tb, ctx, c.addrs(), name, partitions, rf, configs)
	c.waitMetadata(name+" led, ISR whole", inSync(name, int(partitions), int(rf), -1))
}

// logSize is the bytes broker id holds of the topic's partitions.
func (c *cluster) logSize(ctx context.Context, id int32, topic string) (int64, error) {
	req := kmsg.NewPtrDescribeLogDirsRequest()
	rt := kmsg.NewDescribeLogDirsRequestTopic()
	rt.Topic = topic
	for p := range int32(64) {
		rt.Partitions = append(rt.Partitions, p)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := c.request(ctx, id, req)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, d := range resp.(*kmsg.DescribeLogDirsResponse).Dirs {
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				n += p.Size
			}
		}
	}
	return n, nil
}
