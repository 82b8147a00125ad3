package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sluice topic describe's partition filters on a cluster, as
// kafka-topics.sh --describe's: with every replica in sync nothing is
// under replicated; a broker killed takes its replicas out of the ISRs
// (under replicated, at min.insync.replicas=2) and its partition of an RF 1
// topic offline (unavailable).
func TestClusterTopicDescribeFilters(t *testing.T) {
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	two := "2"
	if r, err := kadm.NewClient(c.client()).CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": &two}, "three"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	createTopic(t, c, "one", 3, 1)
	isrSizes := func(want int) func(m *kmsg.MetadataResponse) error {
		return func(m *kmsg.MetadataResponse) error {
			if err := c.wantTopic(m, "three", 3, 3); err != nil {
				return err
			}
			for _, tp := range m.Topics {
				if *tp.Topic != "three" {
					continue
				}
				for _, p := range tp.Partitions {
					if len(p.ISR) != want {
						return fmt.Errorf("three-%d: ISR %v, want %d members", p.Partition, p.ISR, want)
					}
				}
			}
			return nil
		}
	}
	c.waitAgree("every replica of three in sync", isrSizes(3))
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
	check := func(when string, want map[string][2]int) {
		t.Helper()
		for filter, w := range want {
			got := describe(filter)
			if count(got, "three") != w[0] || count(got, "one") != w[1] || len(got) != w[0]+w[1] {
				t.Errorf("%s: topic describe %s: partitions of %v, want %d of three and %d of one", when, filter, got, w[0], w[1])
			}
		}
	}
	// sluice cluster brokers: every live broker once, one controller, the
	// replicas and leaders the metadata gives each (three: RF 3 on 3
	// brokers, one: RF 1 spread), its disk use a number.
	brokers := func() map[string][]string {
		t.Helper()
		out, err := exec.CommandContext(ctx, c.bin, "cluster", "brokers", "--brokers", strings.Join(c.addrs(c.live()...), ",")).CombinedOutput()
		if err != nil {
			t.Fatalf("cluster brokers: %v\n%s", err, out)
		}
		lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
		if got := strings.Fields(lines[0]); strings.Join(got, " ") != "ID ADDRESS RACK CONTROLLER REPLICAS LEADERS DISK" {
			t.Fatalf("cluster brokers header %q", lines[0])
		}
		rows := map[string][]string{}
		for _, l := range lines[1:] {
			f := strings.Fields(l)
			rows[f[0]] = f
		}
		return rows
	}
	rows := brokers()
	controllers := 0
	for _, id := range c.ids() {
		r := rows[fmt.Sprint(id)]
		if len(r) != 7 || r[1] != c.addrs(id)[0] || r[4] != "4" || r[5] != "2" {
			t.Errorf("cluster brokers: broker %d's row %v, want its address, 4 replicas, 2 leaders", id, r)
			continue
		}
		if r[3] == "yes" {
			controllers++
		}
		if _, err := fmt.Sscan(r[6], new(int64)); err != nil {
			t.Errorf("cluster brokers: broker %d's disk %q is not a number", id, r[6])
		}
	}
	if len(rows) != 3 || controllers != 1 {
		t.Errorf("cluster brokers: %v, want 3 brokers and one controller", rows)
	}
	check("all in sync", map[string][2]int{
		"--under-replicated-partitions": {0, 0},
		"--under-min-isr-partitions":    {0, 0},
		"--at-min-isr-partitions":       {0, 3},
		"--unavailable-partitions":      {0, 0},
	})
	// A dead broker leaves every ISR of three and takes its partition of
	// one offline.
	victim := c.ids()[2]
	c.kill(victim)
	c.waitAgree("broker gone", func(m *kmsg.MetadataResponse) error {
		if err := c.wantBrokers(m, c.live()...); err != nil {
			return err
		}
		return isrSizes(2)(m)
	})
	if rows := brokers(); len(rows) != 2 || rows[fmt.Sprint(victim)] != nil {
		t.Errorf("cluster brokers with broker %d dead: %v", victim, rows)
	}
	check("a broker dead", map[string][2]int{
		"--under-replicated-partitions": {3, 0},
		"--under-min-isr-partitions":    {0, 1}, // a partition without a leader is, in kafka-topics.sh
		"--at-min-isr-partitions":       {3, 3}, // the offline one keeps its last ISR
		"--unavailable-partitions":      {0, 1},
	})
	out, err := exec.CommandContext(ctx, c.bin, "topic", "describe", "--under-replicated-partitions", "--unavailable-partitions", "--brokers", c.addrs(c.live()...)[0]).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "give one of") {
		t.Errorf("two filters at once: %v\n%s", err, out)
	}
}
