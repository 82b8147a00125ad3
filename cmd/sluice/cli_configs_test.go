package main

// The console tools' uses of DescribeConfigs and IncrementalAlterConfigs.

import (
	"strings"
	"testing"
)

func TestTopicConfigs(t *testing.T) {
	c := newCLI(t)
	c.ok("", "topic", "create", "cfg", "--partitions", "2", "--config", "retention.ms=86400000", "--config", "cleanup.policy=delete")
	r := c.run("", "topic", "describe", "cfg")
	if r.code != 0 || r.stderr != "" || !strings.HasPrefix(r.stdout, "Topic: cfg\t") ||
		!strings.Contains(r.stdout, "\tReplicationFactor: 1\tConfigs: cleanup.policy=delete,retention.ms=86400000\n") {
		t.Fatalf("describe: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	c.ok("", "topic", "create", "plain")
	if out := c.ok("", "topic", "describe", "plain"); !strings.Contains(out, "\tConfigs:\n") {
		t.Errorf("a topic at the defaults shows configs:\n%s", out)
	}

	out := c.ok("", "topic", "alter-config", "cfg", "--set", "retention.ms=1000", "--set", "segment.bytes=1048576", "--delete", "cleanup.policy")
	if want := "Completed updating config for topic cfg.\nConfigs: retention.ms=1000,segment.bytes=1048576\n"; out != want {
		t.Errorf("alter-config: %q, want %q", out, want)
	}
	if out := c.ok("", "topic", "describe", "cfg"); !strings.Contains(out, "\tConfigs: retention.ms=1000,segment.bytes=1048576\n") {
		t.Errorf("describe after alter-config:\n%s", out)
	}
	c.fails(1, "INVALID_CONFIG", "", "topic", "alter-config", "cfg", "--set", "no.such.key=1")
	c.fails(1, "topic missing: UNKNOWN_TOPIC_OR_PARTITION", "", "topic", "alter-config", "missing", "--set", "retention.ms=1")

	// The producer asks for the topic's max.message.bytes: a 1 MiB line
	// needs no flag when the topic takes it.
	c.ok("", "topic", "create", "big", "--config", "max.message.bytes=2097152")
	long := strings.Repeat("x", 1<<20+1)
	c.ok(long+"\n", "produce", "big")
	if out := c.ok("", "consume", "big", "--from", "beginning", "-n", "1"); out != long+"\n" {
		t.Errorf("long line: %d bytes back", len(out))
	}
}
