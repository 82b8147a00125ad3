package main

// sluice produce: the console producer. One record per line of standard
// input, as Kafka's kafka-console-producer.sh.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const produceUsage = `usage: sluice produce TOPIC [flags] < lines

Sends each line of standard input (any length; the trailing \n or \r\n is
dropped) as one record to TOPIC, flushes at end of input and exits 0. The
first record the broker refuses is reported and the exit code is 1.
SIGINT or SIGTERM stops reading; what was read is still delivered.

A topic that does not exist is created by the broker if its
auto.create.topics.enable is on, as for Kafka's console producer.

Partitioning (--partitioner):
  (default)    keyed records by the murmur2 hash of the key, as every Kafka
               client does, so a key always lands in the same partition;
               records without a key round robin over the partitions.
  hash         Kafka's default partitioner, which kafka-console-producer.sh
               uses: keyed records by murmur2 hash, records without a key
               "sticky" (a whole batch to one partition, then the next).
  round-robin  every record to the next partition; keys are ignored.
  sticky       a whole batch to one partition, then the next; keys ignored.
--partition N sends every record to partition N instead.

Transactions (--transactional-id ID): the whole input is one transaction,
committed once every record is acknowledged (read_committed consumers see
none of it before, all of it after); a refused record, SIGINT or SIGTERM
aborts it instead, and --abort aborts it at the end (to see what
read_committed hides). A producer started with the same id fences the
older one, whose transaction is aborted.
`

// defaultMaxMessageBytes is Kafka's (and sluice's) default
// message.max.bytes, the batch limit used when the topic's own
// max.message.bytes cannot be asked for.
const defaultMaxMessageBytes = 1048588

// produceFlags are sluice produce's flags.
type produceFlags struct {
	client          *clientFlags
	keySeparator    string
	headers         listFlag
	partitioner     string
	partition       int
	acks            string
	idempotent      bool
	compression     string
	maxMessageBytes int
	deliveryTimeout time.Duration
	txnID           string
	txnTimeout      time.Duration
	abort           bool
}

func runProduce(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := newCommand("sluice produce", produceUsage, stdout, stderr)
	f := &produceFlags{client: addClientFlags(c.fs)}
	fs := c.fs
	fs.StringVar(&f.keySeparator, "key-separator", "", "split each line at the first `SEP`: the text before it is the key, after it the value; a line without SEP has a null key")
	fs.Var(&f.headers, "header", "header `key=value` added to every record (repeatable)")
	fs.StringVar(&f.partitioner, "partitioner", "", "round-robin, hash or sticky (default: hash for keyed records, round robin for the others)")
	fs.IntVar(&f.partition, "partition", -1, "send every record to this partition")
	fs.StringVar(&f.acks, "acks", "all", "acknowledgement: all, 1 or 0 (1 and 0 turn idempotence off)")
	fs.BoolVar(&f.idempotent, "idempotent", true, "idempotent producer (no duplicates on retry; needs --acks all)")
	fs.StringVar(&f.compression, "compression", "none", "none, gzip, snappy, lz4 or zstd")
	fs.IntVar(&f.maxMessageBytes, "max-message-bytes", 0, "largest batch to send, in bytes (0: the topic's max.message.bytes, asked from the broker; 1048588 if it cannot tell)")
	fs.DurationVar(&f.deliveryTimeout, "delivery-timeout", 30*time.Second, "give up on a record not acknowledged for this long")
	fs.StringVar(&f.txnID, "transactional-id", "", "send the whole input as one transaction of this transactional `ID`")
	fs.DurationVar(&f.txnTimeout, "transaction-timeout", time.Minute, "with --transactional-id: the coordinator aborts the transaction if it is not ended within this long (transaction.timeout.ms)")
	fs.BoolVar(&f.abort, "abort", false, "with --transactional-id: abort the transaction at the end instead of committing it")
	pos, code, done := c.parse(args)
	if done {
		return code
	}
	if len(pos) != 1 {
		return c.usageError("want exactly one topic, got %d arguments", len(pos))
	}
	topic := pos[0]
	opts, err := f.options(fs)
	if err != nil {
		return c.usageError("%v", err)
	}
	headers, err := keyValues(f.headers, "header")
	if err != nil {
		return c.usageError("%v", err)
	}
	var recHeaders []kgo.RecordHeader
	for _, h := range headers {
		recHeaders = append(recHeaders, kgo.RecordHeader{Key: h[0], Value: []byte(h[1])})
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Without --max-message-bytes the batch limit is the topic's, asked
	// for once the client exists: franz-go reads it when it first meets
	// a partition, after the lookup.
	var maxBytes atomic.Int32
	maxBytes.Store(int32(f.maxMessageBytes))
	if f.maxMessageBytes == 0 {
		maxBytes.Store(defaultMaxMessageBytes)
	}
	opts = append(opts,
		kgo.ProducerBatchMaxBytesFn(func(string) int32 { return maxBytes.Load() }),
		kgo.WithHooks(newDialWarner(c.name, stderr)))
	cl, err := f.client.client(ctx, opts...)
	if err != nil {
		return c.fail(err)
	}
	defer cl.Close()
	if f.maxMessageBytes == 0 {
		maxBytes.Store(topicMaxMessageBytes(ctx, cl, topic))
	}

	p := &producer{cl: cl, topic: topic, headers: recHeaders, partition: int32(f.partition), failed: make(chan struct{}),
		txn: f.txnID != "", abort: f.abort}
	if p.txn {
		if err := cl.BeginTransaction(); err != nil {
			return c.fail(err)
		}
	}
	if f.keySeparator != "" {
		p.keySep = []byte(f.keySeparator)
	}
	return p.run(ctx, stop, c, stdin, maxBytes.Load())
}

// options turns the flags into franz-go options.
func (f *produceFlags) options(fs *flag.FlagSet) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	switch strings.ToLower(f.acks) {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
		if !f.idempotent {
			opts = append(opts, kgo.DisableIdempotentWrite())
		}
	case "1", "0":
		if isSet(fs, "idempotent") && f.idempotent {
			return nil, errors.New("--idempotent needs --acks all")
		}
		acks := kgo.LeaderAck()
		if f.acks == "0" {
			acks = kgo.NoAck()
		}
		opts = append(opts, kgo.RequiredAcks(acks), kgo.DisableIdempotentWrite())
	default:
		return nil, fmt.Errorf("--acks %q: want all, 1 or 0", f.acks)
	}

	var codec kgo.CompressionCodec
	switch strings.ToLower(f.compression) {
	case "", "none":
		codec = kgo.NoCompression()
	case "gzip":
		codec = kgo.GzipCompression()
	case "snappy":
		codec = kgo.SnappyCompression()
	case "lz4":
		codec = kgo.Lz4Compression()
	case "zstd":
		codec = kgo.ZstdCompression()
	default:
		return nil, fmt.Errorf("--compression %q: want none, gzip, snappy, lz4 or zstd", f.compression)
	}
	opts = append(opts, kgo.ProducerBatchCompression(codec))

	if f.partition >= 0 {
		if f.partitioner != "" {
			return nil, errors.New("give --partition or --partitioner, not both")
		}
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	} else if f.partition != -1 {
		return nil, fmt.Errorf("--partition %d: must not be negative", f.partition)
	} else {
		var part kgo.Partitioner
		switch f.partitioner {
		case "":
			part = keyedOrRoundRobin{}
		case "hash":
			part = kgo.StickyKeyPartitioner(nil)
		case "round-robin":
			part = kgo.RoundRobinPartitioner()
		case "sticky":
			part = kgo.StickyPartitioner()
		default:
			return nil, fmt.Errorf("--partitioner %q: want round-robin, hash or sticky", f.partitioner)
		}
		opts = append(opts, kgo.RecordPartitioner(part))
	}

	if f.maxMessageBytes != 0 && (f.maxMessageBytes < 512 || f.maxMessageBytes > 1<<30) {
		return nil, fmt.Errorf("--max-message-bytes %d: want 512 to %d", f.maxMessageBytes, 1<<30)
	}
	if f.deliveryTimeout <= 0 {
		return nil, errors.New("--delivery-timeout must be positive")
	}
	if f.txnID != "" {
		if !f.idempotent || !slices.Contains([]string{"all", "-1"}, strings.ToLower(f.acks)) {
			return nil, errors.New("--transactional-id needs the idempotent producer and --acks all")
		}
		if f.txnTimeout <= 0 {
			return nil, errors.New("--transaction-timeout must be positive")
		}
		opts = append(opts, kgo.TransactionalID(f.txnID), kgo.TransactionTimeout(f.txnTimeout))
	} else if isSet(fs, "abort") || isSet(fs, "transaction-timeout") {
		return nil, errors.New("--abort and --transaction-timeout need --transactional-id")
	}
	opts = append(opts,
		kgo.RecordDeliveryTimeout(f.deliveryTimeout),
		// As Kafka's producers: a missing topic is created if the broker
		// allows it.
		kgo.AllowAutoTopicCreation(),
	)
	return opts, nil
}

// topicMaxMessageBytes asks the broker for topic's max.message.bytes, the
// largest batch it accepts; defaultMaxMessageBytes if it cannot tell (the
// topic does not exist yet, or the broker does not serve DescribeConfigs).
func topicMaxMessageBytes(ctx context.Context, cl *kgo.Client, topic string) int32 {
	rcs, err := kadm.NewClient(cl).DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return defaultMaxMessageBytes
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		return defaultMaxMessageBytes
	}
	for _, cfg := range rc.Configs {
		if cfg.Key != "max.message.bytes" {
			continue
		}
		n, err := strconv.ParseInt(cfg.MaybeValue(), 10, 32)
		if err != nil || n < 512 {
			break
		}
		return int32(n)
	}
	return defaultMaxMessageBytes
}

// producer sends the lines of one sluice produce run.
type producer struct {
	cl        *kgo.Client
	topic     string
	headers   []kgo.RecordHeader // shared by every record, never changed
	partition int32              // -1: the partitioner chooses
	keySep    []byte             // nil: no keys
	txn       bool               // the input is one transaction
	abort     bool               // abort it at the end

	mu struct {
		sync.Mutex
		firstErr error // the first record that failed, with its line
		failures int   // records that failed in all
	}
	failOnce sync.Once
	failed   chan struct{} // closed at the first failure
}

// run reads stdin to its end, producing each line, and returns the exit
// code. limit is the batch limit in force, for the message when a line
// is too long. ctx ends at SIGINT or SIGTERM; stopSignals restores the
// signals' default action, so that a second one kills.
func (p *producer) run(ctx context.Context, stopSignals func(), c *command, stdin io.Reader, limit int32) int {
	stopReading := make(chan struct{})
	readDone := make(chan error, 1)
	go func() { readDone <- p.produceLines(stopReading, stdin, limit) }()

	var readErr error
	interrupted := false
	select {
	case readErr = <-readDone:
	case <-p.failed:
	case <-ctx.Done():
		// Interrupted: deliver what was read. The reader may be blocked
		// on a terminal; it is abandoned.
		stopSignals()
		interrupted = true
	}
	close(stopReading)
	if readErr != nil {
		return c.fail(fmt.Errorf("reading standard input: %w", readErr))
	}

	select {
	case <-p.failed:
	default:
		// Wait until every record is delivered or failed; the delivery
		// timeout bounds it.
		if err := p.cl.Flush(context.Background()); err != nil {
			return c.fail(fmt.Errorf("flushing: %w", err))
		}
	}

	p.mu.Lock()
	err, n := p.mu.firstErr, p.mu.failures
	p.mu.Unlock()
	if p.txn {
		return p.endTxn(c, err, n, interrupted)
	}
	if err == nil {
		return 0
	}
	abortCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = p.cl.AbortBufferedRecords(abortCtx) // exiting with the first error anyway
	cancel()
	if n > 1 {
		err = fmt.Errorf("%w (and %d more records failed)", err, n-1)
	}
	return c.fail(err)
}

// endTxn ends the transaction: committed if every record was
// acknowledged, the input read to its end and --abort not given; else
// aborted. It returns the exit code: 1 if a record failed or the commit
// did.
func (p *producer) endTxn(c *command, recErr error, failures int, interrupted bool) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	commit := recErr == nil && !interrupted && !p.abort
	if recErr != nil {
		_ = p.cl.AbortBufferedRecords(ctx) // the transaction is aborted below
	}
	if err := p.cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		what := "committing"
		if !commit {
			what = "aborting"
		}
		return c.fail(fmt.Errorf("%s the transaction: %w", what, err))
	}
	switch {
	case recErr != nil && failures > 1:
		return c.fail(fmt.Errorf("%w (and %d more records failed); the transaction was aborted", recErr, failures-1))
	case recErr != nil:
		return c.fail(fmt.Errorf("%w; the transaction was aborted", recErr))
	case interrupted:
		return c.fail(errors.New("interrupted: the transaction was aborted"))
	}
	return 0
}

// produceLines produces one record per line of r until its end, or until
// stop is closed. It returns only a read error.
func (p *producer) produceLines(stop <-chan struct{}, r io.Reader, limit int32) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		select {
		case <-stop:
			return nil
		default:
		}
		if len(b) > 0 {
			b = bytes.TrimSuffix(b, []byte("\n"))
			b = bytes.TrimSuffix(b, []byte("\r"))
			p.produce(line, b, limit)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// produce sends one line as a record. The record's context is not
// cancelled: once read, a line is delivered or reported.
func (p *producer) produce(line int, b []byte, limit int32) {
	rec := &kgo.Record{Topic: p.topic, Value: b, Headers: p.headers, Partition: p.partition}
	if p.keySep != nil {
		if k, v, ok := bytes.Cut(b, p.keySep); ok {
			rec.Key, rec.Value = k, v
		}
	}
	p.cl.Produce(context.Background(), rec, func(r *kgo.Record, err error) {
		if err == nil {
			return
		}
		if errors.Is(err, kerr.MessageTooLarge) {
			err = fmt.Errorf("%w (the record is %d bytes and batches are limited to %d: raise the topic's max.message.bytes, or --max-message-bytes)", err, len(r.Key)+len(r.Value), limit)
		}
		p.mu.Lock()
		if p.mu.firstErr == nil {
			p.mu.firstErr = fmt.Errorf("line %d: %w", line, err)
		}
		p.mu.failures++
		p.mu.Unlock()
		p.failOnce.Do(func() { close(p.failed) })
	})
}

// keyedOrRoundRobin is the default partitioner: keyed records go by
// Kafka's murmur2 hash of the key (franz-go's StickyKeyPartitioner with no
// hasher, which matches Kafka's), records without a key round robin.
type keyedOrRoundRobin struct{}

func (keyedOrRoundRobin) ForTopic(topic string) kgo.TopicPartitioner {
	return &keyedOrRoundRobinTopic{
		hash: kgo.StickyKeyPartitioner(nil).ForTopic(topic),
		rr:   kgo.RoundRobinPartitioner().ForTopic(topic),
	}
}

type keyedOrRoundRobinTopic struct {
	hash, rr kgo.TopicPartitioner
}

// RequiresConsistency is true for keyed records: a key must always map to
// the same partition, even one that is down.
func (p *keyedOrRoundRobinTopic) RequiresConsistency(r *kgo.Record) bool { return r.Key != nil }

func (p *keyedOrRoundRobinTopic) Partition(r *kgo.Record, n int) int {
	if r.Key != nil {
		return p.hash.Partition(r, n)
	}
	return p.rr.Partition(r, n)
}
