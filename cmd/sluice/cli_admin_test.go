package main

// The console tools' uses of DeleteTopics and ListOffsets by timestamp.

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestTopicDelete(t *testing.T) {
	c := newCLI(t)
	c.ok("", "topic", "create", "a")
	c.ok("", "topic", "create", "b", "--partitions", "2")
	c.ok("", "topic", "create", "keep")
	c.ok("x\n", "produce", "b")
	if out := c.ok("", "topic", "delete", "a", "b"); out != "Deleted topic a.\nDeleted topic b.\n" {
		t.Errorf("delete: %q", out)
	}
	if out := c.ok("", "topic", "list"); out != "keep\n" {
		t.Errorf("list after delete: %q", out)
	}
	r := c.run("", "topic", "delete", "keep", "gone")
	if r.code != 1 || r.stdout != "Deleted topic keep.\n" || !strings.Contains(r.stderr, "topic gone: UNKNOWN_TOPIC_OR_PARTITION") {
		t.Errorf("delete with a missing topic: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The name can be used again, for a fresh topic.
	c.ok("", "topic", "create", "b")
	if out := c.ok("", "topic", "describe", "b"); !strings.Contains(out, "PartitionCount: 1\t") || !strings.Contains(out, "Offsets: 0-0\n") {
		t.Errorf("re-created topic:\n%s", out)
	}
}

func TestConsumeFromTime(t *testing.T) {
	c := newCLI(t)
	c.ok("", "topic", "create", "timed", "--partitions", "2")
	c.ok("old1\nold2\nold3\n", "produce", "timed")
	var last int64
	for _, line := range strings.Fields(c.ok("", "consume", "timed", "--from", "beginning", "-n", "3", "--format", `%t\n`)) {
		var ts int64
		fmt.Sscan(line, &ts)
		last = max(last, ts)
	}
	// The next records must carry a later millisecond.
	for deadline := time.Now().Add(time.Second); time.Now().UnixMilli() <= last; {
		if time.Now().After(deadline) {
			t.Fatalf("the clock does not pass %d", last)
		}
	}
	c.ok("new1\nnew2\n", "produce", "timed")

	after := fmt.Sprint(last + 1)
	out := c.ok("", "consume", "timed", "--from-time", after, "-n", "2")
	if got := strings.Fields(out); len(got) != 2 || !strings.Contains(out, "new1") || !strings.Contains(out, "new2") {
		t.Errorf("--from-time %s: %q", after, out)
	}
	rfc := time.UnixMilli(last + 1).UTC().Format(time.RFC3339Nano)
	if out := c.ok("", "consume", "timed", "--from-time", rfc, "--partition", "0", "-n", "1"); out != "new1\n" {
		t.Errorf("--from-time %s --partition 0: %q", rfc, out)
	}
	if out := c.ok("", "consume", "timed", "--from-time", "0", "-n", "5", "--format", `%v `); len(strings.Fields(out)) != 5 {
		t.Errorf("--from-time 0: %q", out)
	}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if out := c.ok("", "consume", "timed", "--from-time", future, "--timeout", "200ms"); out != "" {
		t.Errorf("--from-time in the future: %q", out)
	}
}
