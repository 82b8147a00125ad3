package main

// sluice group: list, describe, delete consumer groups and reset their
// committed offsets, with output shaped like Kafka's
// kafka-consumer-groups.sh.

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const groupUsage = `usage: sluice group <command> [flags]

commands:
  list                  list the consumer groups with their states
  describe [GROUP...]   state, members, assignments, committed offsets and lag (all groups if none named)
  delete GROUP...       delete groups that have no active members, and their committed offsets
  reset-offsets GROUP   plan, or with --execute apply, new committed offsets for a group without active members

Run "sluice group <command> -h" for a command's flags.
`

func runGroup(args []string, stdout, stderr io.Writer) int {
	return runSubcommand("group", groupUsage, map[string]func([]string, io.Writer, io.Writer) int{
		"list":          runGroupList,
		"describe":      runGroupDescribe,
		"delete":        runGroupDelete,
		"reset-offsets": runGroupResetOffsets,
	}, args, stdout, stderr)
}

// table writes whitespace-aligned columns, as Kafka's tools print them.
func table(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// row writes cells as one line of t.
func row(t *tabwriter.Writer, cells ...string) {
	fmt.Fprintln(t, strings.Join(cells, "\t"))
}

// orDash is s, or "-" for an empty s (Kafka's tools print "-" for a
// missing value).
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runGroupList(args []string, stdout, stderr io.Writer) int {
	c := newCommand("sluice group list", `usage: sluice group list

Prints a line per consumer group, sorted by name: its name, its state
(Empty, PreparingRebalance, CompletingRebalance, Stable) and its protocol
type ("consumer" for consumers; "-" for a group that only has committed
offsets).
`, stdout, stderr)
	cf := addClientFlags(c.fs)
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
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		return c.fail(err)
	}
	if len(groups) == 0 {
		return 0
	}
	t := table(stdout)
	row(t, "GROUP", "STATE", "PROTOCOL-TYPE")
	for _, g := range groups.Sorted() {
		row(t, g.Group, g.State, orDash(g.ProtocolType))
	}
	t.Flush()
	return 0
}

func runGroupDescribe(args []string, stdout, stderr io.Writer) int {
	c := newCommand("sluice group describe", `usage: sluice group describe [GROUP...] [--state] [--members] [--offsets]

Describes the named consumer groups, or all of them, as
kafka-consumer-groups.sh --describe does, in three tables:

  --state    GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS
  --offsets  GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID
  --members  GROUP CONSUMER-ID GROUP-INSTANCE-ID HOST CLIENT-ID #PARTITIONS ASSIGNMENT

Without any of the flags all three are printed. CURRENT-OFFSET is the
group's committed offset (the next record it will read), LOG-END-OFFSET the
partition's high watermark, LAG their difference; "-" where the group has
committed nothing. A partition committed to but not assigned (the group is
Empty, or no member reads it) shows "-" for the consumer.
`, stdout, stderr)
	cf := addClientFlags(c.fs)
	showState := c.fs.Bool("state", false, "print the group's state table")
	showMembers := c.fs.Bool("members", false, "print the members table")
	showOffsets := c.fs.Bool("offsets", false, "print the offsets table")
	names, code, done := c.parse(args)
	if done {
		return code
	}
	if !*showState && !*showMembers && !*showOffsets {
		*showState, *showMembers, *showOffsets = true, true, true
	}
	ctx, adm, release, err := openAdmin(cf)
	if err != nil {
		return c.fail(err)
	}
	defer release()
	lags, err := adm.Lag(ctx, names...)
	if err != nil {
		return c.fail(err)
	}
	failed := false
	first := true
	for _, l := range lags.Sorted() {
		if err := l.Error(); err != nil {
			fmt.Fprintf(stderr, "%s: group %s: %s\n", c.name, l.Group, errorText(err))
			failed = true
			continue
		}
		if l.State == "Dead" && len(l.Lag) == 0 {
			fmt.Fprintf(stderr, "%s: consumer group '%s' does not exist.\n", c.name, l.Group)
			failed = true
			continue
		}
		if !first {
			fmt.Fprintln(stdout)
		}
		first = false
		if *showState {
			describeState(stdout, l)
		}
		if *showOffsets {
			if *showState {
				fmt.Fprintln(stdout)
			}
			describeOffsets(stdout, l)
		}
		if *showMembers {
			if *showState || *showOffsets {
				fmt.Fprintln(stdout)
			}
			describeMembers(stdout, l)
		}
	}
	if failed {
		return 1
	}
	return 0
}

// describeState writes the --state table of one group.
func describeState(w io.Writer, l kadm.DescribedGroupLag) {
	t := table(w)
	row(t, "GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")
	coord := fmt.Sprintf("%s:%d (%d)", l.Coordinator.Host, l.Coordinator.Port, l.Coordinator.NodeID)
	row(t, l.Group, coord, orDash(l.Protocol), l.State, strconv.Itoa(len(l.Members)))
	t.Flush()
}

// describeOffsets writes the --offsets table of one group: a line per
// partition assigned or committed to (kadm also lists the other partitions
// of the topics), sorted by topic and partition, then
// a line per member without partitions.
func describeOffsets(w io.Writer, l kadm.DescribedGroupLag) {
	t := table(w)
	row(t, "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID")
	withPartitions := map[string]bool{}
	for _, p := range l.Lag.Sorted() {
		if p.Member == nil && p.Commit.At < 0 {
			continue // neither assigned nor committed: Kafka leaves it out
		}
		current, end, lag := "-", "-", "-"
		if p.Commit.At >= 0 {
			current = strconv.FormatInt(p.Commit.At, 10)
		}
		if p.End.Err == nil {
			end = strconv.FormatInt(p.End.Offset, 10)
			if p.Commit.At >= 0 && p.Err == nil {
				lag = strconv.FormatInt(p.Lag, 10)
			}
		}
		member, host, client := "-", "-", "-"
		if p.Member != nil {
			member, host, client = p.Member.MemberID, p.Member.ClientHost, p.Member.ClientID
			withPartitions[member] = true
		}
		row(t, l.Group, p.Topic, strconv.Itoa(int(p.Partition)), current, end, lag, member, host, client)
	}
	for _, m := range l.Members {
		if !withPartitions[m.MemberID] {
			row(t, l.Group, "-", "-", "-", "-", "-", m.MemberID, m.ClientHost, m.ClientID)
		}
	}
	t.Flush()
}

// describeMembers writes the --members table of one group.
func describeMembers(w io.Writer, l kadm.DescribedGroupLag) {
	if len(l.Members) == 0 {
		fmt.Fprintf(w, "Consumer group '%s' has no active members.\n", l.Group)
		return
	}
	t := table(w)
	row(t, "GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT")
	for _, m := range l.Members {
		instance := "-"
		if m.InstanceID != nil {
			instance = *m.InstanceID
		}
		n, assignment := 0, "-"
		if a, ok := m.Assigned.AsConsumer(); ok && len(a.Topics) > 0 {
			n, assignment = assignmentText(a)
		}
		row(t, l.Group, m.MemberID, instance, m.ClientHost, m.ClientID, strconv.Itoa(n), assignment)
	}
	t.Flush()
}

// assignmentText writes an assignment as Kafka's tool does,
// "topic(0,1),other(2)" sorted by topic, and counts its partitions.
func assignmentText(a *kmsg.ConsumerMemberAssignment) (int, string) {
	topics := slices.Clone(a.Topics)
	slices.SortFunc(topics, func(x, y kmsg.ConsumerMemberAssignmentTopic) int { return strings.Compare(x.Topic, y.Topic) })
	n := 0
	var parts []string
	for _, t := range topics {
		ps := slices.Clone(t.Partitions)
		slices.Sort(ps)
		n += len(ps)
		parts = append(parts, t.Topic+"("+ints(ps)+")")
	}
	if n == 0 {
		return 0, "-"
	}
	return n, strings.Join(parts, ",")
}

func runGroupDelete(args []string, stdout, stderr io.Writer) int {
	c := newCommand("sluice group delete", `usage: sluice group delete GROUP...

Deletes the named consumer groups and their committed offsets, printing
"Deleted consumer group GROUP." for each. Only a group without active
members can be deleted: stop its consumers first (the broker answers
NON_EMPTY_GROUP otherwise).
`, stdout, stderr)
	cf := addClientFlags(c.fs)
	names, code, done := c.parse(args)
	if done {
		return code
	}
	if len(names) == 0 {
		return c.usageError("name at least one group")
	}
	ctx, adm, release, err := openAdmin(cf)
	if err != nil {
		return c.fail(err)
	}
	defer release()
	resps, err := adm.DeleteGroups(ctx, names...)
	if err != nil && len(resps) == 0 {
		return c.fail(fmt.Errorf("DeleteGroups: %w", err))
	}
	failed := false
	for _, name := range names {
		r, ok := resps[name]
		err := kafkaError(r.Err, r.ErrMessage)
		if !ok {
			err = errors.New("no answer from the group's coordinator")
		}
		if errors.Is(err, kerr.NonEmptyGroup) {
			err = fmt.Errorf("%w (it has active members: stop its consumers first)", err)
		}
		if err != nil {
			fmt.Fprintf(stderr, "%s: group %s: %s\n", c.name, name, errorText(err))
			failed = true
			continue
		}
		fmt.Fprintf(stdout, "Deleted consumer group %s.\n", name)
	}
	if failed {
		return 1
	}
	return 0
}
