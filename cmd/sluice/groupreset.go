package main

// sluice group reset-offsets: new committed offsets for a consumer group
// without active members, planned and printed, committed with --execute,
// as kafka-consumer-groups.sh --reset-offsets does.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

const resetUsage = `usage: sluice group reset-offsets GROUP (--topic T[:P,...] ... | --all-topics)
       (--to-earliest | --to-latest | --to-offset N | --to-datetime TIME) [--execute]

Plans new committed offsets for GROUP and prints them as
GROUP TOPIC PARTITION NEW-OFFSET; with --execute commits them. Without
--execute it is a dry run and nothing changes.

--topic T resets every partition of T, --topic T:0,2 partitions 0 and 2;
--all-topics every partition the group has committed offsets for. The
group's members read from the new offsets when they next start.

--to-earliest is each partition's log start, --to-latest its end (the high
watermark), --to-offset N offset N (clamped to [start, end]),
--to-datetime the first record at or after TIME (RFC 3339, local
2006-01-02T15:04:05.000 or Unix milliseconds; the end if there is none).

As in Kafka, offsets can only be reset while the group has no active
members (state Empty, or no such group yet): stop its consumers first.
`

func runGroupResetOffsets(args []string, stdout, stderr io.Writer) int {
	c := newCommand("sluice group reset-offsets", resetUsage, stdout, stderr)
	cf := addClientFlags(c.fs)
	var topicSpecs listFlag
	c.fs.Var(&topicSpecs, "topic", "`topic` or topic:partition,partition,... whose offsets to reset (repeatable)")
	allTopics := c.fs.Bool("all-topics", false, "reset every partition the group has committed offsets for")
	earliest := c.fs.Bool("to-earliest", false, "to each partition's log start offset")
	latest := c.fs.Bool("to-latest", false, "to each partition's end offset")
	toOffset := c.fs.Int64("to-offset", 0, "to this `offset`, clamped to each partition's [start, end]")
	toDatetime := c.fs.String("to-datetime", "", "to the first record at or after this `time`")
	execute := c.fs.Bool("execute", false, "commit the new offsets (without it: a dry run)")
	dryRun := c.fs.Bool("dry-run", false, "only print the plan (the default)")
	names, code, done := c.parse(args)
	if done {
		return code
	}
	if len(names) != 1 {
		return c.usageError("want exactly one group, got %d arguments", len(names))
	}
	group := names[0]
	targets := 0
	for _, name := range []string{"to-earliest", "to-latest", "to-offset", "to-datetime"} {
		if isSet(c.fs, name) {
			targets++
		}
	}
	if targets != 1 {
		return c.usageError("give one of --to-earliest, --to-latest, --to-offset and --to-datetime")
	}
	if (len(topicSpecs) > 0) == *allTopics {
		return c.usageError("give --topic or --all-topics")
	}
	if *execute && *dryRun {
		return c.usageError("--execute and --dry-run exclude each other")
	}
	if isSet(c.fs, "to-offset") && *toOffset < 0 {
		return c.usageError("--to-offset %d: must not be negative", *toOffset)
	}
	var milli int64 = -1
	if isSet(c.fs, "to-datetime") {
		ms, err := parseTime("to-datetime", *toDatetime)
		if err != nil {
			return c.usageError("%v", err)
		}
		milli = ms
	}
	wanted, err := parseTopicSpecs(topicSpecs)
	if err != nil {
		return c.usageError("%v", err)
	}

	ctx, adm, release, err := openAdmin(cf)
	if err != nil {
		return c.fail(err)
	}
	defer release()

	if err := checkInactive(ctx, adm, group); err != nil {
		return c.fail(err)
	}
	var partitions map[string][]int32
	if *allTopics {
		partitions, err = committedPartitions(ctx, adm, group)
	} else {
		partitions, err = topicPartitions(ctx, adm, wanted)
	}
	if err != nil {
		return c.fail(err)
	}

	plan := kadm.Offsets{}
	for _, topic := range sortedKeys(partitions) {
		lo, err := listOffsets(ctx, adm.ListStartOffsets, topic)
		if err != nil {
			return c.fail(err)
		}
		hi, err := listOffsets(ctx, adm.ListEndOffsets, topic)
		if err != nil {
			return c.fail(err)
		}
		var at kadm.ListedOffsets
		if milli >= 0 {
			at, err = listOffsets(ctx, func(ctx context.Context, t ...string) (kadm.ListedOffsets, error) {
				return adm.ListOffsetsAfterMilli(ctx, milli, t...)
			}, topic)
			if err != nil {
				return c.fail(err)
			}
		}
		for _, p := range partitions[topic] {
			start, _ := lo.Lookup(topic, p)
			end, _ := hi.Lookup(topic, p)
			var next int64
			switch {
			case *earliest:
				next = start.Offset
			case *latest:
				next = end.Offset
			case milli >= 0:
				next = end.Offset
				if l, ok := at.Lookup(topic, p); ok && l.Offset >= 0 {
					next = l.Offset
				}
			default:
				next = min(max(*toOffset, start.Offset), end.Offset)
				if next != *toOffset {
					c.warn("partition %s-%d: offset %d is outside [%d, %d]; using %d", topic, p, *toOffset, start.Offset, end.Offset, next)
				}
			}
			plan.Add(kadm.Offset{Topic: topic, Partition: p, At: next, LeaderEpoch: -1})
		}
	}

	if *execute {
		resps, err := adm.CommitOffsets(ctx, group, plan)
		if err == nil {
			err = resps.Error()
		}
		if err != nil {
			return c.fail(fmt.Errorf("group %s: committing offsets: %w", group, err))
		}
	}
	t := table(stdout)
	row(t, "GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
	for _, o := range plan.Sorted() {
		row(t, group, o.Topic, strconv.Itoa(int(o.Partition)), strconv.FormatInt(o.At, 10))
	}
	t.Flush()
	if !*execute {
		fmt.Fprintf(stderr, "%s: dry run, nothing changed: add --execute to commit these offsets\n", c.name)
	}
	return 0
}

// parseTopicSpecs parses --topic values, "topic" or "topic:0,1,2", into
// the partitions wanted per topic; nil means every partition.
func parseTopicSpecs(specs []string) (map[string][]int32, error) {
	out := map[string][]int32{}
	for _, spec := range specs {
		topic, list, hasList := strings.Cut(spec, ":")
		if topic == "" {
			return nil, fmt.Errorf("--topic %q: no topic name", spec)
		}
		if !hasList {
			out[topic] = nil
			continue
		}
		for s := range strings.SplitSeq(list, ",") {
			p, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
			if err != nil || p < 0 {
				return nil, fmt.Errorf("--topic %q: want topic:partition,partition,... with partitions as numbers", spec)
			}
			out[topic] = append(out[topic], int32(p))
		}
	}
	return out, nil
}

// checkInactive returns Kafka's error unless group is Empty or does not
// exist: the offsets of a group with members are theirs to commit.
func checkInactive(ctx context.Context, adm *kadm.Client, group string) error {
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return err
	}
	d, ok := described[group]
	if !ok {
		return fmt.Errorf("group %s: no answer from the group's coordinator", group)
	}
	if d.Err != nil {
		return fmt.Errorf("group %s: %w", group, kafkaError(d.Err, d.ErrMessage))
	}
	if d.State != "Empty" && d.State != "Dead" {
		return fmt.Errorf("assignments can only be reset if the group '%s' is inactive, but the current state is %s", group, d.State)
	}
	return nil
}

// committedPartitions returns the partitions group has committed offsets
// for, sorted per topic.
func committedPartitions(ctx context.Context, adm *kadm.Client, group string) (map[string][]int32, error) {
	fetched, err := adm.FetchOffsets(ctx, group)
	if err == nil {
		err = fetched.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("group %s: fetching committed offsets: %w", group, err)
	}
	out := map[string][]int32{}
	fetched.Each(func(o kadm.OffsetResponse) {
		if o.At >= 0 {
			out[o.Topic] = append(out[o.Topic], o.Partition)
		}
	})
	if len(out) == 0 {
		return nil, fmt.Errorf("group %s has no committed offsets", group)
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out, nil
}

// topicPartitions checks wanted (partitions per topic; nil for all) against
// the brokers' metadata and returns the partitions, sorted per topic.
func topicPartitions(ctx context.Context, adm *kadm.Client, wanted map[string][]int32) (map[string][]int32, error) {
	topics, err := adm.ListTopics(ctx, sortedKeys(wanted)...)
	if err != nil {
		return nil, err
	}
	out := map[string][]int32{}
	for _, topic := range sortedKeys(wanted) {
		td, ok := topics[topic]
		if !ok {
			return nil, fmt.Errorf("topic %s: no answer in the metadata", topic)
		}
		if td.Err != nil {
			return nil, fmt.Errorf("topic %s: %w", topic, td.Err)
		}
		ps := wanted[topic]
		if ps == nil {
			ps = td.Partitions.Numbers()
		}
		for _, p := range ps {
			if _, ok := td.Partitions[p]; !ok {
				return nil, fmt.Errorf("topic %s has no partition %d (it has %d)", topic, p, len(td.Partitions))
			}
		}
		ps = slices.Clone(ps)
		slices.Sort(ps)
		out[topic] = slices.Compact(ps)
	}
	if len(out) == 0 {
		return nil, errors.New("no topic to reset")
	}
	return out, nil
}

// sortedKeys returns m's keys, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
