package main

// sluice topic elect-leaders: preferred or unclean leader elections, as
// Kafka's kafka-leader-election.sh, with a line per partition.

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func runTopicElectLeaders(args []string, stdout, stderr io.Writer) int {
	c := newCommand("sluice topic elect-leaders", `usage: sluice topic elect-leaders [--topic NAME [--partition P]] [--type preferred|unclean]

Asks the controller for leader elections (ElectLeaders), as
kafka-leader-election.sh does: of every partition of every topic, of the
partitions of --topic, or of partition --partition of it. For each
partition it prints one line:

  Successfully completed leader election (TYPE) for partition T-P
  Valid replica already elected for partition T-P
  Error completing leader election (TYPE) for partition T-P: ERROR

--type preferred (the default) moves leadership to the first replica of
each partition when it is live and in sync. --type unclean elects a leader
for partitions that have none, from outside the in-sync replicas if need
be, whatever the topic's unclean.leader.election.enable: records the new
leader does not have are lost. Of all partitions, only those elected or
failed are printed, as Kafka answers. The exit code is 1 if any failed.
`, stdout, stderr)
	cf := addClientFlags(c.fs)
	topic := c.fs.String("topic", "", "the topic whose partitions to elect (default: every topic)")
	partition := c.fs.Int("partition", -1, "with --topic: the one partition to elect")
	typ := c.fs.String("type", "preferred", "the election: preferred or unclean")
	c.fs.StringVar(typ, "election-type", "preferred", "same as --type, as kafka-leader-election.sh spells it")
	pos, code, done := c.parse(args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return c.usageError("unexpected argument %q", pos[0])
	}
	var how kadm.ElectLeadersHow
	switch strings.ToLower(*typ) {
	case "preferred":
		how = kadm.ElectPreferredReplica
	case "unclean":
		how = kadm.ElectLiveReplica
	default:
		return c.usageError("--type must be preferred or unclean, not %q", *typ)
	}
	if *partition >= 0 && *topic == "" {
		return c.usageError("--partition needs --topic")
	}

	ctx, adm, release, err := openAdmin(cf)
	if err != nil {
		return c.fail(err)
	}
	defer release()
	var set kadm.TopicsSet // nil: every partition
	if *topic != "" {
		if *partition >= 0 {
			set.Add(*topic, int32(*partition))
		} else {
			md, err := adm.Metadata(ctx, *topic)
			if err != nil {
				return c.fail(err)
			}
			t := md.Topics[*topic]
			if t.Err != nil {
				return c.fail(fmt.Errorf("topic %s: %w", *topic, t.Err))
			}
			set.Add(*topic, t.Partitions.Numbers()...)
		}
	}
	res, err := adm.ElectLeaders(ctx, how, set)
	if err != nil {
		return c.fail(fmt.Errorf("ElectLeaders: %w", err))
	}
	name := strings.ToUpper(*typ)
	failed := false
	for _, t := range slices.Sorted(maps.Keys(res)) {
		for _, p := range slices.Sorted(maps.Keys(res[t])) {
			r := res[t][p]
			switch {
			case r.Err == nil:
				fmt.Fprintf(stdout, "Successfully completed leader election (%s) for partition %s-%d\n", name, t, p)
			case errors.Is(r.Err, kerr.ElectionNotNeeded):
				fmt.Fprintf(stdout, "Valid replica already elected for partition %s-%d\n", t, p)
			default:
				failed = true
				fmt.Fprintf(stdout, "Error completing leader election (%s) for partition %s-%d: %s\n", name, t, p, errorText(kafkaError(r.Err, r.ErrMessage)))
			}
		}
	}
	if failed {
		return 1
	}
	return 0
}
