package main

// Consumer groups as a user runs them: sluice consume --group processes and
// sluice group commands against an in-process broker whose group timeouts
// are lowered.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-io/sluice/broker"
	"github.com/sluice-io/sluice/config"
)

// fastMember are consume flags that make a group member notice rebalances
// and commit within a tenth of a second.
var fastMember = []string{"--heartbeat-interval", "100ms", "--commit-interval", "100ms", "--session-timeout", "3s"}

// newGroupCLI is newCLI with a broker that starts a group's first
// rebalance at once and takes sessions down to 100 ms.
func newGroupCLI(t *testing.T) *cli {
	t.Helper()
	zero := time.Duration(0)
	b, err := broker.New(config.Config{
		DataDir: t.TempDir(), Listen: "127.0.0.1:0",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Groups: config.GroupConfig{InitialRebalanceDelay: &zero, MinSessionTimeout: 100 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Serve(ln) }()
	t.Cleanup(func() { b.Close(); <-done })
	return &cli{t: t, bin: buildSluice(t), brokers: ln.Addr().String()}
}

// proc is a sluice process running in the background, its standard output
// read line by line.
type proc struct {
	t      *testing.T
	args   []string
	cmd    *exec.Cmd
	lines  chan string // closed at the end of standard output
	stderr bytes.Buffer
	waited bool
}

// start starts `sluice args... --brokers ...`.
func (c *cli) start(args ...string) *proc {
	c.t.Helper()
	p := &proc{t: c.t, args: args, lines: make(chan string, 1024)}
	p.cmd = exec.Command(c.bin, append(args, "--brokers", c.brokers)...)
	p.cmd.Stderr = &p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	c.t.Cleanup(func() {
		if !p.waited {
			p.cmd.Process.Kill()
			for range p.lines {
			}
			p.cmd.Wait()
		}
	})
	return p
}

// stop sends sig, waits for the process to end and returns the lines it
// printed since the last read and its exit code.
func (p *proc) stop(sig syscall.Signal) ([]string, int) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
	timer := time.AfterFunc(30*time.Second, func() { p.cmd.Process.Kill() })
	defer timer.Stop()
	var rest []string
	for l := range p.lines {
		rest = append(rest, l)
	}
	err := p.cmd.Wait()
	p.waited = true
	var exit *exec.ExitError
	switch {
	case err == nil:
		return rest, 0
	case errors.As(err, &exit):
		return rest, exit.ExitCode()
	}
	p.t.Fatalf("sluice %v: %v", p.args, err)
	return nil, 0
}

// readLines reads lines from the processes until want lines came in all,
// and returns each process's lines.
func readLines(t *testing.T, want int, procs ...*proc) [][]string {
	t.Helper()
	got := make([][]string, len(procs))
	deadline := time.After(30 * time.Second)
	// One reader per process feeds one channel, so that no process's
	// output waits behind another's.
	type line struct {
		from int
		text string
	}
	all := make(chan line)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i, p := range procs {
		go func() {
			for {
				select {
				case l, ok := <-p.lines:
					if !ok {
						return
					}
					select {
					case all <- line{i, l}:
					case <-ctx.Done():
						return
					}
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	for n := 0; n < want; n++ {
		select {
		case l := <-all:
			got[l.from] = append(got[l.from], l.text)
		case <-deadline:
			t.Fatalf("read %d of %d lines: %v", n, want, got)
		}
	}
	return got
}

// waitFor runs `sluice args...` every 50 ms until check accepts its
// standard output, or fails the test after 30 s.
func (c *cli) waitFor(what string, check func(out string) bool, args ...string) string {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		r := c.run("", args...)
		if r.code == 0 && check(r.stdout) {
			return r.stdout
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("waiting for %s: sluice %v: exit %d\n%s%s", what, args, r.code, r.stdout, r.stderr)
		}
		<-tick.C
	}
}

// tableRows returns the rows of the first table in out whose header line
// starts with the words of header, split into fields.
func tableRows(out, header string) [][]string {
	var rows [][]string
	in := false
	words := strings.Fields(header)
	for l := range strings.SplitSeq(out, "\n") {
		switch {
		case !in && slices.Equal(firstN(strings.Fields(l), len(words)), words):
			in = true
		case in && strings.TrimSpace(l) == "":
			return rows
		case in:
			rows = append(rows, strings.Fields(l))
		}
	}
	return rows
}

// firstN is s up to its first n elements.
func firstN(s []string, n int) []string {
	return s[:min(n, len(s))]
}

// membersTable is the header of describe's members table.
const membersTable = "GROUP  CONSUMER-ID"

// offsetsTable is the header of describe's offsets table.
const offsetsTable = "GROUP  TOPIC"

// stableWith is a describe check: the group is Stable with n members, each
// assigned partitions.
func stableWith(n int) func(string) bool {
	return func(out string) bool {
		state := tableRows(out, "GROUP  COORDINATOR")
		members := tableRows(out, membersTable)
		if len(state) != 1 || state[0][4] != "Stable" || len(members) != n {
			return false
		}
		for _, m := range members {
			if m[5] == "0" {
				return false
			}
		}
		return true
	}
}

// lagZero is a describe check: every partition of the topic, 0 to n-1,
// committed at the log end.
func lagZero(n int) func(string) bool {
	return func(out string) bool {
		rows := tableRows(out, offsetsTable)
		if len(rows) != n {
			return false
		}
		for i, r := range rows {
			if r[2] != strconv.Itoa(i) || r[3] != r[4] || r[5] != "0" {
				return false
			}
		}
		return true
	}
}

// values returns the values of "PARTITION VALUE" lines, sorted, and the
// partitions they came from.
func values(lines []string) ([]string, map[string]bool) {
	var vs []string
	parts := map[string]bool{}
	for _, l := range lines {
		p, v, _ := strings.Cut(l, " ")
		parts[p] = true
		vs = append(vs, v)
	}
	slices.Sort(vs)
	return vs, parts
}

// produced is the sorted values v000..v(n-1) as produce gets them, and
// the lines to produce them.
func produced(n int) (sorted []string, input string) {
	var in strings.Builder
	for i := range n {
		v := fmt.Sprintf("v%03d", i)
		sorted = append(sorted, v)
		in.WriteString(v + "\n")
	}
	return sorted, in.String()
}

func TestGroupConsumeAndAdmin(t *testing.T) {
	c := newGroupCLI(t)
	c.ok("", "topic", "create", "work", "--partitions", "4")
	member := append([]string{"consume", "work", "--group", "g", "--from", "beginning", "--format", `%p %v\n`}, fastMember...)

	// Two members share the four partitions.
	a := c.start(member...)
	c.waitFor("the first member", stableWith(1), "group", "describe", "g", "--state", "--members")
	b := c.start(member...)
	out := c.waitFor("two members", stableWith(2), "group", "describe", "g", "--state", "--members")
	for _, m := range tableRows(out, membersTable) {
		if m[2] != "-" || m[3] != "/127.0.0.1" || m[4] != "sluice-cli" || m[5] != "2" {
			t.Errorf("member %v: want no instance id, host /127.0.0.1, client sluice-cli, 2 partitions\n%s", m, out)
		}
	}

	// Together they print every record once, each from its partitions.
	want, input := produced(100)
	c.ok(input, "produce", "work")
	got := readLines(t, 100, a, b)
	va, pa := values(got[0])
	vb, pb := values(got[1])
	if all := slices.Sorted(slices.Values(append(va, vb...))); !slices.Equal(all, want) {
		t.Errorf("the members printed %d and %d records, together %v", len(va), len(vb), all)
	}
	if len(va) == 0 || len(vb) == 0 {
		t.Errorf("one member printed nothing: %d and %d records", len(va), len(vb))
	}
	for p := range pa {
		if pb[p] {
			t.Errorf("partition %s printed by both members", p)
		}
	}

	// A second group gets every record too, and commits what it printed
	// before it exits.
	out = c.ok("", "consume", "work", "--group", "other", "--from", "beginning", "-n", "100")
	if got := strings.Fields(out); !slices.Equal(slices.Sorted(slices.Values(got)), want) {
		t.Errorf("the second group printed %d records", len(got))
	}
	if out := c.ok("", "group", "describe", "other", "--offsets"); !lagZero(4)(out) {
		t.Errorf("the second group after its run:\n%s", out)
	}

	// The first group's commits reach the log end; describe shows both
	// members on the partitions they printed.
	out = c.waitFor("lag 0", func(out string) bool { return lagZero(4)(out) && stableWith(2)(out) }, "group", "describe", "g")
	consumers := map[string]bool{}
	for _, r := range tableRows(out, offsetsTable) {
		if r[4] != "25" || r[7] != "/127.0.0.1" || r[8] != "sluice-cli" {
			t.Errorf("offsets row %v: want log end 25, host and client id", r)
		}
		consumers[r[6]] = true
	}
	if len(consumers) != 2 {
		t.Errorf("describe shows %d consumers on the partitions:\n%s", len(consumers), out)
	}

	// While the members run the group can neither be reset nor deleted.
	c.fails(1, "assignments can only be reset if the group 'g' is inactive, but the current state is Stable", "",
		"group", "reset-offsets", "g", "--topic", "work", "--to-earliest", "--execute")
	c.fails(1, "group g: NON_EMPTY_GROUP: The group is not empty. (it has active members: stop its consumers first)", "", "group", "delete", "g")
	out = c.ok("", "group", "list")
	if want := [][]string{{"g", "Stable", "consumer"}, {"other", "Empty", "consumer"}}; !slices.EqualFunc(tableRows(out, "GROUP  STATE"), want, slices.Equal) {
		t.Errorf("list:\n%s", out)
	}

	// Stopped, the members commit, leave and exit 0.
	for _, s := range []struct {
		p   *proc
		sig syscall.Signal
	}{{a, syscall.SIGTERM}, {b, syscall.SIGINT}} {
		if rest, code := s.p.stop(s.sig); code != 0 || len(rest) != 0 || s.p.stderr.Len() != 0 {
			t.Errorf("after %v: exit %d, more lines %q, stderr %q", s.sig, code, rest, s.p.stderr.String())
		}
	}
	out = c.ok("", "group", "describe", "g")
	if !strings.Contains(out, "Consumer group 'g' has no active members.\n") || !lagZero(4)(out) || tableRows(out, "GROUP  COORDINATOR")[0][4] != "Empty" {
		t.Errorf("describe after the members left:\n%s", out)
	}

	// A dry run changes nothing; --execute rewinds the group, and a new
	// member, told to start at the end, reads everything again.
	r := c.run("", "group", "reset-offsets", "g", "--topic", "work", "--to-earliest")
	plan := "GROUP  TOPIC  PARTITION  NEW-OFFSET\n" +
		"g      work   0          0\ng      work   1          0\ng      work   2          0\ng      work   3          0\n"
	if r.code != 0 || r.stdout != plan || !strings.Contains(r.stderr, "dry run") {
		t.Errorf("dry run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if out := c.ok("", "group", "describe", "g"); !lagZero(4)(out) {
		t.Errorf("the dry run changed the offsets:\n%s", out)
	}
	if out := c.ok("", "group", "reset-offsets", "g", "--topic", "work", "--to-earliest", "--execute"); out != plan {
		t.Errorf("reset: %q", out)
	}
	out = c.ok("", "consume", "work", "--group", "g", "--from", "end", "-n", "100")
	if got := strings.Fields(out); !slices.Equal(slices.Sorted(slices.Values(got)), want) {
		t.Errorf("after the reset the group read %d records", len(got))
	}

	// An empty group is deleted, then gone.
	if out := c.ok("", "group", "delete", "g"); out != "Deleted consumer group g.\n" {
		t.Errorf("delete: %q", out)
	}
	c.fails(1, "group g: GROUP_ID_NOT_FOUND", "", "group", "delete", "g")
	c.fails(1, "consumer group 'g' does not exist.", "", "group", "describe", "g")
	if out := c.ok("", "group", "list"); out != "GROUP  STATE  PROTOCOL-TYPE\nother  Empty  consumer\n" {
		t.Errorf("list after delete: %q", out)
	}
}

// With -n the group commits exactly the records printed: the next run
// prints the rest and nothing twice.
func TestGroupConsumeCommitsWhatItPrinted(t *testing.T) {
	c := newGroupCLI(t)
	c.ok("", "topic", "create", "count", "--partitions", "3")
	want, input := produced(60)
	c.ok(input, "produce", "count")
	var seen []string
	for _, n := range []int{7, 1, 30, 22} {
		out := c.ok("", "consume", "count", "--group", "counted", "--from", "beginning", "-n", strconv.Itoa(n))
		got := strings.Fields(out)
		if len(got) != n {
			t.Fatalf("-n %d printed %d records", n, len(got))
		}
		seen = append(seen, got...)
		committed := 0
		for _, r := range tableRows(c.ok("", "group", "describe", "counted", "--offsets"), offsetsTable) {
			at, _ := strconv.Atoi(r[3])
			committed += at
		}
		if committed != len(seen) {
			t.Errorf("after %d records printed, %d committed", len(seen), committed)
		}
	}
	if slices.Sort(seen); !slices.Equal(seen, want) {
		t.Errorf("four runs printed %v", seen)
	}
	// Nothing is left: a run with --timeout prints nothing and exits 0.
	if out := c.ok("", "consume", "count", "--group", "counted", "--timeout", "500ms"); out != "" {
		t.Errorf("after everything was read: %q", out)
	}
}

func TestGroupResetOffsets(t *testing.T) {
	c := newGroupCLI(t)
	c.ok("", "topic", "create", "r", "--partitions", "2")
	c.ok("", "topic", "create", "s")
	_, input := produced(10)
	c.ok(input, "produce", "r")
	c.ok("s0\ns1\ns2\n", "produce", "s")
	c.ok("", "consume", "r", "--group", "rg", "--from", "beginning", "-n", "10")

	offsets := func() string {
		var s []string
		for _, r := range tableRows(c.ok("", "group", "describe", "rg", "--offsets"), offsetsTable) {
			s = append(s, r[1]+"/"+r[2]+"@"+r[3])
		}
		return strings.Join(s, " ")
	}
	for _, tc := range []struct {
		args []string
		want string // the offsets after
	}{
		{[]string{"--topic", "r:0", "--to-offset", "2"}, "r/0@2 r/1@5"},
		{[]string{"--topic", "r:1", "--to-offset", "99"}, "r/0@2 r/1@5"}, // clamped to the end
		{[]string{"--all-topics", "--to-earliest"}, "r/0@0 r/1@0"},
		{[]string{"--topic", "r", "--to-latest"}, "r/0@5 r/1@5"},
		{[]string{"--topic", "r", "--to-datetime", "0"}, "r/0@0 r/1@0"},
		{[]string{"--topic", "r:1", "--to-datetime", time.Now().Add(time.Hour).Format(time.RFC3339)}, "r/0@0 r/1@5"},
		{[]string{"--topic", "s", "--topic", "r:0,1", "--to-offset", "1"}, "r/0@1 r/1@1 s/0@1"},
	} {
		r := c.run("", append([]string{"group", "reset-offsets", "rg", "--execute"}, tc.args...)...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "GROUP  TOPIC  PARTITION  NEW-OFFSET\n") {
			t.Errorf("reset %v: exit %d\n%s%s", tc.args, r.code, r.stdout, r.stderr)
			continue
		}
		if got := offsets(); got != tc.want {
			t.Errorf("reset %v: offsets %s, want %s", tc.args, got, tc.want)
		}
	}
	// From the reset offsets: r from 1 (4 + 4 records), s from 1 (2).
	if out := c.ok("", "consume", "r", "--group", "rg", "-n", "8", "--format", `%p/%o `); len(strings.Fields(out)) != 8 || strings.Contains(out, "/0 ") {
		t.Errorf("after the reset: %q", out)
	}

	c.fails(1, "topic nope: UNKNOWN_TOPIC_OR_PARTITION", "", "group", "reset-offsets", "rg", "--topic", "nope", "--to-earliest")
	c.fails(1, "topic r has no partition 7 (it has 2)", "", "group", "reset-offsets", "rg", "--topic", "r:7", "--to-earliest")
	c.fails(1, "group fresh has no committed offsets", "", "group", "reset-offsets", "fresh", "--all-topics", "--to-earliest")
	// A group that does not exist yet gets offsets, as in Kafka.
	c.ok("", "group", "reset-offsets", "fresh", "--topic", "s", "--to-offset", "2", "--execute")
	if out := c.ok("", "consume", "s", "--group", "fresh", "-n", "1"); out != "s2\n" {
		t.Errorf("a group made by reset-offsets: %q", out)
	}
	for _, bad := range [][]string{
		{"group", "reset-offsets", "rg", "--topic", "r"},
		{"group", "reset-offsets", "rg", "--topic", "r", "--to-earliest", "--to-latest"},
		{"group", "reset-offsets", "rg", "--to-earliest"},
		{"group", "reset-offsets", "rg", "--topic", "r", "--all-topics", "--to-earliest"},
		{"group", "reset-offsets", "rg", "--topic", "r:x", "--to-earliest"},
		{"group", "reset-offsets", "rg", "--topic", "r", "--to-offset", "-1"},
		{"group", "reset-offsets", "rg", "--topic", "r", "--to-datetime", "yesterday"},
		{"group", "reset-offsets", "rg", "--topic", "r", "--to-earliest", "--execute", "--dry-run"},
		{"group", "reset-offsets", "--topic", "r", "--to-earliest"},
		{"group", "delete"},
		{"group", "list", "extra"},
		{"group", "nope"},
		{"consume", "r", "--group", "g", "--partition", "0"},
		{"consume", "r", "--group", "g", "--offset", "0"},
		{"consume", "r", "--group", "g", "--balancer", "fair"},
		{"consume", "r", "--balancer", "range"},
		{"consume", "r", "--group", ""},
	} {
		if r := c.run("", bad...); r.code != 2 || !strings.Contains(r.stderr, "usage:") {
			t.Errorf("sluice %v: exit %d, want 2 with usage\n%s", bad, r.code, r.stderr)
		}
	}
}

// Every balancer assigns; a static member shows its instance id and, as
// Kafka's clients do, keeps its place in the group after it exits until its
// session times out.
func TestGroupBalancersAndStaticMember(t *testing.T) {
	c := newGroupCLI(t)
	c.ok("", "topic", "create", "bal", "--partitions", "2")
	c.ok("a\nb\n", "produce", "bal")
	for _, bal := range []string{"range", "roundrobin", "sticky", "cooperative-sticky"} {
		out := c.ok("", "consume", "bal", "--group", "g-"+bal, "--balancer", bal, "--from", "beginning", "-n", "2")
		if got := strings.Fields(out); len(got) != 2 {
			t.Errorf("--balancer %s: %q", bal, out)
		}
	}

	args := append([]string{"consume", "bal", "--group", "static", "--instance-id", "host-1", "--from", "beginning"}, fastMember...)
	p := c.start(append(args, "--session-timeout", "1s")...)
	readLines(t, 2, p)
	out := c.waitFor("the static member", stableWith(1), "group", "describe", "static", "--state", "--members")
	if m := tableRows(out, membersTable)[0]; m[2] != "host-1" || m[6] != "bal(0,1)" {
		t.Errorf("static member: %v", m)
	}
	if _, code := p.stop(syscall.SIGINT); code != 0 {
		t.Errorf("static member: exit %d, stderr %q", code, p.stderr.String())
	}
	c.waitFor("the session to time out", func(out string) bool { return strings.Contains(out, "has no active members") },
		"group", "describe", "static")
}

func TestGroupUnreachableAndUsage(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := &cli{t: t, bin: buildSluice(t), brokers: addr}
	for _, args := range [][]string{
		{"group", "list"},
		{"group", "describe", "g"},
		{"group", "delete", "g"},
		{"group", "reset-offsets", "g", "--topic", "t", "--to-earliest"},
		{"consume", "t", "--group", "g"},
	} {
		c.fails(1, "cannot reach broker "+addr+": connection refused", "", args...)
	}
	for _, args := range [][]string{
		{"group", "-h"}, {"group", "list", "-h"}, {"group", "describe", "-h"}, {"group", "delete", "-h"}, {"group", "reset-offsets", "-h"},
	} {
		r := c.runEnv(nil, "", args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "usage: sluice group") || r.stderr != "" {
			t.Errorf("sluice %v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
	}
}
