package main

// The cluster test harness: brokers as child processes of the built
// binary, on one ZooKeeper shared by the package's tests (started at first
// use, a chroot per test), so that a test can SIGKILL, SIGSTOP and restart
// them as an operator or a crash would. Every wait polls with a deadline.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator/zk/zktest"
)

// Settings of the test clusters. ZooKeeper's tickTime is 200 ms (zktest's
// default), so sessions of 400 ms to 4 s are allowed.
const (
	testSessionTimeout = 3 * time.Second
	// testWait bounds every wait for the cluster to agree: generous, for a
	// loaded 2-core machine.
	testWait = 30 * time.Second
)

// testZK is the package's ZooKeeper, started by the first cluster test and
// stopped by TestMain.
var testZK struct {
	once sync.Once
	srv  *zktest.Server
	err  error
}

// clusterZK returns the package ZooKeeper's address, starting it at first
// use. Without ZooKeeper installed the test is skipped, or fails under CI.
func clusterZK(t testing.TB) string {
	t.Helper()
	testZK.once.Do(func() {
		dir := filepath.Join(build.dir, "zookeeper")
		if testZK.err = os.MkdirAll(dir, 0o755); testZK.err == nil {
			testZK.srv, testZK.err = zktest.Start(dir, zktest.Options{})
		}
	})
	if testZK.err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("ZooKeeper: %v", testZK.err)
		}
		t.Skipf("ZooKeeper: %v", testZK.err)
	}
	return testZK.srv.Addr
}

// stopClusterZK stops the package ZooKeeper if a test started it.
func stopClusterZK() {
	if testZK.srv != nil {
		testZK.srv.Stop()
	}
}

// testCluster is one test's brokers under its own chroot.
type testCluster struct {
	t       testing.TB
	bin     string
	connect string // ZooKeeper address and chroot
	chroot  string
	dir     string
	props   string // the brokers' server.properties
	brokers map[int32]*testBroker
	zkConn  *zk.Conn // opened by znode
	// opts are the options of every client of the cluster (its security:
	// TLS, SASL), the harness's own Metadata probes too.
	opts []kgo.Opt
}

// testBroker is one broker of a testCluster; its id, addresses and data
// directory stay across restarts.
type testBroker struct {
	id      int32
	addr    string
	metrics string // its --metrics-addr, the port after addr's
	data    string
	proc    *brokerChild
	stopped bool // SIGSTOPped and not yet continued
	// exe and env, if exe is set, run the broker instead of the cluster's
	// binary: the test binary as a child with a faulty disk
	// (cluster_diskfull_test.go).
	exe string
	env []string
}

var chroots atomic.Int64

var unsafeChroot = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// startCluster starts n brokers (ids 1 to n) and waits until every one
// knows all of them and the same live controller.
func startCluster(t testing.TB, n int) *testCluster {
	t.Helper()
	return startClusterWith(t, n, "")
}

// startClusterWith is startCluster with extra lines of server.properties
// for every broker, after the harness's own (a key given again there
// overrides the harness's: the last value of a key wins).
func startClusterWith(t testing.TB, n int, extra string) *testCluster {
	t.Helper()
	return startClusterOn(t, clusterZK(t), n, extra)
}

// startClusterOn is startClusterWith on the ZooKeeper at zkAddr (a
// benchmark's, with its own tick).
func startClusterOn(t testing.TB, zkAddr string, n int, extra string) *testCluster {
	t.Helper()
	c := newCluster(t, zkAddr, n, extra)
	c.startBrokers(n)
	return c
}

// newCluster prepares a cluster of n brokers on the ZooKeeper at zkAddr
// with extra lines of server.properties, and starts no broker:
// startBrokers does. opts are its clients' options.
func newCluster(t testing.TB, zkAddr string, n int, extra string, opts ...kgo.Opt) *testCluster {
	t.Helper()
	c := &testCluster{
		opts:    opts,
		t:       t,
		bin:     buildSluice(t),
		chroot:  fmt.Sprintf("/t-%s-%d", unsafeChroot.ReplaceAllString(t.Name(), "-"), chroots.Add(1)),
		dir:     t.TempDir(),
		brokers: map[int32]*testBroker{},
	}
	c.connect = zkAddr + c.chroot
	c.props = filepath.Join(c.dir, "server.properties")
	props := fmt.Sprintf("zookeeper.session.timeout.ms=%d\noffsets.topic.num.partitions=6\noffsets.topic.replication.factor=%d\n",
		testSessionTimeout.Milliseconds(), min(3, n))
	if err := os.WriteFile(c.props, []byte(props+extra), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.cleanup)
	return c
}

// startBrokers starts brokers 1 to n and waits until every one knows all
// of them and the same live controller.
func (c *testCluster) startBrokers(n int) {
	c.t.Helper()
	for id := int32(1); id <= int32(n); id++ {
		c.addBroker(id)
	}
	c.waitAgree("every broker registered with one controller", func(m *kmsg.MetadataResponse) error {
		if err := c.wantBrokers(m, c.ids()...); err != nil {
			return err
		}
		return c.wantLiveController(m)
	})
}

// cleanup prints the end of every broker's log if the test failed, then
// kills the brokers.
func (c *testCluster) cleanup() {
	for _, id := range c.ids() {
		b := c.brokers[id]
		if b.proc == nil {
			continue // never started
		}
		if c.t.Failed() {
			c.t.Logf("broker %d (%s), the end of %s:\n%s", id, b.addr, b.proc.logPath, tailFile(b.proc.logPath, 40))
		}
		b.proc.signal(syscall.SIGKILL)
		<-b.proc.exited
	}
}

// addBroker starts a new broker id on a free port (freePorts), serving
// metrics on the next.
func (c *testCluster) addBroker(id int32) *testBroker {
	c.t.Helper()
	return c.addBrokerAs(id, "", nil)
}

// addBrokerAs is addBroker run by exe with env added (exe "": the
// cluster's binary).
func (c *testCluster) addBrokerAs(id int32, exe string, env []string) *testBroker {
	c.t.Helper()
	port := freePorts(c.t, 2)
	b := &testBroker{id: id, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		metrics: net.JoinHostPort("127.0.0.1", strconv.Itoa(port+1)), data: filepath.Join(c.dir, fmt.Sprintf("broker-%d", id)),
		exe: exe, env: env}
	c.brokers[id] = b
	c.launch(b)
	return b
}

// launch starts b's process and waits until it answers Metadata.
func (c *testCluster) launch(b *testBroker) {
	c.t.Helper()
	args := []string{"broker", "--zookeeper", c.connect, "--id", strconv.Itoa(int(b.id)),
		"--listen", b.addr, "--metrics-addr", b.metrics, "--data", b.data, "--config", c.props}
	logPath := filepath.Join(c.dir, fmt.Sprintf("broker-%d.log", b.id))
	bin := c.bin
	if b.exe != "" {
		bin = b.exe
	}
	p, err := startBrokerChildEnv(bin, b.env, args, b.id, b.addr, logPath, syscall.SIGKILL)
	if err != nil {
		c.t.Fatal(err)
	}
	b.proc, b.stopped = p, false
	poll(c.t, fmt.Sprintf("broker %d answers on %s", b.id, b.addr), func() error {
		if !p.running() {
			c.t.Fatalf("broker %d exited at start: %v\n%s", b.id, exitText(p.err), tailFile(logPath, 40))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := metadataOf(ctx, b.addr, c.opts...)
		return err
	})
}

// kill SIGKILLs broker id and waits for it to exit.
func (c *testCluster) kill(id int32) {
	c.t.Helper()
	b := c.brokers[id]
	if err := b.proc.signal(syscall.SIGKILL); err != nil {
		c.t.Fatal(err)
	}
	<-b.proc.exited
}

// pause SIGSTOPs broker id and waits until the kernel shows every thread
// of it stopped (state T in /proc/<pid>/task/<tid>/stat: kill(2) returns
// before the signal is acted on), so that it sends nothing more; resume
// SIGCONTs it.
func (c *testCluster) pause(id int32) {
	c.t.Helper()
	c.signal(id, syscall.SIGSTOP, true)
	tasks := fmt.Sprintf("/proc/%d/task", c.brokers[id].proc.pid())
	poll(c.t, fmt.Sprintf("broker %d stopped", id), func() error {
		entries, err := os.ReadDir(tasks)
		if err != nil {
			return err
		}
		for _, e := range entries {
			stat := filepath.Join(tasks, e.Name(), "stat")
			b, err := os.ReadFile(stat)
			if err != nil {
				return err
			}
			// "tid (comm) state ...": comm may hold spaces and
			// parentheses, so the state follows the last ")".
			i := bytes.LastIndexByte(b, ')')
			if i < 0 || i+2 >= len(b) {
				return fmt.Errorf("%s: %q", stat, b)
			}
			if st := b[i+2]; st != 'T' {
				return fmt.Errorf("%s: state %c", stat, st)
			}
		}
		return nil
	})
}

func (c *testCluster) resume(id int32) { c.signal(id, syscall.SIGCONT, false) }

func (c *testCluster) signal(id int32, sig syscall.Signal, stopped bool) {
	c.t.Helper()
	b := c.brokers[id]
	if err := b.proc.signal(sig); err != nil {
		c.t.Fatalf("broker %d: %v: %v", id, sig, err)
	}
	b.stopped = stopped
}

// restart starts broker id again, with its id, address and data
// directory, after kill.
func (c *testCluster) restart(id int32) {
	c.t.Helper()
	b := c.brokers[id]
	if b.proc.running() {
		c.t.Fatalf("broker %d restarted while running", id)
	}
	c.launch(b)
}

// ids returns the ids of every broker the test started, sorted.
func (c *testCluster) ids() []int32 {
	ids := make([]int32, 0, len(c.brokers))
	for id := range c.brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// live returns the ids of the brokers running and not stopped, sorted.
func (c *testCluster) live() []int32 {
	var ids []int32
	for _, id := range c.ids() {
		if b := c.brokers[id]; b.proc.running() && !b.stopped {
			ids = append(ids, id)
		}
	}
	return ids
}

// addrs returns the addresses of brokers ids.
func (c *testCluster) addrs(ids ...int32) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = c.brokers[id].addr
	}
	return out
}

// waitAgree polls Metadata on every live broker until cond holds for all
// of them, failing the test after testWait with what each answered last.
// It returns the last responses, by broker id.
func (c *testCluster) waitAgree(what string, cond func(*kmsg.MetadataResponse) error) map[int32]*kmsg.MetadataResponse {
	c.t.Helper()
	var got map[int32]*kmsg.MetadataResponse
	poll(c.t, fmt.Sprintf("the brokers %v agree that %s", c.live(), what), func() error {
		var err error
		got, err = c.metadataAll(cond)
		return err
	})
	return got
}

// waitController waits until every live broker names the same live
// broker, other than not, as the controller, and returns it.
func (c *testCluster) waitController(not int32) int32 {
	c.t.Helper()
	var ctrl int32
	poll(c.t, fmt.Sprintf("the brokers %v name one live controller other than %d", c.live(), not), func() error {
		got, err := c.metadataAll(c.wantLiveController)
		if err != nil {
			return err
		}
		ctrl = -1
		for id, m := range got {
			switch {
			case m.ControllerID == not:
				return fmt.Errorf("broker %d names controller %d", id, not)
			case ctrl == -1:
				ctrl = m.ControllerID
			case m.ControllerID != ctrl:
				return fmt.Errorf("broker %d names controller %d, another %d", id, m.ControllerID, ctrl)
			}
		}
		return nil
	})
	return ctrl
}

// metadataAll asks every live broker for Metadata and checks cond on each
// answer; it returns the answers, by broker id, and every failure.
func (c *testCluster) metadataAll(cond func(*kmsg.MetadataResponse) error) (map[int32]*kmsg.MetadataResponse, error) {
	got := map[int32]*kmsg.MetadataResponse{}
	var errs []error
	for _, id := range c.live() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		m, err := metadataOf(ctx, c.brokers[id].addr, c.opts...)
		cancel()
		if err == nil {
			got[id] = m
			err = cond(m)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("broker %d: %w", id, err))
		}
	}
	return got, errors.Join(errs...)
}

// poll calls check every 100 ms until it returns nil, failing the test
// with its last error after testWait.
func poll(t testing.TB, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not so after %v:\n%v", what, testWait, err)
		}
		<-tick.C
	}
}

// wantBrokers checks that m lists exactly the brokers ids, each at its
// address.
func (c *testCluster) wantBrokers(m *kmsg.MetadataResponse, ids ...int32) error {
	var got []string
	for _, b := range m.Brokers {
		got = append(got, fmt.Sprintf("%d@%s", b.NodeID, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))))
	}
	slices.Sort(got)
	var want []string
	for _, id := range ids {
		want = append(want, fmt.Sprintf("%d@%s", id, c.brokers[id].addr))
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("brokers %v, want %v", got, want)
	}
	return nil
}

// wantLiveController checks that m names a live broker as the controller.
func (c *testCluster) wantLiveController(m *kmsg.MetadataResponse) error {
	if !slices.Contains(c.live(), m.ControllerID) {
		return fmt.Errorf("controller %d, not one of the live brokers %v", m.ControllerID, c.live())
	}
	return nil
}

// wantTopic checks that m has topic with partitions partitions, each with
// replicas replicas and a live leader.
func (c *testCluster) wantTopic(m *kmsg.MetadataResponse, topic string, partitions, replicas int) error {
	for _, tp := range m.Topics {
		if tp.Topic == nil || *tp.Topic != topic {
			continue
		}
		if tp.ErrorCode != 0 {
			return fmt.Errorf("topic %s: error code %d", topic, tp.ErrorCode)
		}
		if len(tp.Partitions) != partitions {
			return fmt.Errorf("topic %s: %d partitions, want %d", topic, len(tp.Partitions), partitions)
		}
		for _, p := range tp.Partitions {
			if len(p.Replicas) != replicas {
				return fmt.Errorf("%s-%d: replicas %v, want %d", topic, p.Partition, p.Replicas, replicas)
			}
			if !slices.Contains(c.live(), p.Leader) {
				return fmt.Errorf("%s-%d: leader %d, not one of the live brokers %v", topic, p.Partition, p.Leader, c.live())
			}
		}
		return nil
	}
	return fmt.Errorf("no topic %s", topic)
}

// client returns a franz-go client seeded with the live brokers, closed at
// cleanup.
func (c *testCluster) client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	base := append([]kgo.Opt{kgo.SeedBrokers(c.addrs(c.live()...)...)}, c.opts...)
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// znode reads path under the cluster's chroot; a missing znode is a nil
// stat. The ZooKeeper client is opened at first use and closed at cleanup.
func (c *testCluster) znode(path string) ([]byte, *zk.Stat) {
	c.t.Helper()
	if c.zkConn == nil {
		addr, _, _ := strings.Cut(c.connect, "/")
		conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
		if err != nil {
			c.t.Fatal(err)
		}
		c.t.Cleanup(conn.Close)
		c.zkConn = conn
	}
	data, stat, err := c.zkConn.Get(c.chroot + path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		c.t.Fatalf("ZooKeeper: get %s%s: %v", c.chroot, path, err)
	}
	return data, stat
}
