package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sluice topic describe's partition filters on a cluster, as
// kafka-topics.sh --describe's: until replication exists every in-sync
// replica set is its leader alone, so a topic of three replicas is under
// replicated and, with min.insync.replicas=2, under its minimum; a
// partition on a dead broker is unavailable.
func TestClusterTopicDescribeFilters(t *testing.T) {
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	two := "2"
	if r, err := kadm.NewClient(c.client()).CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": &two}, "three"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	createTopic(t, c, "one", 3, 1)
	c.waitAgree("three created", func(m *kmsg.MetadataResponse) error { return c.wantTopic(m, "three", 3, 3) })
	describe := func(filter string) []string {
		t.Helper()
		cmd := exec.CommandContext(ctx, c.bin, "topic", "describe", filter, "--brokers", strings.Join(c.addrs(c.live()...), ","))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("topic describe %s: %v\n%s%s", filter, err, out, stderr.String())
		}
		var topics []string
		for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
			if line == "" {
				continue
			}
			if !strings.HasPrefix(line, "\tTopic: ") {
				t.Fatalf("topic describe %s printed a line that is not a partition's: %q", filter, line)
			}
			topics = append(topics, strings.Fields(line)[1])
		}
		return topics
	}
	count := func(topics []string, name string) int {
		n := 0
		for _, tp := range topics {
			if tp == name {
				n++
			}
		}
		return n
	}
	for _, tc := range []struct {
		filter     string
		three, one int
	}{
		{"--under-replicated-partitions", 3, 0},
		{"--under-min-isr-partitions", 3, 0},
		{"--at-min-isr-partitions", 0, 3},
		{"--unavailable-partitions", 0, 0},
	} {
		got := describe(tc.filter)
		if count(got, "three") != tc.three || count(got, "one") != tc.one || len(got) != tc.three+tc.one {
			t.Errorf("topic describe %s: partitions of %v, want %d of three and %d of one", tc.filter, got, tc.three, tc.one)
		}
	}
	// A dead broker's partition of "one" has no leader.
	victim := c.ids()[2]
	c.kill(victim)
	c.waitAgree("broker gone", func(m *kmsg.MetadataResponse) error { return c.wantBrokers(m, c.live()...) })
	if got := describe("--unavailable-partitions"); count(got, "one") != 1 {
		t.Errorf("after broker %d died, unavailable partitions %v, want the one partition of \"one\" it led", victim, got)
	}
	out, err := exec.CommandContext(ctx, c.bin, "topic", "describe", "--under-replicated-partitions", "--unavailable-partitions", "--brokers", c.addrs(c.live()...)[0]).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "give one of") {
		t.Errorf("two filters at once: %v\n%s", err, out)
	}
}
