package main

import (
	"strings"
	"testing"
)

// sluice topic elect-leaders on the single node, where each partition's
// one replica leads it: a line per partition, "Valid replica already
// elected"; a partition that does not exist fails the command; of every
// partition nothing is printed (none needed an election); bad flags are
// usage errors.
func TestTopicElectLeaders(t *testing.T) {
	c := newCLI(t)
	c.ok("", "topic", "create", "el", "--partitions", "2")
	want := "Valid replica already elected for partition el-0\nValid replica already elected for partition el-1\n"
	for _, typ := range []string{"preferred", "unclean"} {
		if out := c.ok("", "topic", "elect-leaders", "--topic", "el", "--type", typ); out != want {
			t.Errorf("--type %s: %q", typ, out)
		}
	}
	if out := c.ok("", "topic", "elect-leaders", "--topic", "el", "--partition", "1"); out != "Valid replica already elected for partition el-1\n" {
		t.Errorf("--partition 1: %q", out)
	}
	if out := c.ok("", "topic", "elect-leaders"); out != "" {
		t.Errorf("every partition: %q", out)
	}
	r := c.run("", "topic", "elect-leaders", "--topic", "el", "--partition", "7", "--election-type", "PREFERRED")
	if r.code != 1 || r.stdout != "Error completing leader election (PREFERRED) for partition el-7: UNKNOWN_TOPIC_OR_PARTITION: This server does not host this topic-partition. (The partition does not exist.)\n" {
		t.Errorf("an unknown partition: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := c.run("", "topic", "elect-leaders", "--topic", "nope"); r.code != 1 || !strings.Contains(r.stderr, "topic nope: UNKNOWN_TOPIC_OR_PARTITION") {
		t.Errorf("an unknown topic: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{{"--type", "dirty"}, {"--partition", "0"}, {"el"}} {
		if r := c.run("", append([]string{"topic", "elect-leaders"}, args...)...); r.code != 2 {
			t.Errorf("%v: exit %d, want a usage error\n%s", args, r.code, r.stderr)
		}
	}
}
