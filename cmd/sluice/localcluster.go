package main

// sluice local-cluster: a ZooKeeper and N brokers on loopback, each broker
// a child process of this binary with its own data directory, stopped
// together at SIGINT or SIGTERM.

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-io/sluice/coordinator/zk/zkserver"
)

const localClusterUsage = `usage: sluice local-cluster [--brokers N] [--dir DIR] [--port PORT]

Starts ZooKeeper and N brokers (ids 0 to N-1) on 127.0.0.1, the brokers on
ports PORT, PORT+1, ..., each a child process of this binary, and prints
the bootstrap servers line once every broker has registered. ZooKeeper is
Debian's zookeeper package (apt-get install zookeeper), run on a free port.

Under DIR:
  zookeeper/                ZooKeeper's configuration, database and zookeeper.log
  broker-N/                 broker N's data directory
  broker-N.properties       broker N's server.properties, written at each start
  broker-N.log              broker N's log

offsets.topic.replication.factor and default.replication.factor are
min(3, N); zookeeper.session.timeout.ms is 6000, so a broker that dies
leaves the cluster within 6 s. A broker that exits is reported, with the
end of its log; the others keep running. SIGINT (Ctrl-C) or SIGTERM stops
every broker (SIGTERM, then SIGKILL after --stop-timeout) and then
ZooKeeper; the exit code is 0 if every broker stopped cleanly then.
Started again with the same DIR, the cluster has its topics and data.
`

// Settings of the cluster local-cluster starts.
const (
	// localTickTime is ZooKeeper's tick: sessions of 2 to 20 ticks are
	// allowed, and expire on tick boundaries.
	localTickTime = 500 * time.Millisecond
	// localSessionTimeout is each broker's zookeeper.session.timeout.ms.
	localSessionTimeout = 6 * time.Second
	// localReadyTimeout bounds the wait for every broker to register.
	localReadyTimeout = 60 * time.Second
)

func runLocalCluster(args []string, stdout, stderr io.Writer) int {
	c := newCommand("sluice local-cluster", localClusterUsage, stdout, stderr)
	n := c.fs.Int("brokers", 3, "number of brokers")
	dir := c.fs.String("dir", "sluice-cluster", "directory of the cluster's data and logs")
	port := c.fs.Int("port", 9092, "first broker's port; broker N listens on PORT+N")
	stopTimeout := c.fs.Duration("stop-timeout", 30*time.Second, "how long a broker may take to stop before it is killed")
	pos, code, done := c.parse(args)
	if done {
		return code
	}
	switch {
	case len(pos) > 0:
		return c.usageError("unexpected argument %q", pos[0])
	case *n < 1:
		return c.usageError("--brokers %d: want at least 1", *n)
	case *port < 1 || *port+*n-1 > 65535:
		return c.usageError("--port %d: brokers would listen on ports up to %d", *port, *port+*n-1)
	}
	bin, err := os.Executable()
	if err != nil {
		return c.fail(err)
	}
	addrs := make([]string, *n)
	for i := range addrs {
		addrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(*port+i))
		if err := portFree(addrs[i]); err != nil {
			return c.fail(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(*dir, "zookeeper"), 0o755); err != nil {
		return c.fail(err)
	}
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()

	lc := &localCluster{cmd: c, dir: *dir, stopTimeout: *stopTimeout}
	if err := lc.startZooKeeper(); err != nil {
		return c.fail(err)
	}
	for i, addr := range addrs {
		if err := lc.startBroker(bin, int32(i), addr, min(3, *n)); err != nil {
			lc.stop()
			return c.fail(err)
		}
	}
	return lc.run(ctx, addrs)
}

// localCluster is the running cluster of one local-cluster command.
type localCluster struct {
	cmd         *command
	dir         string
	stopTimeout time.Duration
	zk          *zkserver.Server
	brokers     []*brokerChild
}

func (lc *localCluster) startZooKeeper() error {
	zkDir := filepath.Join(lc.dir, "zookeeper")
	logPath := filepath.Join(zkDir, "zookeeper.log")
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	// The server writes to its own descriptor of the file; this one can be
	// closed once it runs.
	defer log.Close()
	lc.zk, err = zkserver.Start(zkDir, zkserver.Options{TickTime: localTickTime, Log: log})
	if err != nil {
		return fmt.Errorf("%w (log: %s)", err, logPath)
	}
	fmt.Fprintf(lc.cmd.stdout, "ZooKeeper %s (pid %d), log %s\n", lc.zk.Addr, lc.zk.Pid(), logPath)
	return nil
}

// startBroker writes broker id's server.properties and starts it.
func (lc *localCluster) startBroker(bin string, id int32, addr string, rf int) error {
	name := fmt.Sprintf("broker-%d", id)
	props := filepath.Join(lc.dir, name+".properties")
	content := fmt.Sprintf(`# Written by sluice local-cluster at each start; edits are lost.
zookeeper.session.timeout.ms=%d
offsets.topic.replication.factor=%d
default.replication.factor=%d
`, localSessionTimeout.Milliseconds(), rf, rf)
	if err := os.WriteFile(props, []byte(content), 0o644); err != nil {
		return err
	}
	args := []string{"broker",
		"--zookeeper", lc.zk.Addr,
		"--id", strconv.Itoa(int(id)),
		"--listen", addr,
		"--data", filepath.Join(lc.dir, name),
		"--config", props,
	}
	logPath := filepath.Join(lc.dir, name+".log")
	p, err := startBrokerChild(bin, args, id, addr, logPath, syscall.SIGTERM)
	if err != nil {
		return err
	}
	lc.brokers = append(lc.brokers, p)
	fmt.Fprintf(lc.cmd.stdout, "broker %d on %s (pid %d), log %s\n", id, addr, p.pid(), logPath)
	return nil
}

// run waits for the brokers to register, prints the bootstrap servers
// line, reports brokers that exit, and stops the cluster when ctx ends or
// ZooKeeper exits. It returns the exit code.
func (lc *localCluster) run(ctx context.Context, addrs []string) int {
	exits := make(chan *brokerChild, len(lc.brokers))
	for _, p := range lc.brokers {
		go func() {
			<-p.exited
			exits <- p
		}()
	}
	readyCtx, cancelReady := context.WithTimeout(ctx, localReadyTimeout)
	defer cancelReady()
	ready := make(chan error, 1)
	go func() { ready <- waitRegistered(readyCtx, addrs) }()

	clean := true
	live := len(lc.brokers)
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(lc.cmd.stdout, "stopping the cluster")
			if !lc.stop() || !clean {
				return 1
			}
			return 0
		case err := <-ready:
			if err != nil && ctx.Err() == nil {
				lc.cmd.warn("not every broker registered within %v: %v", localReadyTimeout, err)
			}
			if ctx.Err() == nil {
				fmt.Fprintf(lc.cmd.stdout, "bootstrap servers: %s\n", strings.Join(addrs, ","))
			}
		case p := <-exits:
			clean = false
			live--
			fmt.Fprintf(lc.cmd.stderr, "%s: broker %d (pid %d) exited unexpectedly: %v; the end of %s:\n%s",
				lc.cmd.name, p.id, p.pid(), exitText(p.err), p.logPath, tailFile(p.logPath, 20))
			if live == 0 {
				fmt.Fprintf(lc.cmd.stderr, "%s: every broker has exited\n", lc.cmd.name)
				lc.zk.Stop()
				return 1
			}
		case <-lc.zk.Exited():
			fmt.Fprintf(lc.cmd.stderr, "%s: ZooKeeper (pid %d) exited unexpectedly: %v\n", lc.cmd.name, lc.zk.Pid(), lc.zk.Err())
			lc.stop()
			return 1
		}
	}
}

// stop stops every running broker, all at once, then ZooKeeper. It reports
// whether every broker stopped cleanly.
func (lc *localCluster) stop() bool {
	errs := make(chan error, len(lc.brokers))
	stopping := 0
	for _, p := range lc.brokers {
		if !p.running() {
			continue
		}
		stopping++
		go func() {
			err := p.stop(lc.stopTimeout)
			if err != nil {
				fmt.Fprintf(lc.cmd.stderr, "%s: broker %d (pid %d): %v\n", lc.cmd.name, p.id, p.pid(), exitText(err))
			}
			errs <- err
		}()
	}
	clean := true
	for range stopping {
		if err := <-errs; err != nil {
			clean = false
		}
	}
	if lc.zk != nil {
		lc.zk.Stop()
	}
	return clean
}

// waitRegistered polls every broker's Metadata until each lists all of
// them, or ctx ends (then it returns what the last round found).
func waitRegistered(ctx context.Context, addrs []string) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		err := allRegistered(ctx, addrs)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-tick.C:
		}
	}
}

func allRegistered(ctx context.Context, addrs []string) error {
	for _, addr := range addrs {
		reqCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		m, err := metadataOf(reqCtx, addr)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", addr, err)
		}
		if len(m.Brokers) != len(addrs) {
			return fmt.Errorf("%s knows %d brokers of %d", addr, len(m.Brokers), len(addrs))
		}
	}
	return nil
}

// portFree reports an error if something listens on addr already.
func portFree(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", addr, err)
	}
	return ln.Close()
}

// exitText describes a process's exit status.
func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
