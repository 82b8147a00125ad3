package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var (
	localPidRE       = regexp.MustCompile(`^(ZooKeeper|broker \d+) .*\(pid (\d+)\)`)
	localBootstrapRE = regexp.MustCompile(`^bootstrap servers: (\S+)$`)
)

// localRun is one `sluice local-cluster` process of a test.
type localRun struct {
	cmd     *exec.Cmd
	dir     string
	servers string         // the bootstrap servers line's list
	pids    map[string]int // "ZooKeeper", "broker 0", ... -> pid
	stderr  *bytes.Buffer  // read once exited is closed
	exited  chan struct{}  // closed when the process has exited; err is then its status
	err     error
}

// startLocalCluster runs `sluice local-cluster --brokers n` on free ports
// and waits for its bootstrap servers line. At cleanup it is killed if the
// test failed, and its output and the brokers' logs are printed.
func startLocalCluster(t *testing.T, ctx context.Context, n int) *localRun {
	t.Helper()
	clusterZK(t) // skipped, or failed under CI, without ZooKeeper
	r := &localRun{dir: filepath.Join(t.TempDir(), "cluster"), pids: map[string]int{}, stderr: &bytes.Buffer{}, exited: make(chan struct{})}
	r.cmd = exec.Command(buildSluice(t), "local-cluster", "--brokers", strconv.Itoa(n), "--dir", r.dir, "--port", strconv.Itoa(freePorts(t, n)))
	r.cmd.Stderr = r.stderr
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		r.err = r.cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			r.cmd.Process.Kill()
			<-r.exited
			t.Logf("local-cluster's stderr:\n%s", r.stderr.String())
			for i := range n {
				p := filepath.Join(r.dir, fmt.Sprintf("broker-%d.log", i))
				t.Logf("the end of %s:\n%s", p, tailFile(p, 30))
			}
		}
	})
	for r.servers == "" {
		select {
		case line := <-lines:
			t.Log(line)
			if m := localPidRE.FindStringSubmatch(line); m != nil {
				r.pids[m[1]], _ = strconv.Atoi(m[2])
			}
			if m := localBootstrapRE.FindStringSubmatch(line); m != nil {
				r.servers = m[1]
			}
		case <-r.exited:
			t.Fatalf("local-cluster exited before the bootstrap line: %v", r.err)
		case <-ctx.Done():
			t.Fatal("no bootstrap servers line")
		}
	}
	if len(r.pids) != n+1 {
		t.Fatalf("pids of ZooKeeper and %d brokers, got %v", n, r.pids)
	}
	return r
}

// wait waits for the process to exit and checks that none of ZooKeeper's
// and the brokers' processes is left; it returns the exit status.
func (r *localRun) wait(t *testing.T, ctx context.Context) error {
	t.Helper()
	select {
	case <-r.exited:
	case <-ctx.Done():
		t.Fatal("local-cluster did not exit")
	}
	for name, pid := range r.pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s (pid %d) is left after local-cluster exited: kill 0: %v", name, pid, err)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return r.err
}

// `sluice local-cluster --brokers 3` as a user runs it: it prints the
// bootstrap servers, a client produces to and consumes from a topic of
// replication factor 3 through them, and SIGTERM stops every broker and
// ZooKeeper (none of their processes is left) with exit code 0.
func TestLocalCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := startLocalCluster(t, ctx, 3)
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(r.servers, ",")...),
		kgo.ConsumeTopics("replicated"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 3, nil, "replicated")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create a topic of RF 3: %v", err)
	}
	const n = 30
	for i := range n {
		r := &kgo.Record{Topic: "replicated", Key: []byte(strconv.Itoa(i)), Value: []byte(fmt.Sprintf("v%d", i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	seen := map[string]bool{}
	for len(seen) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records", len(seen), n)
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	cl.Close()

	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := r.wait(t, ctx); err != nil {
		t.Fatalf("local-cluster after SIGTERM: %v", err)
	}
}

// A broker that dies is reported with its pid; when none is left,
// local-cluster stops ZooKeeper and exits 1.
func TestLocalClusterReportsExit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := startLocalCluster(t, ctx, 1)
	pid := r.pids["broker 0"]
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := r.wait(t, ctx)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("local-cluster with its only broker killed: %v, want exit status 1", err)
	}
	for _, want := range []string{fmt.Sprintf("broker 0 (pid %d) exited unexpectedly: signal: killed", pid), "every broker has exited"} {
		if !strings.Contains(r.stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr.String())
		}
	}
}

// freePorts returns the first of n consecutive ports free on 127.0.0.1,
// below Linux's ephemeral range (32768 on): a port chosen there may be
// taken by any process's outgoing connection before the broker binds it.
func freePorts(t testing.TB, n int) int {
	t.Helper()
	for range 100 {
		first := 20000 + rand.IntN(12000-n)
		free := true
		for p := first; free && p < first+n; p++ {
			free = portFree(net.JoinHostPort("127.0.0.1", strconv.Itoa(p))) == nil
		}
		if free {
			return first
		}
	}
	t.Fatalf("found no %d consecutive free ports", n)
	return 0
}

// Misuse is refused before anything starts: a bad flag value with the
// usage text (exit 2), a broker port already taken in one line (exit 1).
func TestLocalClusterRefuses(t *testing.T) {
	c := &cli{t: t, bin: buildSluice(t)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().(*net.TCPAddr).Port
	dir := filepath.Join(t.TempDir(), "cluster")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--brokers", "0"}, 2, "--brokers 0: want at least 1"},
		{[]string{"--port", "65535", "--brokers", "2"}, 2, "brokers would listen on ports up to 65536"},
		{[]string{"extra"}, 2, `unexpected argument "extra"`},
		{[]string{"--brokers", "1", "--port", strconv.Itoa(taken)}, 1, "cannot listen on 127.0.0.1:" + strconv.Itoa(taken)},
	} {
		r := c.runEnv(nil, "", append([]string{"local-cluster", "--dir", dir}, tc.args...)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("local-cluster %v: exit %d, want %d with %q\n%s", tc.args, r.code, tc.code, tc.want, r.stderr)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused local-cluster made its directory: %v", err)
	}
}
