package main

// sluice cluster rebalance --execute, sluice cluster decommission and
// sluice topic reassign --execute/--verify/--cancel carried out on
// subprocess clusters, under the checker's workload.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicCounts counts, per broker, the replicas of topic's partitions in m
// and the partitions it leads.
func topicCounts(m *kmsg.MetadataResponse, topic string) (replicas, leaders map[int32]int) {
	replicas, leaders = map[int32]int{}, map[int32]int{}
	for _, p := range partitionsOf(m, topic) {
		for _, r := range p.Replicas {
			replicas[r]++
		}
		leaders[p.Leader]++
	}
	return replicas, leaders
}

// within1 checks that counts holds between want-1 and want+1 for each of
// ids, and nothing for any other broker.
func within1(what string, counts map[int32]int, want int, ids []int32) error {
	for id, n := range counts {
		if !slices.Contains(ids, id) && n > 0 {
			return fmt.Errorf("%s: broker %d has %d (%v)", what, id, n, counts)
		}
	}
	for _, id := range ids {
		if n := counts[id]; n < want-1 || n > want+1 {
			return fmt.Errorf("%s: broker %d has %d, want %d±1 (%v)", what, id, n, want, counts)
		}
	}
	return nil
}

// The test: 3 brokers hold 12 partitions RF 2 while an acks=all
// idempotent producer and a consumer group run; a fourth broker joins and
// sluice cluster rebalance --execute spreads them (under a throttle above
// the workload's rate, removed after): each broker ends with 6 replicas of
// the topic and leads 3 (±1), the producer saw only retriable errors,
// nothing acknowledged is lost or duplicated and the group read
// everything.
func TestClusterRebalanceNewBroker(t *testing.T) {
	c, ctx := startFaultCluster(t, "")
	w := startWorkloadRF(ctx, c, "grow", 12, 2)
	p := w.produce("p", produceOpts{rate: 500})
	p.waitAcked(t, 300)
	c.addBroker(4)
	c.waitAgree("broker 4 registered", func(m *kmsg.MetadataResponse) error { return c.wantBrokers(m, 1, 2, 3, 4) })

	out := c.cli(t).ok("", "cluster", "rebalance", "--execute", "--interval", "100ms", "--throttle", "50000000")
	t.Logf("rebalance --execute:\n%s", out)
	for _, want := range []string{"The inter-broker throttle limit was set to 50000000 B/s on brokers 1,2,3,4.\n", " 0 of ", "Preferred leader election: ",
		"Throttles removed from brokers 1,2,3,4 and topics __consumer_offsets,grow.\n"} {
		if !strings.Contains(out, want) {
			t.Fatalf("no %q in the output", want)
		}
	}
	adm := kadm.NewClient(c.client())
	poll(t, "every throttle removed", func() error {
		if got, err := throttleConfigs(ctx, adm, []string{"grow", "__consumer_offsets"}, 1, 2, 3, 4); err != nil || len(got) > 0 {
			return fmt.Errorf("%v, %v", got, err)
		}
		return nil
	})
	ids := []int32{1, 2, 3, 4}
	c.waitAgree("grow spread over 4 brokers", func(m *kmsg.MetadataResponse) error {
		replicas, leaders := topicCounts(m, "grow")
		return errors.Join(within1("replicas", replicas, 6, ids), within1("leaders", leaders, 3, ids))
	})
	p.progress(t, 200)
	w.check(t)
}

// A broker decommissioned while the workload runs ends with no replica of
// any topic; stopped then, it leaves every partition fully in sync.
func TestClusterDecommissionUnderLoad(t *testing.T) {
	c, ctx := startFaultCluster(t, "")
	c.addBroker(4)
	c.waitAgree("broker 4 registered", func(m *kmsg.MetadataResponse) error { return c.wantBrokers(m, 1, 2, 3, 4) })
	w := startWorkloadRF(ctx, c, "shrink", 8, 2)
	p := w.produce("p", produceOpts{rate: 500})
	p.waitAcked(t, 300)
	victim := int32(4)
	if ctrl := controllerInZK(t, c); ctrl == victim {
		victim = 3 // a controller's move is another test's
	}

	out := c.cli(t).ok("", "cluster", "decommission", strconv.Itoa(int(victim)), "--interval", "100ms")
	t.Logf("decommission %d:\n%s", victim, out)
	if want := fmt.Sprintf("Broker %d holds no replicas: it can be stopped.\n", victim); !strings.HasSuffix(out, want) {
		t.Fatalf("decommission %d: the output does not end in %q", victim, want)
	}
	p.progress(t, 100)
	if err := c.brokers[victim].proc.stop(testWait); err != nil {
		t.Fatalf("broker %d on SIGTERM: %v", victim, exitText(err))
	}
	c.waitAgree("no partition under-replicated", func(m *kmsg.MetadataResponse) error {
		if err := c.wantBrokers(m, c.live()...); err != nil {
			return err
		}
		for _, tp := range m.Topics {
			for _, p := range tp.Partitions {
				if slices.Contains(p.Replicas, victim) || len(p.ISR) != len(p.Replicas) {
					return fmt.Errorf("%s-%d: replicas %v, ISR %v", *tp.Topic, p.Partition, p.Replicas, p.ISR)
				}
			}
		}
		return nil
	})
	p.progress(t, 200)
	w.check(t)
}

// sluice topic reassign on a plan file: --execute prints the current
// assignment and starts it, --verify reports it completed (and clears the
// throttles); a plan whose new replica is on a paused broker stays in
// progress until --cancel returns the partition to its replicas; plans
// the controller refuses are reported per partition.
func TestClusterTopicReassign(t *testing.T) {
	c := startCluster(t, 3)
	createAndProduce(t, c, "mv", 2, 1)
	md := c.waitAgree("mv led", func(m *kmsg.MetadataResponse) error { return c.wantTopic(m, "mv", 2, 1) })
	from := partitionsOf(md[1], "mv")[0].Replicas[0]
	to := from%3 + 1
	dir := t.TempDir()
	plan := func(name, body string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	move := plan("move.json", fmt.Sprintf(`{"version":1,"partitions":[{"topic":"mv","partition":0,"replicas":[%d]}]}`, to))
	out := c.cli(t).ok("", "topic", "reassign", "--execute", "--reassignment-json-file", move)
	want := fmt.Sprintf("Current partition replica assignment\n\n"+
		`{"version":1,"partitions":[{"topic":"mv","partition":0,"replicas":[%d],"log_dirs":["any"]}]}`+
		"\n\nSave this to use as the --reassignment-json-file option during rollback\nSuccessfully started partition reassignment for mv-0\n", from)
	if out != want {
		t.Fatalf("--execute:\n%s\nwant\n%s", out, want)
	}
	poll(t, "--verify reports mv-0 completed", func() error {
		out := c.cli(t).ok("", "topic", "reassign", "--verify", "--reassignment-json-file", move)
		if !strings.HasPrefix(out, "Status of partition reassignment:\nReassignment of partition mv-0 is completed.\nClearing broker-level throttles on brokers 1,2,3\n") {
			return fmt.Errorf("%s", out)
		}
		return nil
	})
	c.waitAgree("mv-0 on its new replica", func(m *kmsg.MetadataResponse) error {
		if p := partitionOf(m, "mv", 0); !slices.Equal(p.Replicas, []int32{to}) || p.Leader != to {
			return fmt.Errorf("mv-0: replicas %v, leader %d", p.Replicas, p.Leader)
		}
		return nil
	})
	if got := string(fetchOne(t, c, "mv", 0, 0)); got != "v" {
		t.Fatalf("mv-0 at offset 0 after the move: %q", got)
	}

	// mv-1 to one more replica, on a paused broker: it cannot catch up.
	p1 := partitionOf(md[1], "mv", 1).Replicas[0]
	ctrl, paused := controllerInZK(t, c), int32(1)
	for paused == p1 || paused == ctrl {
		paused++
	}
	grow := plan("grow.json", fmt.Sprintf(`{"version":1,"partitions":[{"topic":"mv","partition":1,"replicas":[%d,%d]}]}`, p1, paused))
	c.pause(paused)
	// Submitted straight to the controller (any other request could go to
	// the paused broker and wait), then the paused broker left to drop out
	// of the cluster, so that the commands below reach live brokers only.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.brokers[ctrl].addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = "mv"
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = 1, []int32{p1, paused}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.AlterPartitionAssignmentsResponse); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AlterPartitionReassignments: %+v", r)
	}
	c.waitAgree(fmt.Sprintf("broker %d gone", paused), func(m *kmsg.MetadataResponse) error { return c.wantBrokers(m, c.live()...) })
	if out := c.cli(t).ok("", "topic", "reassign", "--verify", "--reassignment-json-file", grow); out != "Status of partition reassignment:\nReassignment of partition mv-1 is still in progress.\n" {
		t.Fatalf("--verify while in progress:\n%s", out)
	}
	if out := c.cli(t).ok("", "topic", "reassign", "--list"); !strings.HasPrefix(out, "Current partition reassignments:\nmv-1: replicas: ") {
		t.Fatalf("--list:\n%s", out)
	}
	out = c.cli(t).ok("", "topic", "reassign", "--cancel", "--reassignment-json-file", grow)
	if !strings.HasPrefix(out, "Successfully cancelled partition reassignment for: mv-1\n") {
		t.Fatalf("--cancel:\n%s", out)
	}
	c.resume(paused)
	c.waitAgree("mv-1 back on its replica", func(m *kmsg.MetadataResponse) error {
		if p := partitionOf(m, "mv", 1); !slices.Equal(p.Replicas, []int32{p1}) {
			return fmt.Errorf("mv-1: replicas %v", p.Replicas)
		}
		return nil
	})
	if out := c.cli(t).ok("", "topic", "reassign", "--list"); out != "No partition reassignments found.\n" {
		t.Fatalf("--list after the cancel:\n%s", out)
	}

	bad := plan("bad.json", `{"version":1,"partitions":[{"topic":"mv","partition":0,"replicas":[9]},{"topic":"mv","partition":7,"replicas":[1]},{"topic":"mv","partition":1,"replicas":[1,1]}]}`)
	r := c.cli(t).run("", "topic", "reassign", "--execute", "--reassignment-json-file", bad)
	for _, want := range []string{"Error reassigning partition(s):\n", "\nmv-0: INVALID_REPLICA_ASSIGNMENT", "\nmv-1: INVALID_REPLICA_ASSIGNMENT", "\nmv-7: UNKNOWN_TOPIC_OR_PARTITION"} {
		if r.code != 1 || !strings.Contains(r.stdout, want) {
			t.Fatalf("bad plan: exit %d, no %q in\n%s%s", r.code, want, r.stdout, r.stderr)
		}
	}
}

// topic reassign --execute --throttle sets kafka-reassign-partitions.sh's
// throttle: both rates on the brokers of the move, the leader side's
// throttled replicas on the current replicas, the follower side's on the
// added one; --verify, once the move is done, removes them all.
func TestClusterTopicReassignThrottle(t *testing.T) {
	c := startCluster(t, 3)
	createAndProduce(t, c, "th", 2, 1)
	md := c.waitAgree("th led", func(m *kmsg.MetadataResponse) error { return c.wantTopic(m, "th", 2, 1) })
	from := partitionOf(md[1], "th", 0).Replicas[0]
	to := from%3 + 1
	f := filepath.Join(t.TempDir(), "move.json")
	if err := os.WriteFile(f, []byte(fmt.Sprintf(`{"version":1,"partitions":[{"topic":"th","partition":0,"replicas":[%d]}]}`, to)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := c.cli(t).run("", "topic", "reassign", "--execute", "--reassignment-json-file", f, "--throttle", "1000000")
	if r.code != 0 || !strings.Contains(r.stdout, "Warning: You must run --verify periodically") || !strings.Contains(r.stdout, "The inter-broker throttle limit was set to 1000000 B/s\n") {
		t.Fatalf("--execute --throttle: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	adm := kadm.NewClient(c.client())
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	throttles := func() ([]string, error) {
		return throttleConfigs(ctx, adm, []string{"th"}, min(from, to), max(from, to))
	}
	lo, hi := min(from, to), max(from, to)
	want := []string{
		fmt.Sprintf("%d follower.replication.throttled.rate=1000000", lo), fmt.Sprintf("%d leader.replication.throttled.rate=1000000", lo),
		fmt.Sprintf("%d follower.replication.throttled.rate=1000000", hi), fmt.Sprintf("%d leader.replication.throttled.rate=1000000", hi),
		fmt.Sprintf("th follower.replication.throttled.replicas=0:%d", to), fmt.Sprintf("th leader.replication.throttled.replicas=0:%d", from),
	}
	slices.Sort(want)
	// The broker asked learns of the topic's new configs from ZooKeeper's
	// notification, as a Kafka broker does: soon, not at once.
	poll(t, "the throttles set during the move", func() error {
		got, err := throttles()
		if err != nil || !slices.Equal(got, want) {
			return fmt.Errorf("%v, %v, want %v", got, err, want)
		}
		return nil
	})
	poll(t, "--verify reports th-0 completed", func() error {
		if out := c.cli(t).ok("", "topic", "reassign", "--verify", "--reassignment-json-file", f); !strings.Contains(out, "Reassignment of partition th-0 is completed.\n") {
			return fmt.Errorf("%s", out)
		}
		return nil
	})
	poll(t, "every throttle removed", func() error {
		if got, err := throttles(); err != nil || len(got) > 0 {
			return fmt.Errorf("%v, %v", got, err)
		}
		return nil
	})
}

// throttleConfigs returns the throttle configs set (not at their
// defaults) on topics and brokers, as "resource key=value", sorted.
func throttleConfigs(ctx context.Context, adm *kadm.Client, topics []string, brokers ...int32) ([]string, error) {
	var out []string
	add := func(rcs kadm.ResourceConfigs, err error) error {
		if err != nil {
			return err
		}
		for _, rc := range rcs {
			if rc.Err != nil {
				return rc.Err
			}
			for _, cfg := range rc.Configs {
				if strings.Contains(cfg.Key, "throttled") && cfg.Source != kmsg.ConfigSourceDefaultConfig {
					out = append(out, fmt.Sprintf("%s %s=%s", rc.Name, cfg.Key, cfg.MaybeValue()))
				}
			}
		}
		return nil
	}
	if err := add(adm.DescribeTopicConfigs(ctx, topics...)); err != nil {
		return nil, err
	}
	if err := add(adm.DescribeBrokerConfigs(ctx, brokers...)); err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}
