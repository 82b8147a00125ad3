package main

// sluice topic: create, list, describe, alter the configuration of and
// delete topics, with output shaped like Kafka's kafka-topics.sh (and
// elect their leaders: topicelect.go; reassign them: topicreassign.go).

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const topicUsage = `usage: sluice topic <command> [flags]

commands:
  create NAME        create a topic
  list               list topics, one name per line
  describe [NAME...] partitions, leaders, offsets and configuration (all topics if no name)
  alter-config NAME  set or delete topic configuration keys
  delete NAME...     delete topics
  elect-leaders      preferred or unclean leader elections
  reassign           move partitions between brokers (kafka-reassign-partitions.sh's JSON)

Run "sluice topic <command> -h" for a command's flags.
`

func runTopic(args []string, stdout, stderr io.Writer) int {
	return runSubcommand("topic", topicUsage, map[string]func([]string, io.Writer, io.Writer) int{
		"create":        runTopicCreate,
		"list":          runTopicList,
		"describe":      runTopicDescribe,
		"alter-config":  runTopicAlterConfig,
		"delete":        runTopicDelete,
		"elect-leaders": runTopicElectLeaders,
		"reassign":      runTopicReassign,
	}, args, stdout, stderr)
}

// adminContext is the context of one topic command: bounded, and cancelled
// by SIGINT or SIGTERM.
func adminContext() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, adminTimeout)
	return ctx, func() { cancel(); stop() }
}

// openAdmin opens a command's admin session: adminContext's context and an
// admin client for cf's brokers, with opts; release ends both.
func openAdmin(cf *clientFlags, opts ...kgo.Opt) (ctx context.Context, adm *kadm.Client, release func(), err error) {
	ctx, cancel := adminContext()
	if adm, err = admin(ctx, cf, opts...); err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return ctx, adm, func() { adm.Close(); cancel() }, nil
}

// admin returns an admin client for cf's brokers, with opts; close it
// with Close.
func admin(ctx context.Context, cf *clientFlags, opts ...kgo.Opt) (*kadm.Client, error) {
	cl, err := cf.client(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

func runTopicCreate(args []string, stdout, stderr io.Writer) int {
	c := newCommand("sluice topic create", `usage: sluice topic create NAME [--partitions N] [--replicas R] [--config key=value ...]

Creates topic NAME and prints "Created topic NAME.". -1 for --partitions or
--replicas takes the broker's default (num.partitions,
default.replication.factor).
`, stdout, stderr)
	cf := addClientFlags(c.fs)
	partitions := c.fs.Int("partitions", -1, "number of partitions (-1: the broker's default)")
	replicas := c.fs.Int("replicas", -1, "replication factor (-1: the broker's default)")
	c.fs.IntVar(replicas, "replication-factor", -1, "same as --replicas, as kafka-topics.sh spells it")
	var configs listFlag
	c.fs.Var(&configs, "config", "topic configuration `key=value` (repeatable), e.g. retention.ms=86400000")
	names, code, done := c.parse(args)
	if done {
		return code
	}
	if len(names) != 1 {
		return c.usageError("want exactly one topic name, got %d", len(names))
	}
	if *partitions < -1 || *partitions == 0 || *replicas < -1 || *replicas == 0 || *replicas > 32767 {
		return c.usageError("--partitions and --replicas must be positive, or -1 for the broker's default")
	}
	kvs, err := keyValues(configs, "config")
	if err != nil {
		return c.usageError("%v", err)
	}
	cfgs := map[string]*string{}
	for _, kv := range kvs {
		cfgs[kv[0]] = kadm.StringPtr(kv[1])
	}

	ctx, adm, release, err := openAdmin(cf)
	if err != nil {
		return c.fail(err)
	}
	defer release()
	name := names[0]
	resp, err := adm.CreateTopic(ctx, int32(*partitions), int16(*replicas), cfgs, name)
	if err != nil {
		return c.fail(fmt.Errorf("topic %s: %w", name, kafkaError(err, resp.ErrMessage)))
	}
	fmt.Fprintf(stdout, "Created topic %s.\n", name)
	return 0
}

func runTopicList(args []string, stdout, stderr io.Writer) int {
	c := newCommand("sluice topic list", `usage: sluice topic list [--internal]

Prints the names of the topics, one a line, sorted. Internal topics (names
starting with "__") are left out unless --internal.
`, stdout, stderr)
	cf := addClientFlags(c.fs)
	internal := c.fs.Bool("internal", false, "include internal topics (names starting with __)")
	pos, code, done := c.parse(args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return c.usageError("unexpected argument %q", pos[0])
	}
	ctx, adm, release, err := openAdmin(cf)
	if err != nil {
		return c.fail(err)
	}
	defer release()
	topics, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		return c.fail(err)
	}
	for _, name := range topics.Names() {
		if *internal || !isInternalTopic(topics[name]) {
			fmt.Fprintln(stdout, name)
		}
	}
	return 0
}

// isInternalTopic is whether a topic is one of Kafka's internal ones
// (__consumer_offsets, __transaction_state, ...).
func isInternalTopic(t kadm.TopicDetail) bool {
	return t.IsInternal || strings.HasPrefix(t.Topic, "__")
}

func runTopicDescribe(args []string, stdout, stderr io.Writer) int {
	c := newCommand("sluice topic describe", `usage: sluice topic describe [NAME...] [--internal] [--under-replicated-partitions | --under-min-isr-partitions | --at-min-isr-partitions | --unavailable-partitions]

Describes the named topics, or all of them, as kafka-topics.sh --describe
does: a line per topic with its ID, partition count, replication factor and
the configuration keys not at their defaults, then a line per partition
with its leader, replicas, in-sync replicas and offsets START-END (the log
start offset and the high watermark). With one of the partition filters,
only the partitions it selects are shown, without the topic lines, as
kafka-topics.sh shows them: fewer in-sync replicas than replicas; fewer
than the topic's min.insync.replicas, or no leader; exactly
min.insync.replicas; no leader.
`, stdout, stderr)
	cf := addClientFlags(c.fs)
	internal := c.fs.Bool("internal", false, "with no NAME: include internal topics (names starting with __)")
	underReplicated := c.fs.Bool("under-replicated-partitions", false, "only partitions whose in-sync replicas are fewer than their replicas")
	underMinISR := c.fs.Bool("under-min-isr-partitions", false, "only partitions whose in-sync replicas are fewer than min.insync.replicas")
	atMinISR := c.fs.Bool("at-min-isr-partitions", false, "only partitions whose in-sync replicas are exactly min.insync.replicas")
	unavailable := c.fs.Bool("unavailable-partitions", false, "only partitions without a leader")
	names, code, done := c.parse(args)
	if done {
		return code
	}
	if n := countTrue(*underReplicated, *underMinISR, *atMinISR, *unavailable); n > 1 {
		return c.usageError("give one of --under-replicated-partitions, --under-min-isr-partitions, --at-min-isr-partitions and --unavailable-partitions")
	}
	ctx, adm, release, err := openAdmin(cf)
	if err != nil {
		return c.fail(err)
	}
	defer release()

	md, err := adm.Metadata(ctx, names...)
	if err != nil {
		return c.fail(err)
	}
	failed := false
	var topics []kadm.TopicDetail
	for _, t := range md.Topics.Sorted() {
		switch {
		case t.Err != nil:
			fmt.Fprintf(stderr, "%s: topic %s: %s\n", c.name, t.Topic, errorText(t.Err))
			failed = true
		case len(names) > 0 || *internal || !isInternalTopic(t):
			topics = append(topics, t)
		}
	}
	if len(topics) == 0 {
		if failed {
			return 1
		}
		return 0
	}
	list := make([]string, len(topics))
	for i, t := range topics {
		list[i] = t.Topic
	}
	// Offsets of partitions without a leader cannot be listed: they show
	// as unknown, the rest as usual (kadm answers what it could with the
	// error).
	starts, err := adm.ListStartOffsets(ctx, list...)
	if err != nil {
		c.warn("some start offsets not listed: %s", errorText(err))
	}
	ends, err := adm.ListEndOffsets(ctx, list...)
	if err != nil {
		c.warn("some end offsets not listed: %s", errorText(err))
	}
	configs, minISR, err := describedConfigs(ctx, adm, list...)
	if err != nil {
		c.warn("configs not shown: %s", errorText(err))
	}
	filtered := *underReplicated || *underMinISR || *atMinISR || *unavailable
	keep := func(t kadm.TopicDetail, p kadm.PartitionDetail) bool {
		n, known := minISR[t.Topic]
		switch {
		case *underReplicated:
			return len(p.ISR) < len(p.Replicas)
		case *underMinISR:
			return p.Leader < 0 || known && len(p.ISR) < n // as kafka-topics.sh: no leader counts
		case *atMinISR:
			return known && len(p.ISR) == n
		case *unavailable:
			return p.Leader < 0
		}
		return true
	}

	for _, t := range topics {
		if !filtered {
			fmt.Fprintf(stdout, "Topic: %s\tTopicId: %s\tPartitionCount: %d\tReplicationFactor: %d\tConfigs:%s\n",
				t.Topic, topicID(t.ID), len(t.Partitions), t.Partitions.NumReplicas(), spaced(configs[t.Topic]))
		}
		for _, p := range t.Partitions.Sorted() {
			if !keep(t, p) {
				continue
			}
			leader := "none"
			if p.Leader >= 0 {
				leader = strconv.Itoa(int(p.Leader))
			}
			offline := ""
			if len(p.OfflineReplicas) > 0 {
				// As kafka-topics.sh: replicas whose log cannot take writes
				// (a failed disk) or whose broker is gone.
				offline = "\tOffline: " + ints(p.OfflineReplicas)
			}
			fmt.Fprintf(stdout, "\tTopic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s%s\tOffsets: %s\n",
				t.Topic, p.Partition, leader, ints(p.Replicas), ints(p.ISR), offline, offsetRange(starts, ends, t.Topic, p.Partition))
		}
	}
	if failed {
		return 1
	}
	return 0
}

// topicID writes a topic ID as Kafka does: URL-safe base64 without padding.
func topicID(id kadm.TopicID) string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// ints joins broker IDs with commas, as kafka-topics.sh does.
func ints(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

// spaced is s with a leading space, or nothing for an empty s.
func spaced(s string) string {
	if s == "" {
		return ""
	}
	return " " + s
}

// offsetRange is "START-END" for a partition, or the error that kept
// either from being listed.
func offsetRange(starts, ends kadm.ListedOffsets, topic string, partition int32) string {
	s, sok := starts.Lookup(topic, partition)
	e, eok := ends.Lookup(topic, partition)
	switch {
	case !sok || !eok:
		return "unknown"
	case s.Err != nil:
		return errorName(s.Err)
	case e.Err != nil:
		return errorName(e.Err)
	}
	return fmt.Sprintf("%d-%d", s.Offset, e.Offset)
}

// errorName is a Kafka error's name (UNKNOWN_TOPIC_OR_PARTITION), or its
// text for any other error.
func errorName(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return errorText(err)
}

// nonDefaultConfigs returns, per topic, its configuration keys that are
// not at their default (any source but DEFAULT_CONFIG, as kafka-topics.sh
// shows), as "k=v,k=v" sorted by key. A topic whose configs could not be
// described is missing from the map and named in the error.
func nonDefaultConfigs(ctx context.Context, adm *kadm.Client, topics ...string) (map[string]string, error) {
	out, _, err := describedConfigs(ctx, adm, topics...)
	return out, err
}

// describedConfigs is nonDefaultConfigs, and each topic's effective
// min.insync.replicas.
func describedConfigs(ctx context.Context, adm *kadm.Client, topics ...string) (map[string]string, map[string]int, error) {
	rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
	out := map[string]string{}
	minISR := map[string]int{}
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			errs = append(errs, fmt.Errorf("topic %s: %w", rc.Name, kafkaError(rc.Err, rc.ErrMessage)))
			continue
		}
		var kvs []string
		for _, cfg := range rc.Configs {
			if cfg.Key == "min.insync.replicas" {
				if n, err := strconv.Atoi(cfg.MaybeValue()); err == nil {
					minISR[rc.Name] = n
				}
			}
			if cfg.Source == kmsg.ConfigSourceDefaultConfig {
				continue
			}
			v := cfg.MaybeValue()
			if cfg.Sensitive {
				v = "(sensitive)"
			}
			kvs = append(kvs, cfg.Key+"="+v)
		}
		slices.Sort(kvs)
		out[rc.Name] = strings.Join(kvs, ",")
	}
	return out, minISR, errors.Join(errs...)
}

func runTopicAlterConfig(args []string, stdout, stderr io.Writer) int {
	c := newCommand("sluice topic alter-config", `usage: sluice topic alter-config NAME [--set key=value ...] [--delete key ...]

Changes topic NAME's configuration with IncrementalAlterConfigs: --set sets
a key, --delete returns a key to its default. Keys not named keep their
values. Prints "Completed updating config for topic NAME." and the keys not
at their defaults afterwards.
`, stdout, stderr)
	cf := addClientFlags(c.fs)
	var sets, deletes listFlag
	c.fs.Var(&sets, "set", "set `key=value` (repeatable)")
	c.fs.Var(&deletes, "delete", "return `key` to its default (repeatable)")
	names, code, done := c.parse(args)
	if done {
		return code
	}
	if len(names) != 1 {
		return c.usageError("want exactly one topic name, got %d", len(names))
	}
	if len(sets)+len(deletes) == 0 {
		return c.usageError("nothing to change: give --set or --delete")
	}
	kvs, err := keyValues(sets, "set")
	if err != nil {
		return c.usageError("%v", err)
	}
	var alter []kadm.AlterConfig
	for _, kv := range kvs {
		alter = append(alter, kadm.AlterConfig{Op: kadm.SetConfig, Name: kv[0], Value: kadm.StringPtr(kv[1])})
	}
	for _, k := range deletes {
		alter = append(alter, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}

	ctx, adm, release, err := openAdmin(cf)
	if err != nil {
		return c.fail(err)
	}
	defer release()
	name := names[0]
	resps, err := adm.AlterTopicConfigs(ctx, alter, name)
	if err == nil {
		var r kadm.AlterConfigsResponse
		r, err = resps.On(name, nil)
		if err == nil {
			err = kafkaError(r.Err, r.ErrMessage)
		}
	}
	if err != nil {
		return c.fail(fmt.Errorf("topic %s: %w", name, err))
	}
	fmt.Fprintf(stdout, "Completed updating config for topic %s.\n", name)
	configs, err := nonDefaultConfigs(ctx, adm, name)
	if err != nil {
		c.warn("configs not shown: %s", errorText(err))
		return 0
	}
	fmt.Fprintf(stdout, "Configs:%s\n", spaced(configs[name]))
	return 0
}

func runTopicDelete(args []string, stdout, stderr io.Writer) int {
	c := newCommand("sluice topic delete", `usage: sluice topic delete NAME...

Deletes the named topics and their data, printing "Deleted topic NAME." for
each.
`, stdout, stderr)
	cf := addClientFlags(c.fs)
	names, code, done := c.parse(args)
	if done {
		return code
	}
	if len(names) == 0 {
		return c.usageError("name at least one topic")
	}
	ctx, adm, release, err := openAdmin(cf)
	if err != nil {
		return c.fail(err)
	}
	defer release()
	resps, err := adm.DeleteTopics(ctx, names...)
	if err != nil {
		return c.fail(fmt.Errorf("DeleteTopics: %w", err))
	}
	failed := false
	for _, name := range names {
		r, err := resps.On(name, nil)
		if err == nil {
			err = kafkaError(r.Err, r.ErrMessage)
		}
		if err != nil {
			fmt.Fprintf(stderr, "%s: topic %s: %s\n", c.name, name, errorText(err))
			failed = true
			continue
		}
		fmt.Fprintf(stdout, "Deleted topic %s.\n", name)
	}
	if failed {
		return 1
	}
	return 0
}

// countTrue counts the flags set.
func countTrue(flags ...bool) int {
	n := 0
	for _, f := range flags {
		if f {
			n++
		}
	}
	return n
}
