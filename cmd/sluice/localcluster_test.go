package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
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

// `sluice local-cluster --brokers 3` as a user runs it: it prints the
// bootstrap servers, a client produces to and consumes from a topic of
// replication factor 3 through them, and SIGTERM stops every broker and
// ZooKeeper (none of their processes is left) with exit code 0.
func TestLocalCluster(t *testing.T) {
	clusterZK(t) // skipped, or failed under CI, without ZooKeeper
	bin := buildSluice(t)
	dir := filepath.Join(t.TempDir(), "cluster")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command(bin, "local-cluster", "--brokers", "3", "--dir", dir, "--port", strconv.Itoa(freePorts(t, 3)))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	pids := map[string]int{}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		exited <- cmd.Wait()
	}()
	defer func() {
		if t.Failed() {
			cmd.Process.Kill()
			t.Logf("local-cluster's stderr:\n%s", stderr.String())
			for i := range 3 {
				p := filepath.Join(dir, fmt.Sprintf("broker-%d.log", i))
				t.Logf("the end of %s:\n%s", p, tailFile(p, 30))
			}
		}
	}()
	var servers string
	for servers == "" {
		select {
		case line := <-lines:
			t.Log(line)
			if m := localPidRE.FindStringSubmatch(line); m != nil {
				pids[m[1]], _ = strconv.Atoi(m[2])
			}
			if m := localBootstrapRE.FindStringSubmatch(line); m != nil {
				servers = m[1]
			}
		case err := <-exited:
			t.Fatalf("local-cluster exited before the bootstrap line: %v", err)
		case <-ctx.Done():
			t.Fatal("no bootstrap servers line")
		}
	}
	if len(pids) != 4 {
		t.Fatalf("pids of ZooKeeper and 3 brokers, got %v", pids)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(servers, ",")...),
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

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("local-cluster after SIGTERM: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("local-cluster did not exit after SIGTERM")
	}
	for name, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s (pid %d) is left after local-cluster exited: kill 0: %v", name, pid, err)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// freePorts returns the first of n consecutive ports free on 127.0.0.1.
func freePorts(t *testing.T, n int) int {
	t.Helper()
	for range 50 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		first := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		free := first+n-1 <= 65535
		for p := first + 1; free && p < first+n; p++ {
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
