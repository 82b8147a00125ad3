package main

// The plans of sluice cluster rebalance, sluice cluster decommission and
// sluice topic reassign --generate on a subprocess cluster (carried out:
// cluster_reassign_exec_test.go).

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/cmd/sluice/reassign"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cli returns a runner of the binary's console commands against the
// brokers live now.
func (c *testCluster) cli(t *testing.T) *cli {
	return &cli{t: t, bin: c.bin, brokers: strings.Join(c.addrs(c.live()...), ",")}
}

// brokerColumns reads the per-broker table of a plan or of the counts
// after a move: column name → broker → value.
func brokerColumns(t *testing.T, out string) map[string]map[int32]int {
	t.Helper()
	var header []string
	for l := range strings.SplitSeq(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "BROKER" {
			header = f
		}
	}
	if header == nil {
		t.Fatalf("no BROKER table in\n%s", out)
	}
	cols := map[string]map[int32]int{}
	for _, row := range tableRows(out, strings.Join(header, "  ")) {
		id, _ := strconv.Atoi(row[0])
		for i, name := range header[1:] {
			if cols[name] == nil {
				cols[name] = map[int32]int{}
			}
			cols[name][int32(id)], _ = strconv.Atoi(row[i+1])
		}
	}
	return cols
}

// wantCounts fails unless counts holds want for each of ids.
func wantCounts(t *testing.T, what string, counts map[int32]int, want map[int32]int) {
	t.Helper()
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Fatalf("%s: %v, want %v", what, counts, want)
	}
}

// The plans on a live cluster, before anything moves: 3 brokers hold 12
// partitions RF 2, a fourth joins. rebalance proposes 6 replicas and 3
// preferred leaders for each; decommission --dry-run empties a broker on
// paper; topic reassign --generate proposes the same as rebalance, as
// kafka-reassign-partitions.sh's JSON.
func TestClusterReassignPlans(t *testing.T) {
	c := startCluster(t, 3)
	createTopic(t, c, "orders", 12, 2)
	c.addBroker(4)
	c.waitAgree("broker 4 registered", func(m *kmsg.MetadataResponse) error { return c.wantBrokers(m, 1, 2, 3, 4) })

	out := c.cli(t).ok("", "cluster", "rebalance")
	cols := brokerColumns(t, out)
	wantCounts(t, "replicas before", cols["REPLICAS"], map[int32]int{1: 8, 2: 8, 3: 8, 4: 0})
	wantCounts(t, "replicas after", cols["NEW-REPLICAS"], map[int32]int{1: 6, 2: 6, 3: 6, 4: 6})
	wantCounts(t, "leaders after", cols["NEW-LEADERS"], map[int32]int{1: 3, 2: 3, 3: 3, 4: 3})
	if !strings.HasPrefix(out, "Plan: 6 replica moves in 6 partitions\n") || !strings.Contains(out, "Run again with --execute") {
		t.Fatalf("rebalance:\n%s", out)
	}

	out = c.cli(t).ok("", "cluster", "decommission", "2", "--dry-run")
	cols = brokerColumns(t, out)
	if cols["NEW-REPLICAS"][2] != 0 || cols["NEW-LEADERS"][2] != 0 || !strings.HasSuffix(out, "Dry run: nothing moved.\n") {
		t.Fatalf("decommission 2 --dry-run:\n%s", out)
	}
	if out := c.cli(t).ok("", "cluster", "decommission", "4", "--dry-run"); out != "Broker 4 holds no replicas: it can be stopped.\n" {
		t.Fatalf("decommission 4:\n%s", out)
	}
	if r := c.cli(t).run("", "cluster", "decommission", "9"); r.code != 1 || !strings.Contains(r.stderr, "broker 9 is not live and holds no replica") {
		t.Fatalf("decommission 9: exit %d, %s", r.code, r.stderr)
	}

	dir := t.TempDir()
	topics := filepath.Join(dir, "topics.json")
	if err := os.WriteFile(topics, []byte(`{"version":1,"topics":[{"topic":"orders"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out = c.cli(t).ok("", "topic", "reassign", "--generate", "--topics-to-move-json-file", topics, "--broker-list", "1,2,3,4")
	lines := strings.Split(out, "\n")
	if len(lines) != 6 || lines[0] != "Current partition replica assignment" || lines[3] != "Proposed partition reassignment configuration" {
		t.Fatalf("--generate:\n%s", out)
	}
	current, err := reassign.ParseAssignments("current", []byte(lines[1]))
	if err != nil {
		t.Fatal(err)
	}
	proposed, err := reassign.ParseAssignments("proposed", []byte(lines[4]))
	if err != nil {
		t.Fatal(err)
	}
	replicas, leaders := reassign.Counts(applyMovesOf(current, proposed))
	wantCounts(t, "--generate: replicas", replicas, map[int32]int{1: 6, 2: 6, 3: 6, 4: 6})
	wantCounts(t, "--generate: leaders", leaders, map[int32]int{1: 3, 2: 3, 3: 3, 4: 3})
}

// applyMovesOf is parts with the replica lists of the partitions in to.
func applyMovesOf(parts, to []reassign.Assignment) []reassign.Assignment {
	moves := make([]reassign.Move, len(to))
	for i, p := range to {
		moves[i] = reassign.Move{Topic: p.Topic, Partition: p.Partition, To: p.Replicas}
	}
	return reassign.Apply(parts, moves)
}
