package main

import (
	"strings"
	"testing"
)

// The console tools' transactions: sluice produce --transactional-id sends
// its input as one transaction, committed at the end or, with --abort,
// aborted; sluice consume --isolation-level read_committed prints the
// committed records only, read_uncommitted all of them.
func TestProduceConsumeTransactions(t *testing.T) {
	c := newCLI(t)
	c.ok("", "topic", "create", "eos", "--partitions", "2")
	c.ok("a\nb\nc\n", "produce", "eos", "--transactional-id", "cli-txn")
	c.ok("aborted-1\naborted-2\n", "produce", "eos", "--transactional-id", "cli-txn", "--abort")
	c.ok("d\n", "produce", "eos", "--transactional-id", "cli-txn")

	committed := c.ok("", "consume", "eos", "--from", "beginning", "--isolation-level", "read_committed", "-n", "4", "--timeout", "10s")
	if got := sortedLines(committed); got != "a b c d" {
		t.Errorf("read_committed printed %q, want a b c d", got)
	}
	all := c.ok("", "consume", "eos", "--from", "beginning", "-n", "6", "--timeout", "10s")
	if got := sortedLines(all); got != "a aborted-1 aborted-2 b c d" {
		t.Errorf("read_uncommitted printed %q, want every record", got)
	}
	// A group member reads read_committed too.
	grouped := c.ok("", "consume", "eos", "--group", "eos-g", "--from", "beginning", "--isolation-level", "read_committed", "-n", "4", "--timeout", "10s")
	if got := sortedLines(grouped); got != "a b c d" {
		t.Errorf("read_committed group member printed %q, want a b c d", got)
	}

	for _, bad := range []struct {
		want string
		args []string
	}{
		{"--transactional-id needs the idempotent producer and --acks all", []string{"produce", "eos", "--transactional-id", "x", "--acks", "1"}},
		{"--abort and --transaction-timeout need --transactional-id", []string{"produce", "eos", "--abort"}},
		{`--isolation-level "committed"`, []string{"consume", "eos", "--isolation-level", "committed"}},
	} {
		if r := c.run("x\n", bad.args...); r.code != 2 || !strings.Contains(r.stderr, bad.want) {
			t.Errorf("sluice %v: exit %d, stderr %q; want 2 and %q", bad.args, r.code, r.stderr, bad.want)
		}
	}
}

// sortedLines is out's lines, sorted, joined by spaces.
func sortedLines(out string) string {
	lines := strings.Fields(out)
	for i := 1; i < len(lines); i++ {
		for j := i; j > 0 && lines[j] < lines[j-1]; j-- {
			lines[j], lines[j-1] = lines[j-1], lines[j]
		}
	}
	return strings.Join(lines, " ")
}
