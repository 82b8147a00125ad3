// Package zkserver runs a real ZooKeeper server as a child process:
// Debian's `zookeeper` package (apt-get install zookeeper), started as its
// standalone ZooKeeperServerMain on a loopback port with a generated
// configuration, no systemd. `sluice local-cluster` runs one for a local
// cluster; package zktest wraps it for tests (one server per test package,
// a chroot per test).
//
// The configuration uses a short tickTime (200 ms by default): ZooKeeper
// expires sessions on tick boundaries and bounds a session's timeout below
// by two ticks, so a broker that stops is noticed sooner.
package zkserver

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Jar is where Debian's zookeeper package installs the server.
const Jar = "/usr/share/java/zookeeper.jar"

// ErrNotInstalled is returned by Start when ZooKeeper or java is missing.
var ErrNotInstalled = errors.New("zkserver: ZooKeeper is not installed (apt-get install zookeeper)")

// Options are a server's settings; the zero value is the defaults.
type Options struct {
	// TickTime is ZooKeeper's tick (default 200 ms).
	TickTime time.Duration
	// StartTimeout bounds the wait for the server to answer (default 60 s:
	// a JVM on a loaded 2-core machine starts slowly).
	StartTimeout time.Duration
	// Log receives the server's output (default discarded).
	Log io.Writer
	// Port is the client port on 127.0.0.1 (default 0: a free port,
	// chosen at start).
	Port int
}

// Server is a running ZooKeeper.
type Server struct {
	// Addr is the client address, 127.0.0.1:port.
	Addr string
	dir  string
	cmd  *exec.Cmd
	// exited is closed when the process has exited; err is then its
	// exit status.
	exited chan struct{}
	err    error
}

// Start runs a ZooKeeper server with its configuration in dir and its
// database in dir/data (made if missing; a database left there by an
// earlier server is served again) and waits until it answers. The server
// runs in its own process group and is killed if the thread that started
// it exits.
func Start(dir string, o Options) (*Server, error) {
	if o.TickTime == 0 {
		o.TickTime = 200 * time.Millisecond
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotInstalled, err)
	}
	if _, err := os.Stat(Jar); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotInstalled, err)
	}
	// The free port found may be taken again before ZooKeeper binds it: a
	// server that exits at start is tried again on another port.
	for attempt := 1; ; attempt++ {
		s, err := start(java, dir, o)
		if err == nil || !errors.Is(err, errExited) || o.Port != 0 || attempt == 3 {
			return s, err
		}
	}
}

var errExited = errors.New("zkserver: ZooKeeper exited before answering")

func start(java, dir string, o Options) (*Server, error) {
	port := o.Port
	if port == 0 {
		var err error
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	// The admin server (Jetty, port 8080) is off: several test packages run
	// servers at once. The four-letter word srvr answers the readiness probe.
	cfg := fmt.Sprintf(`tickTime=%d
dataDir=%s
clientPort=%d
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat,cons
minSessionTimeout=%d
`, o.TickTime.Milliseconds(), data, port, 2*o.TickTime.Milliseconds())
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dzookeeper.jmx.log4j.disable=true", "-cp", Jar,
		"org.apache.zookeeper.server.ZooKeeperServerMain", cfgPath)
	cmd.Stdout, cmd.Stderr = o.Log, o.Log
	// Its own process group, and killed with the test binary (Linux).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("zkserver: start ZooKeeper: %w", err)
	}
	s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), dir: dir, cmd: cmd, exited: make(chan struct{})}
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	deadline := time.Now().Add(o.StartTimeout)
	for {
		if s.ok() {
			return s, nil
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("%w: %v", errExited, s.err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("zkserver: ZooKeeper did not answer on %s within %v", s.Addr, o.StartTimeout)
		}
	}
}

// ok asks the server "srvr", which a server answers with its version once
// it serves requests ("ruok" is answered as soon as the port is bound,
// before the database is loaded).
func (s *Server) ok() bool {
	c, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("srvr")); err != nil {
		return false
	}
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.HasPrefix(line, "Zookeeper version")
}

// Stop kills the server and waits (up to 10 s) for it to exit. Killing
// loses nothing: ZooKeeper syncs its transaction log before it answers a
// write.
func (s *Server) Stop() {
	if s.cmd.Process != nil {
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	}
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
	}
}

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Exited is closed when the server's process has exited, stopped or not.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// Err is the process's exit status once Exited is closed.
func (s *Server) Err() error {
	<-s.exited
	return s.err
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
