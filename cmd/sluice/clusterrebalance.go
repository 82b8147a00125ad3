package main

// sluice cluster rebalance and sluice cluster decommission: the planner's
// plan (reassignplan.go) printed and, on request, carried out with a
// progress display, a preferred leader election after, and a throttle
// for the time of the move.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-io/sluice/cmd/sluice/reassign"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// freshMetadata makes the admin client ask for Metadata each time it is
// asked: franz-go answers a Metadata request from what it fetched within
// MetadataMinAge (5 s by default), which would hide for that long the
// final replicas of a completed move.
var freshMetadata = kgo.MetadataMinAge(10 * time.Millisecond)

// moveFlags are the flags of a command that carries out moves.
type moveFlags struct {
	throttle    int64
	interval    time.Duration
	ignoreRacks bool
}

func addMoveFlags(fs *flag.FlagSet) *moveFlags {
	f := &moveFlags{}
	fs.Int64Var(&f.throttle, "throttle", -1, "bound the replication of the moving replicas to `BYTES/S` per broker, leader and follower side, until done (-1: no throttle)")
	fs.DurationVar(&f.interval, "interval", time.Second, "how often to poll the progress")
	fs.BoolVar(&f.ignoreRacks, "disable-rack-aware", false, "plan as if no broker had a rack")
	return f
}

func runClusterRebalance(args []string, stdout, stderr io.Writer) int {
	c := newCommand("sluice cluster rebalance", `usage: sluice cluster rebalance [--execute [--throttle BYTES/S]]

Plans moves that spread the replicas and preferred leaders of every
partition, internal topics' too, evenly over the live brokers: each broker
holds and leads within 1 of every other, over all topics and per topic,
where racks allow. A replica moves only if that evens the counts, or if
it is on a broker that is not live, or if its partition has more replicas
on one rack than ceil(replicas/racks) (when the brokers have racks).
Replicas keep their positions; the preferred leader (first replica) may
change. It prints each partition that changes and, per broker, the
replicas and leaders before and after.

With --execute it submits the plan (AlterPartitionReassignments), prints
the partitions still reassigning as they finish, runs a preferred leader
election of the moved partitions and prints the counts per broker. It
refuses to start while another reassignment is in progress. Ctrl-C stops
the display only: the reassignment goes on in the cluster.

--throttle sets leader.replication.throttled.rate and
follower.replication.throttled.rate on the brokers involved, and
leader.replication.throttled.replicas (the current replicas) and
follower.replication.throttled.replicas (the added ones) on the topics,
as kafka-reassign-partitions.sh does, and removes them when done.
`, stdout, stderr)
	cf := addClientFlags(c.fs)
	execute := c.fs.Bool("execute", false, "carry out the plan")
	mf := addMoveFlags(c.fs)
	pos, code, done := c.parse(args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return c.usageError("unexpected argument %q", pos[0])
	}
	ctx, adm, release, err := openAdmin(cf, freshMetadata)
	if err != nil {
		return c.fail(err)
	}
	defer release()
	md, parts, moves, err := planCluster(ctx, adm, -1, mf.ignoreRacks)
	if err != nil {
		return c.fail(err)
	}
	if len(moves) == 0 {
		fmt.Fprintln(stdout, "The cluster is balanced: no replica or preferred leader to move.")
		return 0
	}
	printPlan(stdout, md, parts, moves)
	if !*execute {
		fmt.Fprintln(stdout, "\nRun again with --execute to carry out this plan.")
		return 0
	}
	return executeMoves(c, adm, parts, moves, mf)
}

func runClusterDecommission(args []string, stdout, stderr io.Writer) int {
	c := newCommand("sluice cluster decommission", `usage: sluice cluster decommission ID [--dry-run] [--throttle BYTES/S]

Moves every replica off broker ID to the other live brokers, keeping them
balanced as sluice cluster rebalance does (the same planner, with ID
emptied), waits until the reassignment is done with the same progress
display, runs a preferred leader election of the moved partitions and
prints that broker ID holds nothing and can be stopped. Broker ID need
not be live. --dry-run prints the plan only. --throttle as for rebalance.
`, stdout, stderr)
	cf := addClientFlags(c.fs)
	dry := c.fs.Bool("dry-run", false, "print the plan, move nothing")
	mf := addMoveFlags(c.fs)
	pos, code, done := c.parse(args)
	if done {
		return code
	}
	if len(pos) != 1 {
		return c.usageError("want the id of the broker to empty")
	}
	n, err := strconv.ParseInt(pos[0], 10, 32)
	if err != nil || n < 0 {
		return c.usageError("%q is not a broker id", pos[0])
	}
	id := int32(n)
	ctx, adm, release, err := openAdmin(cf, freshMetadata)
	if err != nil {
		return c.fail(err)
	}
	defer release()
	md, parts, moves, err := planCluster(ctx, adm, id, mf.ignoreRacks)
	if held, _ := reassign.Counts(parts); held[id] == 0 && md.Brokers != nil {
		if !slices.ContainsFunc(md.Brokers, func(b kadm.BrokerDetail) bool { return b.NodeID == id }) {
			return c.fail(fmt.Errorf("broker %d is not live and holds no replica", id))
		}
		fmt.Fprintf(stdout, "Broker %d holds no replicas: it can be stopped.\n", id)
		return 0
	}
	if err != nil {
		return c.fail(err)
	}
	printPlan(stdout, md, parts, moves)
	if *dry {
		fmt.Fprintln(stdout, "\nDry run: nothing moved.")
		return 0
	}
	if code := executeMoves(c, adm, parts, moves, mf); code != 0 {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	_, after, _, err := clusterAssignment(ctx, adm)
	if err != nil {
		return c.fail(err)
	}
	if left, _ := reassign.Counts(after); left[id] > 0 {
		return c.fail(fmt.Errorf("broker %d still holds %d replicas (a partition created during the move?): run decommission again", id, left[id]))
	}
	fmt.Fprintf(stdout, "Broker %d holds no replicas: it can be stopped.\n", id)
	return 0
}

// planCluster reads the whole cluster's assignment and plans its
// rebalance, with broker drain emptied if it is not -1. The metadata and
// assignment come back even when no plan can be made.
func planCluster(ctx context.Context, adm *kadm.Client, drain int32, ignoreRacks bool) (kadm.Metadata, []reassign.Assignment, []reassign.Move, error) {
	md, parts, brokers, err := clusterAssignment(ctx, adm)
	if err != nil {
		return md, nil, nil, err
	}
	in := reassign.Input{Partitions: parts, Brokers: brokers, IgnoreRacks: ignoreRacks}
	if drain >= 0 {
		in.Drain = []int32{drain}
	}
	moves, err := reassign.Plan(in)
	return md, parts, moves, err
}

// printPlan writes the partitions that change and the counts per broker
// before (replicas and current leaders) and after (replicas and preferred
// leaders).
func printPlan(w io.Writer, md kadm.Metadata, parts []reassign.Assignment, moves []reassign.Move) {
	moved := 0
	for _, m := range moves {
		moved += len(m.Adding())
	}
	fmt.Fprintf(w, "Plan: %d replica moves in %d partitions\n\n", moved, len(moves))
	t := table(w)
	row(t, "TOPIC", "PARTITION", "REPLICAS", "NEW-REPLICAS", "ADDING", "REMOVING")
	for _, m := range moves {
		row(t, m.Topic, strconv.Itoa(int(m.Partition)), ints(m.From), ints(m.To), orDash(ints(m.Adding())), orDash(ints(m.Removing())))
	}
	t.Flush()
	fmt.Fprintln(w)
	replicas, _ := reassign.Counts(parts)
	leaders := currentLeaders(md)
	newReplicas, newLeaders := reassign.Counts(reassign.Apply(parts, moves))
	printCounts(w, []string{"REPLICAS", "NEW-REPLICAS", "LEADERS", "NEW-LEADERS"}, brokerIDs(md, replicas), replicas, newReplicas, leaders, newLeaders)
}

// currentLeaders counts the partitions each broker leads now.
func currentLeaders(md kadm.Metadata) map[int32]int {
	leaders := map[int32]int{}
	for _, t := range md.Topics {
		for _, p := range t.Partitions {
			if p.Leader >= 0 {
				leaders[p.Leader]++
			}
		}
	}
	return leaders
}

// brokerIDs lists the live brokers and any other holding replicas, sorted.
func brokerIDs(md kadm.Metadata, replicas map[int32]int) []int32 {
	var ids []int32
	for _, b := range md.Brokers {
		ids = append(ids, b.NodeID)
	}
	for id := range replicas {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// printCounts writes a table of brokers and, per column, its count.
func printCounts(w io.Writer, columns []string, ids []int32, counts ...map[int32]int) {
	t := table(w)
	row(t, append([]string{"BROKER"}, columns...)...)
	for _, id := range ids {
		cells := []string{strconv.Itoa(int(id))}
		for _, c := range counts {
			cells = append(cells, strconv.Itoa(c[id]))
		}
		row(t, cells...)
	}
	t.Flush()
}

// executeMoves carries out moves: throttle, submit, progress until done,
// preferred election of the moved partitions, throttle removed, counts
// printed. parts is the whole assignment, to refuse to start while
// another reassignment is in progress.
func executeMoves(c *command, adm *kadm.Client, parts []reassign.Assignment, moves []reassign.Move, mf *moveFlags) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	step := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, adminTimeout) }
	sctx, cancel := step()
	busy, err := ongoing(sctx, adm, assignmentsSet(parts))
	cancel()
	if err != nil {
		return c.fail(err)
	}
	if len(busy) > 0 {
		return c.fail(fmt.Errorf("a reassignment is in progress (%d partitions%s): wait for it to end, or cancel it with sluice topic reassign --cancel", len(busy), sample(busy)))
	}
	w := c.stdout
	fmt.Fprintln(w)
	throttled := mf.throttle >= 0
	if throttled {
		sctx, cancel := step()
		err := setThrottles(sctx, adm, moves, mf.throttle)
		cancel()
		if err != nil {
			return c.fail(fmt.Errorf("setting the throttle: %w", err))
		}
		brokers, _, _ := throttleTargets(moves)
		fmt.Fprintf(w, "The inter-broker throttle limit was set to %d B/s on brokers %s.\n", mf.throttle, ints(brokers))
	}
	clear := func() int {
		if !throttled {
			return 0
		}
		brokers, leader, _ := throttleTargets(moves)
		sctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		defer cancel()
		topics := slices.Sorted(maps.Keys(leader))
		if err := clearThrottles(sctx, adm, brokers, topics); err != nil {
			return c.fail(fmt.Errorf("removing the throttle: %w", err))
		}
		fmt.Fprintf(w, "Throttles removed from brokers %s and topics %s.\n", ints(brokers), strings.Join(topics, ","))
		return 0
	}

	req := make([]reassign.Assignment, len(moves))
	for i, m := range moves {
		req[i] = reassign.Assignment{Topic: m.Topic, Partition: m.Partition, Replicas: m.To}
	}
	sctx, cancel = step()
	failed, err := submit(sctx, adm, req, false)
	cancel()
	if err != nil {
		clear()
		return c.fail(err)
	}
	if len(failed) > 0 {
		fmt.Fprintln(c.stderr, "Error reassigning partition(s):")
		printFailures(c.stderr, failed)
		moves = slices.DeleteFunc(moves, func(m reassign.Move) bool {
			return slices.ContainsFunc(failed, func(f reassignFailure) bool { return f.partition == reassign.PartitionName(m.Topic, m.Partition) })
		})
	}
	code := 0
	if len(failed) > 0 {
		code = 1
	}
	if len(moves) == 0 {
		clear()
		return 1
	}
	fmt.Fprintf(w, "Reassigning %d partitions.\n", len(moves))
	if err := waitMoves(ctx, adm, moves, mf.interval, w); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(c.stderr, "Interrupted: the reassignment goes on in the cluster (the throttle, if any, stays until removed).")
			return 130
		}
		return c.fail(err)
	}
	elected, already, bad, err := electPreferred(ctx, adm, movesSet(moves), mf.interval)
	if err != nil {
		c.warn("preferred leader election: %s", errorText(err))
		code = 1
	}
	fmt.Fprintf(w, "Preferred leader election: %d partitions elected, %d already led by their preferred replica.\n", elected, already)
	if len(bad) > 0 {
		fmt.Fprintln(c.stderr, "Error completing preferred leader election for partition(s):")
		printFailures(c.stderr, bad)
		code = 1
	}
	if clear() != 0 {
		code = 1
	}
	sctx, cancel = step()
	defer cancel()
	waitLeaders(sctx, adm, moves, mf.interval)
	md, after, _, err := clusterAssignment(sctx, adm)
	if err != nil {
		return c.fail(err)
	}
	replicas, _ := reassign.Counts(after)
	fmt.Fprintln(w)
	printCounts(w, []string{"REPLICAS", "LEADERS"}, brokerIDs(md, replicas), replicas, currentLeaders(md))
	return code
}

// waitLeaders waits, for up to electRetry, for Metadata to show each moved
// partition led by its preferred replica (the election's outcome reaches
// every broker's metadata shortly after the controller answers).
func waitLeaders(ctx context.Context, adm *kadm.Client, moves []reassign.Move, interval time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, electRetry)
	defer cancel()
	for {
		md, err := adm.Metadata(ctx)
		if err == nil && preferredLeading(md, moves) {
			return
		}
		if pause(ctx, interval/4) != nil {
			return
		}
	}
}

// preferredLeading is whether md shows every move's partition led by the
// first of its target replicas.
func preferredLeading(md kadm.Metadata, moves []reassign.Move) bool {
	for _, m := range moves {
		p, ok := md.Topics[m.Topic].Partitions[m.Partition]
		if !ok || p.Leader != m.To[0] {
			return false
		}
	}
	return true
}
