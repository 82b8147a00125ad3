package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// haveKcat reports whether kcat (librdkafka, an independent client) is
// installed for a test's kcat part. Without it the test fails when $CI is
// set, as the broker package's kcat tests do, and otherwise logs that the
// part is skipped.
func haveKcat(t *testing.T) bool {
	t.Helper()
	_, err := exec.LookPath("kcat")
	switch {
	case err == nil:
		return true
	case os.Getenv("CI") != "":
		t.Fatalf("kcat is not installed (apt-get install kcat): %v", err)
	default:
		t.Logf("kcat is not installed: its part of the test skipped (%v)", err)
	}
	return false
}

// kcat runs kcat with args and returns its standard output.
func kcat(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kcat", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v (%v)\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, ctx.Err(), stdout.String(), stderr.String())
	}
	return stdout.String()
}

// kcatConsumer is a kcat consumer running in the background: kcat -C of
// one partition from the beginning until it has read count records (-c),
// with librdkafka's fetch debug log (-d fetch) on its standard error,
// which names every Fetch it sends and the offset it asks for.
type kcatConsumer struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once it has exited; err is then its status
	err    error

	mu struct {
		sync.Mutex
		out     bytes.Buffer  // its standard output so far
		fetches map[int64]int // Fetch requests sent, by offset
	}
}

var kcatFetchLine = regexp.MustCompile(`Fetch topic (\S+) \[(\d+)\] at offset (\d+)`)

// startKcatConsumer starts kcat reading topic-partition through the
// brokers at addrs, values one a line; it is killed at cleanup.
func startKcatConsumer(t *testing.T, addrs []string, topic string, partition int32, count int) *kcatConsumer {
	t.Helper()
	k := &kcatConsumer{exited: make(chan struct{})}
	k.mu.fetches = map[int64]int{}
	k.cmd = exec.Command("kcat", "-b", strings.Join(addrs, ","), "-C", "-t", topic, "-p", strconv.Itoa(int(partition)),
		"-o", "beginning", "-c", strconv.Itoa(count), "-d", "fetch", "-f", `%s\n`)
	k.cmd.Stdout = k
	stderr, err := k.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := k.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%s %d", topic, partition)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := kcatFetchLine.FindStringSubmatch(sc.Text()); m != nil && m[1]+" "+m[2] == want {
				off, _ := strconv.ParseInt(m[3], 10, 64)
				k.mu.Lock()
				k.mu.fetches[off]++
				k.mu.Unlock()
			}
		}
		k.err = k.cmd.Wait()
		close(k.exited)
	}()
	t.Cleanup(func() {
		k.cmd.Process.Kill()
		<-k.exited
	})
	return k
}

// Write takes kcat's standard output.
func (k *kcatConsumer) Write(b []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.mu.out.Write(b)
}

// state returns what kcat has printed and how many Fetches it has sent at
// offset.
func (k *kcatConsumer) state(offset int64) (out string, fetches int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.mu.out.String(), k.mu.fetches[offset]
}
