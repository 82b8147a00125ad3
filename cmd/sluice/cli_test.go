package main

// The console tools as a user runs them: the built binary against an
// in-process broker on a loopback port, checked by stdout, stderr and exit
// code.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/broker"
	"github.com/sluice-io/sluice/config"
)

// cli runs the sluice binary against one broker.
type cli struct {
	t       *testing.T
	bin     string
	brokers string
}

func newCLI(t *testing.T) *cli {
	t.Helper()
	return &cli{t: t, bin: buildSluice(t), brokers: startBenchBroker(t)}
}

// result is what one run of the binary left.
type result struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

// run runs `sluice args...` with --brokers after the subcommand words
// (flags may follow positional arguments) and stdin as standard input.
func (c *cli) run(stdin string, args ...string) result {
	c.t.Helper()
	return c.runEnv(nil, stdin, append(args, "--brokers", c.brokers)...)
}

// runEnv runs the binary with args as given and env added.
func (c *cli) runEnv(env []string, stdin string, args ...string) result {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	default:
		c.t.Fatalf("sluice %v: %v", args, err)
	}
	if ctx.Err() != nil {
		c.t.Fatalf("sluice %v did not finish in time\nstdout:\n%s\nstderr:\n%s", args, r.stdout, r.stderr)
	}
	return r
}

// ok runs the binary and fails the test unless it exits 0; it returns
// standard output.
func (c *cli) ok(stdin string, args ...string) string {
	c.t.Helper()
	r := c.run(stdin, args...)
	if r.code != 0 {
		c.t.Fatalf("sluice %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// fails runs the binary and fails the test unless it exits with code and
// one line on stderr containing want.
func (c *cli) fails(code int, want, stdin string, args ...string) result {
	c.t.Helper()
	r := c.run(stdin, args...)
	if r.code != code || !strings.Contains(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 {
		c.t.Fatalf("sluice %v: exit %d, want %d and one line on stderr with %q\nstdout:\n%s\nstderr:\n%s", args, r.code, code, want, r.stdout, r.stderr)
	}
	return r
}

// kafkaPartition is where Kafka's (and franz-go's) default partitioner
// puts a keyed record: murmur2 of the key.
func kafkaPartition(key string, partitions int) int32 {
	p := kgo.StickyKeyPartitioner(nil).ForTopic("")
	return int32(p.Partition(&kgo.Record{Key: []byte(key)}, partitions))
}

func TestTopicCreateListDescribe(t *testing.T) {
	c := newCLI(t)
	if out := c.ok("", "topic", "create", "orders", "--partitions", "3", "--replicas", "1"); out != "Created topic orders.\n" {
		t.Errorf("create: %q", out)
	}
	c.fails(1, "TOPIC_ALREADY_EXISTS: Topic with this name already exists.", "", "topic", "create", "orders", "--partitions", "3")
	c.fails(1, "INVALID_REPLICATION_FACTOR", "", "topic", "create", "wide", "--replicas", "3")
	c.ok("", "topic", "create", "--partitions", "1", "audit") // flags before the name too
	c.ok("", "topic", "create", "__hidden")                   // the broker's default partitions

	if out := c.ok("", "topic", "list"); out != "audit\norders\n" {
		t.Errorf("list: %q", out)
	}
	if out := c.ok("", "topic", "list", "--internal"); out != "__hidden\naudit\norders\n" {
		t.Errorf("list --internal: %q", out)
	}

	out := c.ok("", "topic", "describe", "orders")
	header := regexp.MustCompile(`^Topic: orders\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: 3\tReplicationFactor: 1\tConfigs:.*\n`)
	if !header.MatchString(out) {
		t.Fatalf("describe header:\n%s", out)
	}
	parts := header.ReplaceAllString(out, "")
	want := "\tTopic: orders\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0\tOffsets: 0-0\n" +
		"\tTopic: orders\tPartition: 1\tLeader: 0\tReplicas: 0\tIsr: 0\tOffsets: 0-0\n" +
		"\tTopic: orders\tPartition: 2\tLeader: 0\tReplicas: 0\tIsr: 0\tOffsets: 0-0\n"
	if parts != want {
		t.Errorf("describe partitions:\n%s\nwant:\n%s", parts, want)
	}

	// Offsets follow what was produced: keyless records round robin.
	c.ok("a\nb\nc\nd\ne\n", "produce", "orders")
	out = c.ok("", "topic", "describe", "orders")
	for p, end := range []int{2, 2, 1} {
		line := fmt.Sprintf("\tTopic: orders\tPartition: %d\tLeader: 0\tReplicas: 0\tIsr: 0\tOffsets: 0-%d\n", p, end)
		if !strings.Contains(out, line) {
			t.Errorf("describe after producing lacks %q:\n%s", line, out)
		}
	}

	// No name: every topic but the internal ones, sorted.
	out = c.ok("", "topic", "describe")
	if got := regexp.MustCompile(`(?m)^Topic: (\S+)`).FindAllStringSubmatch(out, -1); len(got) != 2 || got[0][1] != "audit" || got[1][1] != "orders" {
		t.Errorf("describe of all topics:\n%s", out)
	}
	r := c.run("", "topic", "describe", "orders", "missing")
	if r.code != 1 || !strings.Contains(r.stderr, "topic missing: UNKNOWN_TOPIC_OR_PARTITION") || !strings.Contains(r.stdout, "Topic: orders\t") {
		t.Errorf("describe with a missing topic: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// Keyed lines land by Kafka's murmur2 hash, the same key always in the
// same partition; they come back with their keys, partitions and offsets.
func TestProduceConsumeKeyed(t *testing.T) {
	c := newCLI(t)
	c.ok("", "topic", "create", "events", "--partitions", "3")
	keys := []string{"alice", "bob", "carol", "dave", "alice", "erin", "bob", "alice", "frank", "carol"}
	var in strings.Builder
	for i, k := range keys {
		fmt.Fprintf(&in, "%s:value %d: with a colon\n", k, i)
	}
	c.ok(in.String(), "produce", "events", "--key-separator", ":")

	// Expected: per partition, the records in the order produced.
	perPartition := map[int32][]string{}
	var all []string
	for i, k := range keys {
		p := kafkaPartition(k, 3)
		line := fmt.Sprintf("%s %d %d value %d: with a colon", k, p, len(perPartition[p]), i)
		perPartition[p] = append(perPartition[p], line)
		all = append(all, line)
	}
	if len(perPartition) < 2 {
		t.Fatalf("the keys hash to %d partition(s); the test needs keys that spread", len(perPartition))
	}
	out := c.ok("", "consume", "events", "--from", "beginning", "-n", fmt.Sprint(len(keys)), "--format", `%k %p %o %v\n`)
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	slices.Sort(got)
	slices.Sort(all)
	if !slices.Equal(got, all) {
		t.Errorf("consumed:\n%s\nwant (any order):\n%s", strings.Join(got, "\n"), strings.Join(all, "\n"))
	}
	for p, lines := range perPartition {
		out := c.ok("", "consume", "events", "--partition", fmt.Sprint(p), "--from", "beginning", "-n", fmt.Sprint(len(lines)), "--format", `%k %p %o %v\n`)
		if want := strings.Join(lines, "\n") + "\n"; out != want {
			t.Errorf("partition %d:\n%s\nwant:\n%s", p, out, want)
		}
	}

	// A second run puts the same keys in the same partitions.
	c.ok("alice:again\nbob:again\n", "produce", "events", "--key-separator", ":")
	out = c.ok("", "consume", "events", "--partition", fmt.Sprint(kafkaPartition("alice", 3)), "--offset", fmt.Sprint(len(perPartition[kafkaPartition("alice", 3)])), "-n", "1", "--format", `%k=%v`)
	if out != "alice=again" {
		t.Errorf("alice's second record: %q", out)
	}
}

// Keyless lines round robin by default and with --partitioner round-robin;
// --partition pins them.
func TestProducePartitioning(t *testing.T) {
	c := newCLI(t)
	for _, tc := range []struct {
		name string
		args []string
		want []string // per partition, the values in order
	}{
		{"default", nil, []string{"l0 l3 l6", "l1 l4", "l2 l5"}},
		{"round-robin", []string{"--partitioner", "round-robin", "--key-separator", "="}, []string{"l0 l3 l6", "l1 l4", "l2 l5"}},
		{"partition", []string{"--partition", "2"}, []string{"", "", "l0 l1 l2 l3 l4 l5 l6"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "rr-" + tc.name
			c.ok("", "topic", "create", topic, "--partitions", "3")
			c.ok("l0\nl1\nl2\nl3\nl4\nl5\nl6\n", append([]string{"produce", topic}, tc.args...)...)
			describe := c.ok("", "topic", "describe", topic)
			for p, want := range tc.want {
				n := len(strings.Fields(want))
				if line := fmt.Sprintf("Partition: %d\tLeader: 0\tReplicas: 0\tIsr: 0\tOffsets: 0-%d\n", p, n); !strings.Contains(describe, line) {
					t.Errorf("describe lacks %q:\n%s", line, describe)
				}
				if n == 0 {
					continue
				}
				out := c.ok("", "consume", topic, "--partition", fmt.Sprint(p), "--from", "beginning", "-n", fmt.Sprint(n), "--format", `%v `)
				if got := strings.TrimSpace(out); got != want {
					t.Errorf("partition %d: %q, want %q", p, got, want)
				}
			}
		})
	}
	// Every partition: all seven.
	out := c.ok("", "consume", "rr-default", "--from", "beginning", "-n", "7", "--format", `%p:%o\n`)
	got := strings.Fields(out)
	slices.Sort(got)
	if want := []string{"0:0", "0:1", "0:2", "1:0", "1:1", "2:0", "2:1"}; !slices.Equal(got, want) {
		t.Errorf("all partitions: %v, want %v", got, want)
	}
}

func TestConsumeOffsetsAndFormat(t *testing.T) {
	c := newCLI(t)
	c.ok("", "topic", "create", "log", "--partitions", "1")
	c.ok("zero\none\ntwo\nthree\n\nfive\r\nk:v\n", "produce", "log", "--header", "app=sluice", "--header", "eq=a=b")

	all := c.ok("", "consume", "log", "--from", "beginning", "-n", "7", "--format", `%T/%p/%o [%k] %v|%h\n`)
	want := "log/0/0 [] zero|app=sluice,eq=a=b\n" +
		"log/0/1 [] one|app=sluice,eq=a=b\n" +
		"log/0/2 [] two|app=sluice,eq=a=b\n" +
		"log/0/3 [] three|app=sluice,eq=a=b\n" +
		"log/0/4 [] |app=sluice,eq=a=b\n" +
		"log/0/5 [] five|app=sluice,eq=a=b\n" +
		"log/0/6 [] k:v|app=sluice,eq=a=b\n"
	if all != want {
		t.Errorf("consume:\n%s\nwant:\n%s", all, want)
	}
	if out := c.ok("", "consume", "log", "--offset", "5", "-n", "2"); out != "five\nk:v\n" {
		t.Errorf("--offset 5: %q", out)
	}
	if out := c.ok("", "consume", "log", "--offset", "99", "--timeout", "200ms"); out != "" {
		t.Errorf("--offset past the end: %q", out)
	}
	if out := c.ok("", "consume", "log", "--timeout", "200ms"); out != "" {
		t.Errorf("from the end: %q", out)
	}
	if out := c.ok("", "consume", "log", "--from", "beginning", "-n", "1", "--format", `%%\t%o\\`); out != "%\t0\\" {
		t.Errorf("escapes: %q", out)
	}
	// Timestamps are the producer's clock in Unix ms.
	before := time.Now().UnixMilli()
	c.ok("late\n", "produce", "log")
	out := c.ok("", "consume", "log", "--offset", "7", "-n", "1", "--format", `%t`)
	var ts int64
	if _, err := fmt.Sscan(out, &ts); err != nil || ts < before-1000 || ts > time.Now().UnixMilli()+1000 {
		t.Errorf("timestamp %q, want about %d", out, before)
	}

	for _, bad := range [][]string{
		{"consume", "log", "--format", "%x"},
		{"consume", "log", "--format", `\q`},
		{"consume", "log", "--format", "100%"},
		{"consume", "log", "--from", "middle"},
		{"consume", "log", "--from", "end", "--offset", "1"},
		{"consume", "log", "--offset", "-2"},
		{"consume", "log", "--from-time", "yesterday"},
		{"consume"},
		{"produce", "log", "--acks", "2"},
		{"produce", "log", "--acks", "1", "--idempotent"},
		{"produce", "log", "--compression", "brotli"},
		{"produce", "log", "--partitioner", "random"},
		{"produce", "log", "--partition", "1", "--partitioner", "hash"},
		{"produce", "log", "--header", "novalue"},
		{"topic", "create"},
		{"topic", "create", "x", "--partitions", "0"},
		{"topic", "alter-config", "log"},
		{"topic", "nope"},
	} {
		if r := c.run("", bad...); r.code != 2 || !strings.Contains(r.stderr, "usage:") {
			t.Errorf("sluice %v: exit %d, want 2 with usage\n%s", bad, r.code, r.stderr)
		}
	}
	c.fails(1, "topic log has no partition 4 (it has 1)", "", "consume", "log", "--partition", "4")
	c.fails(1, "topic nothere: UNKNOWN_TOPIC_OR_PARTITION", "", "consume", "nothere")
}

// Every acks setting and codec delivers; refused records fail the run with
// exit code 1 and the broker's error.
func TestProduceOptionsAndErrors(t *testing.T) {
	c := newCLI(t)
	c.ok("", "topic", "create", "opts", "--partitions", "2")
	n := 0
	for _, acks := range []string{"all", "1", "0"} {
		for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
			c.ok(fmt.Sprintf("%s-%s\n", acks, codec), "produce", "opts", "--acks", acks, "--compression", codec, "--partition", "1")
			n++
		}
	}
	c.ok("sticky\n", "produce", "opts", "--partitioner", "sticky", "--idempotent=false")
	c.ok("hash\n", "produce", "opts", "--partitioner", "hash", "--partition", "-1")
	out := c.ok("", "consume", "opts", "--partition", "1", "--from", "beginning", "-n", fmt.Sprint(n))
	// With acks 0 nothing orders one run's append before the next run's,
	// so compare as sets.
	got := strings.Fields(out)
	slices.Sort(got)
	if len(got) != n || !slices.Contains(got, "all-none") || !slices.Contains(got, "0-zstd") || !slices.Contains(got, "1-lz4") {
		t.Errorf("acks and codecs:\n%s", out)
	}

	c.fails(1, "line 1: ", "x\n", "produce", "opts", "--partition", "5")

	// A line longer than the batch limit is refused by the client; a
	// topic whose max.message.bytes allows it takes it.
	long := strings.Repeat("0123456789abcdef", 1<<16) + "+" // 1 MiB and a byte
	r := c.fails(1, "MESSAGE_TOO_LARGE", "short\n"+long+"\n", "produce", "opts")
	if !strings.Contains(r.stderr, "line 2:") {
		t.Errorf("the too-long line is not named: %s", r.stderr)
	}
	c.ok("", "topic", "create", "big", "--partitions", "1", "--config", "max.message.bytes=2097152")
	c.ok("short\n"+long+"\nafter\n", "produce", "big", "--max-message-bytes", "2097152")
	out = c.ok("", "consume", "big", "--from", "beginning", "-n", "3")
	if out != "short\n"+long+"\nafter\n" {
		t.Errorf("long line: got %d bytes back, want %d", len(out), len("short\n"+long+"\nafter\n"))
	}
}

// A broker that is not there is reported in one line, at once.
func TestUnreachableBroker(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := &cli{t: t, bin: buildSluice(t), brokers: addr}
	want := "cannot reach broker " + addr + ": connection refused"
	for _, args := range [][]string{
		{"topic", "list"},
		{"topic", "create", "t"},
		{"topic", "describe"},
		{"topic", "delete", "t"},
		{"topic", "alter-config", "t", "--set", "retention.ms=1"},
		{"produce", "t"},
		{"consume", "t"},
	} {
		r := c.fails(1, want, "line\n", args...)
		if r.elapsed > 5*time.Second {
			t.Errorf("sluice %v took %v to give up", args, r.elapsed)
		}
	}
	// Several seeds, none there: each named.
	r := c.runEnv(nil, "", "topic", "list", "--brokers", addr+",localhost:1")
	if r.code != 1 || !strings.Contains(r.stderr, "cannot reach any broker: "+addr+": connection refused; localhost:1: connection refused") {
		t.Errorf("two seeds: exit %d, %q", r.code, r.stderr)
	}
}

// $SLUICE_BROKERS is the default of --brokers; the flag wins.
func TestBrokersFromEnvironment(t *testing.T) {
	c := newCLI(t)
	c.ok("", "topic", "create", "envtopic")
	r := c.runEnv([]string{brokersEnv + "=" + c.brokers}, "", "topic", "list")
	if r.code != 0 || r.stdout != "envtopic\n" {
		t.Errorf("from the environment: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	r = c.runEnv([]string{brokersEnv + "=127.0.0.1:1"}, "", "topic", "list", "--brokers", c.brokers)
	if r.code != 0 || r.stdout != "envtopic\n" {
		t.Errorf("the flag over the environment: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	r = c.runEnv([]string{brokersEnv + "=127.0.0.1:1"}, "", "topic", "list")
	if r.code != 1 || !strings.Contains(r.stderr, "cannot reach broker 127.0.0.1:1") {
		t.Errorf("a bad environment value: exit %d, %q", r.code, r.stderr)
	}
}

// A consumer without a limit runs until SIGTERM or SIGINT and then exits 0.
func TestConsumeStopsCleanlyOnSignal(t *testing.T) {
	c := newCLI(t)
	c.ok("", "topic", "create", "live", "--partitions", "2")
	c.ok("first\n", "produce", "live")
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, c.bin, "consume", "live", "--from", "beginning", "--brokers", c.brokers)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, len("first\n"))
		if _, err := io.ReadFull(stdout, buf); err != nil || string(buf) != "first\n" {
			t.Fatalf("first record: %q, %v; stderr %s", buf, err, errb.String())
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("after %v: %v, stderr %q", sig, err, errb.String())
		}
		cancel()
	}
}

func TestUsage(t *testing.T) {
	c := &cli{t: t, bin: buildSluice(t)}
	r := c.runEnv(nil, "", "-h")
	for _, want := range []string{"topic", "produce", "consume", "group", "bench", "broker", "local-cluster"} {
		if !strings.Contains(r.stdout, "\n  "+want+" ") {
			t.Errorf("sluice -h lacks %s:\n%s", want, r.stdout)
		}
	}
	for _, args := range [][]string{
		{"topic", "-h"}, {"topic", "create", "-h"}, {"topic", "list", "-h"}, {"topic", "describe", "-h"},
		{"topic", "alter-config", "-h"}, {"topic", "delete", "-h"}, {"produce", "-h"}, {"consume", "--help"}, {"local-cluster", "-h"},
	} {
		r := c.runEnv(nil, "", args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "usage: sluice "+args[0]) || r.stderr != "" {
			t.Errorf("sluice %v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
	}
}

// A producer reading a terminal stops at SIGINT, delivers what it read and
// exits 0.
func TestProduceStopsCleanlyOnSignal(t *testing.T) {
	c := newCLI(t)
	c.ok("", "topic", "create", "typed")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, "produce", "typed", "--brokers", c.brokers)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if _, err := io.WriteString(stdin, "typed one\ntyped two\n"); err != nil {
		t.Fatal(err)
	}
	// The lines are in the topic while the producer still waits for more.
	if out := c.ok("", "consume", "typed", "--from", "beginning", "-n", "2"); out != "typed one\ntyped two\n" {
		t.Fatalf("consumed %q", out)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("after SIGINT: %v, stderr %q", err, errb.String())
	}
}

// A consumer whose broker goes away says so once on stderr and keeps
// trying until stopped.
func TestConsumeWarnsWhenBrokerGoes(t *testing.T) {
	b, err := broker.New(config.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- b.Serve(ln) }()
	closed := false
	closeBroker := func() {
		if !closed {
			closed = true
			b.Close()
			<-served
		}
	}
	defer closeBroker()
	c := &cli{t: t, bin: buildSluice(t), brokers: ln.Addr().String()}
	c.ok("", "topic", "create", "gone")
	c.ok("before\n", "produce", "gone")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, "consume", "gone", "--from", "beginning", "--brokers", c.brokers)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "before\n" {
		t.Fatalf("first record: %q, %v", line, err)
	}
	closeBroker()
	warning, err := bufio.NewReader(stderr).ReadString('\n')
	if want := "sluice consume: warning: cannot reach broker " + c.brokers + ": connection refused (retrying)\n"; err != nil || warning != want {
		t.Errorf("stderr: %q, %v; want %q", warning, err, want)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("after SIGTERM: %v", err)
	}
}
