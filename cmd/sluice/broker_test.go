package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// buildSluice returns the sluice binary, built once per test run into a
// directory TestMain removes.
func buildSluice(t testing.TB) string {
	t.Helper()
	build.once.Do(func() {
		build.bin = filepath.Join(build.dir, "sluice")
		out, err := exec.Command("go", "build", "-o", build.bin, ".").CombinedOutput()
		if err != nil {
			build.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.bin
}

var build struct {
	once sync.Once
	dir  string // made by TestMain
	bin  string
	err  error
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(etlMemberEnv); spec != "" {
		os.Exit(runETLMemberChild(spec)) // a member of txn_etl_test.go, as a child process
	}
	if sw := os.Getenv(fullDiskEnv); sw != "" {
		os.Exit(runFullDiskBroker(sw)) // a broker of cluster_diskfull_test.go, as a child process
	}
	dir, err := os.MkdirTemp("", "sluice-cmd-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	build.dir = dir
	code := m.Run()
	stopClusterZK()
	os.RemoveAll(dir)
	os.Exit(code)
}

var listeningRE = regexp.MustCompile(`msg="sluice broker listening" addr=(\S+)`)

// The binary as a user runs it: started with a data directory, it prints
// where it listens, serves a real client, and on SIGTERM finishes, flushes,
// leaves the clean-shutdown marker and exits 0.
func TestBrokerBinaryServesAndStopsCleanly(t *testing.T) {
	bin := buildSluice(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "broker", "--listen", "127.0.0.1:0", "--data", data)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listeningRE.FindStringSubmatch(sc.Text()); m != nil {
				addrc <- m[1]
			}
		}
	}()
	var addr string
	select {
	case addr = <-addrc:
	case <-ctx.Done():
		t.Fatal("the broker never said where it listens")
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DisableIdempotentWrite(), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 10 {
		r := &kgo.Record{Topic: "events", Value: []byte{byte('a' + i)}}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	cl.Close()

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("broker did not exit 0 after SIGTERM: %v", err)
	}
	if _, err := os.Stat(filepath.Join(data, ".clean-shutdown")); err != nil {
		t.Fatalf("no clean-shutdown marker after SIGTERM: %v", err)
	}
	if _, err := os.Stat(filepath.Join(data, "events-0", "00000000000000000000.log")); err != nil {
		t.Fatalf("the topic's log is missing: %v", err)
	}
}
