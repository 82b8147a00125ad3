package main

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// sluice topic elect-leaders on a cluster (the automatic rebalance off):
// the preferred leader of a partition SIGKILLed and restarted is back in
// the ISR but leads nothing, until the command moves its partitions back,
// printing a line per partition of the topic.
func TestClusterTopicElectLeaders(t *testing.T) {
	c := startClusterWith(t, 3, "auto.leader.rebalance.enable=false\n")
	createTopic(t, c, "el", 3, 3)
	md := c.waitAgree("el led by its preferred replicas", func(m *kmsg.MetadataResponse) error { return preferredLeaders(m, "el", true) })
	var victim int32
	for _, m := range md {
		victim = partitionsOf(m, "el")[0].Replicas[0]
		break
	}
	c.kill(victim)
	c.waitAgree(fmt.Sprintf("broker %d's partitions led by others", victim), func(m *kmsg.MetadataResponse) error {
		for _, p := range partitionsOf(m, "el") {
			if p.Replicas[0] == victim && (p.Leader == victim || p.Leader < 0) {
				return fmt.Errorf("el-%d led by %d", p.Partition, p.Leader)
			}
		}
		return nil
	})
	c.restart(victim)
	c.waitAgree(fmt.Sprintf("broker %d back in every ISR", victim), func(m *kmsg.MetadataResponse) error {
		for _, p := range partitionsOf(m, "el") {
			if !slices.Contains(p.ISR, victim) {
				return fmt.Errorf("el-%d: ISR %v", p.Partition, p.ISR)
			}
		}
		return preferredLeaders(m, "el", false)
	})

	var want strings.Builder
	for _, p := range partitionsOf(md[victim], "el") {
		if p.Replicas[0] == victim {
			fmt.Fprintf(&want, "Successfully completed leader election (PREFERRED) for partition el-%d\n", p.Partition)
		} else {
			fmt.Fprintf(&want, "Valid replica already elected for partition el-%d\n", p.Partition)
		}
	}
	cmd := exec.Command(c.bin, "topic", "elect-leaders", "--topic", "el", "--brokers", strings.Join(c.addrs(c.live()...), ","))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || string(out) != want.String() {
		t.Fatalf("topic elect-leaders: %v\n%s%s\nwant\n%s", err, out, stderr.String(), want.String())
	}
	c.waitAgree("el led by its preferred replicas again", func(m *kmsg.MetadataResponse) error { return preferredLeaders(m, "el", true) })
}

// partitionsOf returns a topic's partitions in a Metadata response, by
// number.
func partitionsOf(m *kmsg.MetadataResponse, topic string) []kmsg.MetadataResponseTopicPartition {
	for _, tp := range m.Topics {
		if tp.Topic != nil && *tp.Topic == topic {
			ps := slices.Clone(tp.Partitions)
			slices.SortFunc(ps, func(a, b kmsg.MetadataResponseTopicPartition) int { return int(a.Partition - b.Partition) })
			return ps
		}
	}
	return nil
}

// preferredLeaders checks that every partition of topic is led by its
// first replica (all), or that some is not (!all).
func preferredLeaders(m *kmsg.MetadataResponse, topic string, all bool) error {
	ps := partitionsOf(m, topic)
	if len(ps) == 0 {
		return fmt.Errorf("no topic %s", topic)
	}
	var elsewhere []string
	for _, p := range ps {
		if p.Leader != p.Replicas[0] {
			elsewhere = append(elsewhere, fmt.Sprintf("%s-%d led by %d, replicas %v", topic, p.Partition, p.Leader, p.Replicas))
		}
	}
	switch {
	case all && len(elsewhere) > 0:
		return fmt.Errorf("%s", strings.Join(elsewhere, "; "))
	case !all && len(elsewhere) == 0:
		return fmt.Errorf("every partition of %s led by its preferred replica", topic)
	}
	return nil
}
