package main

// sluice topic reassign: kafka-reassign-partitions.sh's actions, options,
// JSON files (reassignjson.go) and messages, so that existing plans and
// scripts carry over.

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/sluice-io/sluice/cmd/sluice/reassign"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func runTopicReassign(args []string, stdout, stderr io.Writer) int {
	c := newCommand("sluice topic reassign", `usage: sluice topic reassign --generate --topics-to-move-json-file FILE --broker-list ID,ID,...
       sluice topic reassign --execute --reassignment-json-file FILE [--throttle BYTES/S] [--additional]
       sluice topic reassign --verify --reassignment-json-file FILE [--preserve-throttles]
       sluice topic reassign --cancel --reassignment-json-file FILE [--preserve-throttles]
       sluice topic reassign --list

Moves partition replicas between brokers as kafka-reassign-partitions.sh
does, with its JSON files:

--generate prints the current assignment of the topics in FILE
({"version":1,"topics":[{"topic":"NAME"}]}) and a proposed one on the
brokers of --broker-list, from sluice's planner (replicas and preferred
leaders balanced, racks respected, as few moves as possible; the proposal
lists only the partitions that change).

--execute submits the reassignment in FILE
({"version":1,"partitions":[{"topic":"NAME","partition":0,"replicas":[1,2]}]}),
printing the current assignment first, to roll back with. --throttle sets
the replication throttle of the move (see sluice cluster rebalance -h);
run --verify until done to remove it. The controller checks each
partition and its errors are printed per partition (exit code 1).

--verify prints, per partition of FILE, whether its reassignment is
completed or still in progress, and once all are, removes the throttles
from every broker and the file's topics (unless --preserve-throttles).

--cancel cancels the reassignments of FILE's partitions that are in
progress: each returns to its original replicas.

--list prints the reassignments in progress.
`, stdout, stderr)
	cf := addClientFlags(c.fs)
	generate := c.fs.Bool("generate", false, "propose a reassignment of the topics of --topics-to-move-json-file on --broker-list")
	execute := c.fs.Bool("execute", false, "start the reassignment of --reassignment-json-file")
	verify := c.fs.Bool("verify", false, "show the progress of the reassignment of --reassignment-json-file")
	cancelFlag := c.fs.Bool("cancel", false, "cancel the reassignment of --reassignment-json-file")
	list := c.fs.Bool("list", false, "list the reassignments in progress")
	topicsFile := c.fs.String("topics-to-move-json-file", "", "with --generate: the topics to move, as JSON")
	brokerList := c.fs.String("broker-list", "", "with --generate: the brokers to place the replicas on, comma-separated ids")
	planFile := c.fs.String("reassignment-json-file", "", "the reassignment, as JSON")
	throttle := c.fs.Int64("throttle", -1, "with --execute: bound the move's replication to `BYTES/S` (-1: no throttle)")
	additional := c.fs.Bool("additional", false, "with --execute: start even while other reassignments are in progress")
	preserve := c.fs.Bool("preserve-throttles", false, "with --verify or --cancel: leave the throttles in place")
	ignoreRacks := c.fs.Bool("disable-rack-aware", false, "with --generate: plan as if no broker had a rack")
	pos, code, done := c.parse(args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return c.usageError("unexpected argument %q", pos[0])
	}
	if countTrue(*generate, *execute, *verify, *cancelFlag, *list) != 1 {
		return c.usageError("give one of --generate, --execute, --verify, --cancel and --list")
	}
	switch {
	case *generate && (*topicsFile == "" || *brokerList == ""):
		return c.usageError("--generate needs --topics-to-move-json-file and --broker-list")
	case (*execute || *verify || *cancelFlag) && *planFile == "":
		return c.usageError("--execute, --verify and --cancel need --reassignment-json-file")
	}

	r := &reassigner{c: c}
	var err error
	if *generate {
		if r.topics, err = readJSONFile(*topicsFile, reassign.ParseTopics); err == nil {
			r.brokers, err = reassign.ParseBrokerList(*brokerList)
		}
	} else if *planFile != "" {
		r.plan, err = readJSONFile(*planFile, reassign.ParseAssignments)
	}
	if err != nil {
		return c.fail(err)
	}
	ctx, adm, release, err := openAdmin(cf)
	if err != nil {
		return c.fail(err)
	}
	defer release()
	r.ctx, r.adm = ctx, adm
	switch {
	case *generate:
		return r.generate(*ignoreRacks)
	case *execute:
		return r.execute(*throttle, *additional)
	case *verify:
		return r.verify(*preserve)
	case *cancelFlag:
		return r.cancel(*preserve)
	}
	return r.list()
}

// readJSONFile reads and parses one of the JSON files.
func readJSONFile[T any](name string, parse func(string, []byte) (T, error)) (T, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		var zero T
		return zero, err
	}
	return parse(name, data)
}

// reassigner is one sluice topic reassign run.
type reassigner struct {
	c       *command
	ctx     context.Context
	adm     *kadm.Client
	plan    []reassign.Assignment // --reassignment-json-file, sorted
	topics  []string              // --topics-to-move-json-file
	brokers []int32               // --broker-list
}

func (r *reassigner) generate(ignoreRacks bool) int {
	_, parts, live, err := clusterAssignment(r.ctx, r.adm, r.topics...)
	if err != nil {
		return r.c.fail(err)
	}
	var targets []reassign.Broker
	for _, id := range r.brokers {
		i := slices.IndexFunc(live, func(b reassign.Broker) bool { return b.ID == id })
		if i < 0 {
			return r.c.fail(fmt.Errorf("broker %d of --broker-list is not live", id))
		}
		targets = append(targets, live[i])
	}
	moves, err := reassign.Plan(reassign.Input{Partitions: parts, Brokers: targets, IgnoreRacks: ignoreRacks})
	if err != nil {
		return r.c.fail(err)
	}
	proposed := make([]reassign.Assignment, len(moves))
	for i, m := range moves {
		proposed[i] = reassign.Assignment{Topic: m.Topic, Partition: m.Partition, Replicas: m.To}
	}
	fmt.Fprintf(r.c.stdout, "Current partition replica assignment\n%s\n\n", reassign.Format(parts))
	fmt.Fprintf(r.c.stdout, "Proposed partition reassignment configuration\n%s\n", reassign.Format(proposed))
	return 0
}

// current returns the replicas now of the plan's partitions that exist
// (Metadata), in the plan's order.
func (r *reassigner) current() (kadm.Metadata, []reassign.Assignment, error) {
	md, err := r.adm.Metadata(r.ctx, r.planTopics()...)
	if err != nil {
		return md, nil, fmt.Errorf("metadata: %w", err)
	}
	var out []reassign.Assignment
	for _, p := range r.plan {
		if q, ok := md.Topics[p.Topic].Partitions[p.Partition]; ok && md.Topics[p.Topic].Err == nil {
			out = append(out, reassign.Assignment{Topic: p.Topic, Partition: p.Partition, Replicas: q.Replicas})
		}
	}
	return md, out, nil
}

// planTopics lists the plan's topics, sorted.
func (r *reassigner) planTopics() []string {
	var out []string
	for _, p := range r.plan {
		if len(out) == 0 || out[len(out)-1] != p.Topic {
			out = append(out, p.Topic)
		}
	}
	return out
}

func (r *reassigner) execute(throttle int64, additional bool) int {
	w := r.c.stdout
	if !additional {
		_, all, _, err := clusterAssignment(r.ctx, r.adm)
		if err != nil {
			return r.c.fail(err)
		}
		busy, err := ongoing(r.ctx, r.adm, assignmentsSet(all))
		if err != nil {
			return r.c.fail(err)
		}
		if len(busy) > 0 {
			fmt.Fprintln(w, "Cannot execute because there is an existing partition assignment.  Use --additional to override this and create a new partition assignment in addition to the existing one. The --additional flag can also be used to change the throttle by resubmitting the current reassignment.")
			return 1
		}
	}
	_, cur, err := r.current()
	if err != nil {
		return r.c.fail(err)
	}
	fmt.Fprintf(w, "Current partition replica assignment\n\n%s\n\nSave this to use as the --reassignment-json-file option during rollback\n", reassign.Format(cur))
	if throttle >= 0 {
		fmt.Fprintln(w, "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed.")
		target := map[string][]int32{}
		for _, p := range r.plan {
			target[reassign.PartitionName(p.Topic, p.Partition)] = p.Replicas
		}
		var moves []reassign.Move
		for _, p := range cur {
			moves = append(moves, reassign.Move{Topic: p.Topic, Partition: p.Partition, From: p.Replicas, To: target[reassign.PartitionName(p.Topic, p.Partition)]})
		}
		if err := setThrottles(r.ctx, r.adm, moves, throttle); err != nil {
			return r.c.fail(fmt.Errorf("setting the throttle: %w", err))
		}
		fmt.Fprintf(w, "The inter-broker throttle limit was set to %d B/s\n", throttle)
	}
	failed, err := submit(r.ctx, r.adm, r.plan, false)
	if err != nil {
		return r.c.fail(err)
	}
	if len(failed) > 0 {
		fmt.Fprintln(w, "Error reassigning partition(s):")
		printFailures(w, failed)
		return 1
	}
	fmt.Fprintf(w, "Successfully started partition reassignment%s for %s\n", plural(len(r.plan)), r.names(r.plan))
	return 0
}

func (r *reassigner) verify(preserve bool) int {
	w := r.c.stdout
	busy, err := ongoing(r.ctx, r.adm, assignmentsSet(r.plan))
	if err != nil {
		return r.c.fail(err)
	}
	md, cur, err := r.current()
	if err != nil {
		return r.c.fail(err)
	}
	fmt.Fprintln(w, "Status of partition reassignment:")
	code := 0
	for _, p := range r.plan {
		name := reassign.PartitionName(p.Topic, p.Partition)
		i := slices.IndexFunc(cur, func(q reassign.Assignment) bool { return q.Topic == p.Topic && q.Partition == p.Partition })
		switch {
		case slices.Contains(busy, name):
			fmt.Fprintf(w, "Reassignment of partition %s is still in progress.\n", name)
		case i < 0:
			fmt.Fprintf(w, "Reassignment of partition %s failed: %s\n", name, errorText(partitionMissing(md, p)))
			code = 1
		case slices.Equal(cur[i].Replicas, p.Replicas):
			fmt.Fprintf(w, "Reassignment of partition %s is completed.\n", name)
		default:
			fmt.Fprintf(w, "There is no active reassignment of partition %s, but replica set is %s rather than %s.\n", name, ints(cur[i].Replicas), ints(p.Replicas))
		}
	}
	if len(busy) > 0 || preserve {
		return code
	}
	return max(code, r.clearAll(md))
}

// partitionMissing is the error of a partition Metadata does not show.
func partitionMissing(md kadm.Metadata, p reassign.Assignment) error {
	if t, ok := md.Topics[p.Topic]; ok && t.Err != nil {
		return t.Err
	}
	return kerr.UnknownTopicOrPartition
}

func (r *reassigner) cancel(preserve bool) int {
	w := r.c.stdout
	busy, err := ongoing(r.ctx, r.adm, assignmentsSet(r.plan))
	if err != nil {
		return r.c.fail(err)
	}
	var cancel []reassign.Assignment
	for _, p := range r.plan {
		if slices.Contains(busy, reassign.PartitionName(p.Topic, p.Partition)) {
			cancel = append(cancel, p)
		}
	}
	if len(cancel) == 0 {
		fmt.Fprintln(w, "None of the specified partition reassignments are active.")
	} else {
		failed, err := submit(r.ctx, r.adm, cancel, true)
		if err != nil {
			return r.c.fail(err)
		}
		if len(failed) > 0 {
			fmt.Fprintf(w, "Error cancelling partition reassignment%s for:\n", plural(len(failed)))
			printFailures(w, failed)
			return 1
		}
		fmt.Fprintf(w, "Successfully cancelled partition reassignment%s for: %s\n", plural(len(cancel)), r.names(cancel))
	}
	if preserve {
		return 0
	}
	md, err := r.adm.Metadata(r.ctx, r.planTopics()...)
	if err != nil {
		return r.c.fail(err)
	}
	return r.clearAll(md)
}

// clearAll removes the throttles, as kafka-reassign-partitions.sh does
// once a reassignment is done or cancelled: the rates from every live
// broker (the brokers that took part are not known for sure), the
// throttled replicas from the plan's topics. A broker of the plan that is
// not live cannot be asked (its dynamic configs are its own): it is named
// in a warning.
func (r *reassigner) clearAll(md kadm.Metadata) int {
	var brokers []int32
	for _, b := range md.Brokers {
		brokers = append(brokers, b.NodeID)
	}
	slices.Sort(brokers)
	var gone []int32
	for _, p := range r.plan {
		for _, b := range p.Replicas {
			if !slices.Contains(brokers, b) && !slices.Contains(gone, b) {
				gone = append(gone, b)
			}
		}
	}
	slices.Sort(gone)
	topics := slices.Sorted(maps.Keys(md.Topics))
	topics = slices.DeleteFunc(topics, func(t string) bool { return md.Topics[t].Err != nil })
	fmt.Fprintf(r.c.stdout, "Clearing broker-level throttles on broker%s %s\n", plural(len(brokers)), ints(brokers))
	fmt.Fprintf(r.c.stdout, "Clearing topic-level throttles on topic%s %s\n", plural(len(topics)), strings.Join(topics, ","))
	if len(gone) > 0 {
		r.c.warn("broker%s %s of the plan not live: any throttle rate set on %s stays until cleared (sluice topic reassign --verify again once back)", plural(len(gone)), ints(gone), map[bool]string{true: "it", false: "them"}[len(gone) == 1])
	}
	if err := clearThrottles(r.ctx, r.adm, brokers, topics); err != nil {
		return r.c.fail(fmt.Errorf("clearing the throttles: %w", err))
	}
	return 0
}

func (r *reassigner) list() int {
	_, all, _, err := clusterAssignment(r.ctx, r.adm)
	if err != nil {
		return r.c.fail(err)
	}
	rs, err := r.adm.ListPartitionReassignments(r.ctx, assignmentsSet(all))
	if err != nil {
		return r.c.fail(fmt.Errorf("ListPartitionReassignments: %w", err))
	}
	var lines []string
	for _, x := range rs.Sorted() {
		if len(x.AddingReplicas)+len(x.RemovingReplicas) > 0 {
			lines = append(lines, fmt.Sprintf("%s: replicas: %s. adding: %s. removing: %s.",
				reassign.PartitionName(x.Topic, x.Partition), ints(x.Replicas), ints(x.AddingReplicas), ints(x.RemovingReplicas)))
		}
	}
	if len(lines) == 0 {
		fmt.Fprintln(r.c.stdout, "No partition reassignments found.")
		return 0
	}
	fmt.Fprintf(r.c.stdout, "Current partition reassignments:\n%s\n", strings.Join(lines, "\n"))
	return 0
}

// names joins the partitions' names with commas.
func (r *reassigner) names(parts []reassign.Assignment) string {
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i] = reassign.PartitionName(p.Topic, p.Partition)
	}
	return strings.Join(s, ",")
}

// plural is "s" unless n is 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
