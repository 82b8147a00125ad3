package main

// sluice consume: the console consumer. Reads partitions directly, or as a
// member of a consumer group (consumegroup.go), and prints each record
// through a format string.

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const consumeUsage = `usage: sluice consume TOPIC [flags]

Prints the records of TOPIC (every partition, or --partition N) through
--format, starting at --from (default: the end, new records only, as
kafka-console-consumer.sh), --offset or --from-time. Runs until SIGINT or
SIGTERM, -n records or --timeout without a record, then exits 0. Without
--group no consumer group is joined and no offset is committed.

With --group G the consumer joins group G and reads the partitions the
group assigns it; the members of a group share the topic's partitions.
It starts each partition at the group's committed offset, or where --from
says if the group has none, and commits the offsets of the records it
printed: every --commit-interval, when a partition moves to another
member, and on exit (after -n, --timeout, SIGINT or SIGTERM), when it also
leaves the group. A record printed is committed; with -n, one not printed
is not. --offset, --from-time and --partition do not apply to a group.
A static member (--instance-id) does not leave: the group keeps its
partitions for it until --session-timeout passes, so that a restart within
that time resumes them without a rebalance.

--offset N starts every partition at offset N; a partition whose log starts
later starts at its first offset, one that ends earlier at its end.
--from-time starts each partition at its first record with a timestamp at
or after the time (at its end if there is none).

--isolation-level read_committed prints only the records of committed
transactions (and records written outside transactions), stopping at the
first transaction still open, as kafka-console-consumer.sh's flag of the
same name; the default, read_uncommitted, prints every record.

Format (--format): %v value, %k key (empty when null), %h headers as
k=v,k=v, %p partition, %o offset, %t timestamp (Unix ms), %T topic, %% a
percent sign; \n newline, \t tab, \r carriage return, \\ backslash.
`

func runConsume(args []string, stdout, stderr io.Writer) int {
	c := newCommand("sluice consume", consumeUsage, stdout, stderr)
	fs := c.fs
	cf := addClientFlags(fs)
	from := fs.String("from", "end", "beginning or end of each partition")
	offset := fs.Int64("offset", -1, "start every partition at this `offset`")
	fromTime := fs.String("from-time", "", "start at the first record at or after this `time`: RFC 3339 (2006-01-02T15:04:05Z), local time (2006-01-02T15:04:05.000) or Unix milliseconds")
	partition := fs.Int("partition", -1, "consume only this partition")
	count := fs.Int("n", 0, "exit after this many records (0: no limit)")
	timeout := fs.Duration("timeout", 0, "exit when no record arrives for this long (0: never)")
	format := fs.String("format", "", `output format of a record (default "%v\n": the value, a newline)`)
	isolation := fs.String("isolation-level", "read_uncommitted", "read_committed: only the records of committed transactions, up to the first one still open; read_uncommitted: every record")
	gf := addGroupFlags(fs)
	pos, code, done := c.parse(args)
	if done {
		return code
	}
	if len(pos) != 1 {
		return c.usageError("want exactly one topic, got %d arguments", len(pos))
	}
	topic := pos[0]
	starts := 0
	for _, name := range []string{"from", "offset", "from-time"} {
		if isSet(fs, name) {
			starts++
		}
	}
	if starts > 1 {
		return c.usageError("give one of --from, --offset and --from-time")
	}
	if *from != "beginning" && *from != "end" {
		return c.usageError("--from %q: want beginning or end", *from)
	}
	if gf.group != "" {
		for _, name := range []string{"offset", "from-time", "partition"} {
			if isSet(fs, name) {
				return c.usageError("--%s does not apply to a group: the group's committed offsets and its assignment decide", name)
			}
		}
	}
	if err := gf.check(fs); err != nil {
		return c.usageError("%v", err)
	}
	if isSet(fs, "offset") && *offset < 0 {
		return c.usageError("--offset %d: must not be negative", *offset)
	}
	var fromMilli int64
	if isSet(fs, "from-time") {
		ms, err := parseTime("from-time", *fromTime)
		if err != nil {
			return c.usageError("%v", err)
		}
		fromMilli = ms
	}
	if *partition < -1 || *count < 0 || *timeout < 0 {
		return c.usageError("--partition, -n and --timeout must not be negative")
	}
	if *format == "" {
		*format = `%v\n`
	}
	parts, err := parseFormat(*format)
	if err != nil {
		return c.usageError("%v", err)
	}
	var level kgo.IsolationLevel
	switch *isolation {
	case "read_uncommitted":
		level = kgo.ReadUncommitted()
	case "read_committed":
		level = kgo.ReadCommitted()
	default:
		return c.usageError("--isolation-level %q: want read_committed or read_uncommitted", *isolation)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cons := consumer{format: parts, limit: *count, idle: *timeout, out: bufio.NewWriterSize(stdout, 64<<10), cmd: c,
		isolation: kgo.FetchIsolationLevel(level)}
	if gf.group != "" {
		return gf.consume(ctx, stop, cf, topic, *from == "beginning", &cons)
	}

	start := startAt{beginning: *from == "beginning", offset: -1, milli: -1}
	switch {
	case isSet(fs, "offset"):
		start.offset = *offset
	case isSet(fs, "from-time"):
		start.milli = fromMilli
	}
	offsets, err := start.resolve(ctx, cf, topic, int32(*partition))
	if err != nil {
		return c.fail(err)
	}
	cl, err := cf.client(ctx,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.WithHooks(newDialWarner(c.name, stderr)), cons.isolation)
	if err != nil {
		return c.fail(err)
	}
	defer cl.Close()
	cons.cl = cl
	return cons.run(ctx)
}

// startAt says where a consumer starts: at offset (if not -1), else at
// milli (if not -1), else at the beginning or the end.
type startAt struct {
	beginning bool
	offset    int64 // --offset
	milli     int64 // --from-time, Unix ms
}

// resolve returns where to start each partition of topic, or partition
// alone if not -1, asking the brokers for the partitions and, for an
// offset or a time, the offsets.
func (s startAt) resolve(ctx context.Context, cf *clientFlags, topic string, partition int32) (map[int32]kgo.Offset, error) {
	ctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	cl, err := cf.client(ctx)
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	defer adm.Close()

	topics, err := adm.ListTopics(ctx, topic)
	if err == nil {
		err = topics.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("topic %s: %w", topic, err)
	}
	partitions := topics[topic].Partitions.Numbers()
	if partition >= 0 {
		if _, ok := topics[topic].Partitions[partition]; !ok {
			return nil, fmt.Errorf("topic %s has no partition %d (it has %d)", topic, partition, len(partitions))
		}
		partitions = []int32{partition}
	}

	offsets := map[int32]kgo.Offset{}
	switch {
	case s.offset >= 0:
		// Clamped to [log start, high watermark]: kgo would otherwise
		// meet OFFSET_OUT_OF_RANGE and silently reset to the start.
		lo, err := listOffsets(ctx, adm.ListStartOffsets, topic)
		if err != nil {
			return nil, err
		}
		hi, err := listOffsets(ctx, adm.ListEndOffsets, topic)
		if err != nil {
			return nil, err
		}
		for _, p := range partitions {
			at := s.offset
			if l, ok := lo.Lookup(topic, p); ok {
				at = max(at, l.Offset)
			}
			if h, ok := hi.Lookup(topic, p); ok {
				at = min(at, h.Offset)
			}
			offsets[p] = kgo.NewOffset().At(at)
		}
	case s.milli >= 0:
		listed, err := listOffsets(ctx, func(ctx context.Context, t ...string) (kadm.ListedOffsets, error) {
			return adm.ListOffsetsAfterMilli(ctx, s.milli, t...)
		}, topic)
		if err != nil {
			return nil, err
		}
		for _, p := range partitions {
			l, ok := listed.Lookup(topic, p)
			if !ok {
				return nil, fmt.Errorf("listing offsets of %s: no answer for partition %d", topic, p)
			}
			offsets[p] = kgo.NewOffset().At(l.Offset)
		}
	default:
		for _, p := range partitions {
			if s.beginning {
				offsets[p] = kgo.NewOffset().AtStart()
			} else {
				offsets[p] = kgo.NewOffset().AtEnd()
			}
		}
	}
	return offsets, nil
}

// isSet is whether the flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// parseTime parses the value of the time flag name into Unix ms: Unix
// milliseconds, RFC 3339, or Kafka's yyyy-MM-ddTHH:mm:ss[.SSS] in local
// time (as kafka-consumer-groups.sh --to-datetime takes it).
func parseTime(name, s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms < 0 {
			return 0, fmt.Errorf("--%s %d: must not be negative", name, ms)
		}
		return ms, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UnixMilli(), nil
	}
	if t, err := time.ParseInLocation("2006-01-02T15:04:05.999999999", s, time.Local); err == nil {
		return t.UnixMilli(), nil
	}
	return 0, fmt.Errorf("--%s %q: want RFC 3339 (2006-01-02T15:04:05Z), local time (2006-01-02T15:04:05.000) or Unix milliseconds", name, s)
}

// listOffsets runs one of kadm's offset listings for topic and fails on
// any partition's error.
func listOffsets(ctx context.Context, list func(context.Context, ...string) (kadm.ListedOffsets, error), topic string) (kadm.ListedOffsets, error) {
	lo, err := list(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("listing offsets of %s: %w", topic, err)
	}
	var first error
	lo.Each(func(l kadm.ListedOffset) {
		if l.Err != nil && first == nil {
			first = fmt.Errorf("listing offsets of %s, partition %d: %w", topic, l.Partition, l.Err)
		}
	})
	return lo, first
}

// consumer prints the records of one sluice consume run.
type consumer struct {
	cl     *kgo.Client
	group  string // the consumer group, if any: printed records are marked for commit
	format []formatPart
	limit  int           // records to print; 0: no limit
	idle   time.Duration // exit after this long without a record; 0: never
	out    *bufio.Writer
	cmd    *command
	buf    []byte // scratch space for a record's output
	// isolation is the fetch isolation level (--isolation-level).
	isolation kgo.Opt
}

// run polls until the limit, the idle timeout or ctx's end and returns the
// exit code.
func (c *consumer) run(ctx context.Context) int {
	printed := 0
	for {
		pollCtx, cancel := ctx, context.CancelFunc(func() {})
		if c.idle > 0 {
			pollCtx, cancel = context.WithTimeout(ctx, c.idle)
		}
		maxRecords := -1
		if c.limit > 0 {
			maxRecords = c.limit - printed
		}
		fetches := c.cl.PollRecords(pollCtx, maxRecords)
		cancel()
		code, n, stop := c.print(fetches)
		if c.group != "" {
			// Polling blocked rebalances (kgo.BlockRebalanceOnPoll) so
			// that no partition moves between printing a record and
			// marking it: what was marked is committed before another
			// member starts the partition.
			c.cl.AllowRebalance()
		}
		if stop {
			return code
		}
		printed += n
		switch {
		case c.limit > 0 && printed >= c.limit:
			return 0
		case ctx.Err() != nil:
			return 0 // interrupted: a clean stop
		case n == 0 && errors.Is(pollCtx.Err(), context.DeadlineExceeded):
			return 0 // idle for --timeout
		}
	}
}

// print writes the records of one poll, marks them for commit in a group
// once written, and returns how many it wrote. When stop is set the run
// ends with exit code code: a fetch error, or standard output failed.
func (c *consumer) print(fetches kgo.Fetches) (code, n int, stop bool) {
	for _, fe := range fetches.Errors() {
		var loss *kgo.ErrDataLoss
		var session *kgo.ErrGroupSession
		switch {
		case errors.Is(fe.Err, context.Canceled), errors.Is(fe.Err, context.DeadlineExceeded), errors.Is(fe.Err, kgo.ErrClientClosed):
		case errors.As(fe.Err, &loss):
			c.cmd.warn("partition %d: %s", fe.Partition, errorText(fe.Err))
		case errors.As(fe.Err, &session):
			c.out.Flush()
			return c.cmd.fail(fmt.Errorf("group %s: %w", c.group, session.Err)), 0, true
		default:
			c.out.Flush()
			return c.cmd.fail(fmt.Errorf("partition %d: %w", fe.Partition, fe.Err)), 0, true
		}
	}
	records := fetches.Records()
	for _, r := range records {
		c.buf = appendRecord(c.buf[:0], c.format, r)
		c.out.Write(c.buf)
	}
	if err := c.out.Flush(); err != nil {
		return c.cmd.fail(fmt.Errorf("writing: %w", err)), 0, true
	}
	if c.group != "" {
		c.cl.MarkCommitRecords(records...)
	}
	return 0, len(records), false
}
