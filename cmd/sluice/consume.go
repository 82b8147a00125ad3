package main

// sluice consume: the console consumer. Reads partitions directly, without
// a consumer group, and prints each record through a format string.

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
SIGTERM, -n records or --timeout without a record, then exits 0. No consumer
group is joined and no offset is committed.

--offset N starts every partition at offset N; a partition whose log starts
later starts at its first offset, one that ends earlier at its end.
--from-time starts each partition at its first record with a timestamp at
or after the time (at its end if there is none).

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
	fromTime := fs.String("from-time", "", "start at the first record at or after this `time`: RFC 3339 (2006-01-02T15:04:05Z) or Unix milliseconds")
	partition := fs.Int("partition", -1, "consume only this partition")
	count := fs.Int("n", 0, "exit after this many records (0: no limit)")
	timeout := fs.Duration("timeout", 0, "exit when no record arrives for this long (0: never)")
	format := fs.String("format", "", `output format of a record (default "%v\n": the value, a newline)`)
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
	if isSet(fs, "offset") && *offset < 0 {
		return c.usageError("--offset %d: must not be negative", *offset)
	}
	var fromMilli int64
	if isSet(fs, "from-time") {
		ms, err := parseTime(*fromTime)
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

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

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
		kgo.WithHooks(newDialWarner(c.name, stderr)))
	if err != nil {
		return c.fail(err)
	}
	defer cl.Close()
	cons := consumer{cl: cl, format: parts, limit: *count, idle: *timeout, out: bufio.NewWriterSize(stdout, 64<<10), cmd: c}
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

// parseTime parses Unix milliseconds or an RFC 3339 time into Unix ms.
func parseTime(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms < 0 {
			return 0, fmt.Errorf("--from-time %d: must not be negative", ms)
		}
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("--from-time %q: want RFC 3339 (2006-01-02T15:04:05Z) or Unix milliseconds", s)
	}
	return t.UnixMilli(), nil
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
	format []formatPart
	limit  int           // records to print; 0: no limit
	idle   time.Duration // exit after this long without a record; 0: never
	out    *bufio.Writer
	cmd    *command
}

// run polls until the limit, the idle timeout or ctx's end and returns the
// exit code.
func (c *consumer) run(ctx context.Context) int {
	printed := 0
	var buf []byte
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
		for _, fe := range fetches.Errors() {
			var loss *kgo.ErrDataLoss
			switch {
			case errors.Is(fe.Err, context.Canceled), errors.Is(fe.Err, context.DeadlineExceeded), errors.Is(fe.Err, kgo.ErrClientClosed):
			case errors.As(fe.Err, &loss):
				c.cmd.warn("partition %d: %s", fe.Partition, errorText(fe.Err))
			default:
				c.out.Flush()
				return c.cmd.fail(fmt.Errorf("partition %d: %w", fe.Partition, fe.Err))
			}
		}
		n := 0
		fetches.EachRecord(func(r *kgo.Record) {
			buf = appendRecord(buf[:0], c.format, r)
			c.out.Write(buf)
			n++
		})
		printed += n
		if err := c.out.Flush(); err != nil {
			return c.cmd.fail(fmt.Errorf("writing: %w", err))
		}
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
