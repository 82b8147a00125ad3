// Package bench is sluice's load generator. It drives any Kafka-compatible
// broker through franz-go (kgo), an independent Kafka client, in one of
// three modes:
//
//   - produce: N records of S bytes to a topic of P partitions, from one or
//     more producer clients, with the chosen acks and compression;
//     latency is the time from handing a record to the client to its
//     acknowledgement.
//   - consume: N records (by default everything in the topic) read from
//     the start of every partition.
//   - e2e: producers and one consumer at once; each record carries its send
//     time in its first 8 bytes and latency is the time from handing it to
//     the producer client to the consumer seeing it.
//
// Progress (rate, records so far) is printed while it runs and a Result
// sums it up: records/s, MB/s, latency quantiles. A fixed target rate
// (Config.Rate) paces the producers, because latency measured at
// saturation only measures queueing.
//
// cmd/sluice's `sluice bench` is a command-line front end; the go test
// benchmarks of this package run it against an in-process sluice broker,
// franz-go's kfake and a null broker.
package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Mode is what a run measures.
type Mode string

// The modes.
const (
	Produce Mode = "produce"
	Consume Mode = "consume"
	E2E     Mode = "e2e"
)

// Config describes a run. Zero fields take the defaults noted.
type Config struct {
	Brokers []string // seed brokers (default localhost:9092)
	Topic   string   // default "sluice-bench"
	Mode    Mode

	// Records is how many records the run measures (default 1,000,000;
	// consume: 0 means every record in the topic when the run starts).
	Records int64
	// RecordBytes is the size of each record's value (default 100; e2e
	// needs at least 8). Values are random bytes, so compression gains
	// little; keys are empty.
	RecordBytes int
	// Partitions is used when the run creates the topic (default 8); an
	// existing topic keeps its own count.
	Partitions int32
	// Acks is 0, 1 or -1 (all); the zero value means -1 unless AcksSet.
	Acks    int
	AcksSet bool
	// Producers is the number of producer clients, each with its own
	// connections, sharing Records and Rate evenly (default 1).
	Producers int
	// Compression is none (default), gzip, snappy, lz4 or zstd.
	Compression string
	// Rate is the target in records/s over all producers; 0 is as fast as
	// the client and broker allow.
	Rate float64
	// Linger is the producer linger. franz-go's default is 10 ms; a run
	// uses 0 unless set, so latency is not inflated by waiting for batches
	// to fill.
	Linger time.Duration
	// Inflight bounds produce requests in flight per broker and producer
	// when idempotency is off (default 5, what the client allows with
	// idempotency on; franz-go's default without it is 1).
	Inflight int
	// Idempotent keeps franz-go's idempotent producer (it needs the
	// InitProducerId API); off by default.
	Idempotent bool

	// Progress, if set, gets a line every ProgressInterval (default 1 s).
	Progress         io.Writer
	ProgressInterval time.Duration
	// IdleTimeout ends a consume or e2e run with an error when no record
	// arrives for this long (default 10 s).
	IdleTimeout time.Duration
	// ClientOpts are added to every client the run creates.
	ClientOpts []kgo.Opt
}

func (c *Config) withDefaults() (Config, error) {
	o := *c
	if len(o.Brokers) == 0 {
		o.Brokers = []string{"localhost:9092"}
	}
	if o.Topic == "" {
		o.Topic = "sluice-bench"
	}
	if o.Records == 0 && o.Mode != Consume {
		o.Records = 1_000_000
	}
	if o.RecordBytes == 0 {
		o.RecordBytes = 100
	}
	if o.Partitions == 0 {
		o.Partitions = 8
	}
	if !o.AcksSet {
		o.Acks = -1
	}
	if o.Producers == 0 {
		o.Producers = 1
	}
	if o.Compression == "" {
		o.Compression = "none"
	}
	if o.Inflight == 0 {
		o.Inflight = 5
	}
	if o.ProgressInterval == 0 {
		o.ProgressInterval = time.Second
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = 10 * time.Second
	}
	switch {
	case o.Mode != Produce && o.Mode != Consume && o.Mode != E2E:
		return o, fmt.Errorf("bench: unknown mode %q (produce, consume or e2e)", o.Mode)
	case o.Records < 0:
		return o, fmt.Errorf("bench: negative record count %d", o.Records)
	case o.RecordBytes < 0 || (o.Mode == E2E && o.RecordBytes < stampBytes):
		return o, fmt.Errorf("bench: record size %d (e2e needs at least %d bytes for the send time)", o.RecordBytes, stampBytes)
	case o.Partitions < 0:
		return o, fmt.Errorf("bench: %d partitions", o.Partitions)
	case o.Acks != 0 && o.Acks != 1 && o.Acks != -1:
		return o, fmt.Errorf("bench: acks must be 0, 1 or -1 (all), not %d", o.Acks)
	case o.Producers < 0 || int64(o.Producers) > max(o.Records, 1):
		return o, fmt.Errorf("bench: %d producers for %d records", o.Producers, o.Records)
	case o.Rate < 0:
		return o, fmt.Errorf("bench: negative rate %g", o.Rate)
	case o.Linger < 0:
		return o, fmt.Errorf("bench: negative linger %v", o.Linger)
	case o.Inflight < 0:
		return o, fmt.Errorf("bench: negative in-flight bound %d", o.Inflight)
	}
	if _, err := ParseCompression(o.Compression); err != nil {
		return o, err
	}
	return o, nil
}

// ParseAcks reads "all", "-1", "1" or "0".
func ParseAcks(s string) (int, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "all", "-1":
		return -1, nil
	case "1", "leader":
		return 1, nil
	case "0", "none":
		return 0, nil
	}
	return 0, fmt.Errorf("bench: acks %q: want all, 1 or 0", s)
}

// AcksString is "all", "1" or "0".
func AcksString(acks int) string {
	if acks == -1 {
		return "all"
	}
	return strconv.Itoa(acks)
}

// ParseCompression maps a codec name to franz-go's codec.
func ParseCompression(s string) (kgo.CompressionCodec, error) {
	switch strings.ToLower(s) {
	case "", "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("bench: compression %q: want none, gzip, snappy, lz4 or zstd", s)
}

// Result is what a run measured.
type Result struct {
	Mode        Mode
	Topic       string
	Partitions  int32 // the topic's partition count
	Records     int64 // records in the measured window
	RecordBytes int
	Bytes       int64 // value bytes in the measured window
	Elapsed     time.Duration
	Rate        float64 // the target rate, 0 if none
	// Latency: produce → acknowledged (produce), produce → consumed (e2e);
	// nil for consume.
	Latency *Histogram
	// AckLatency (e2e only): produce → acknowledged, for the same records,
	// to tell the produce side's share of Latency from the fetch side's.
	AckLatency *Histogram
}

// RecordsPerSec is the measured throughput.
func (r *Result) RecordsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Records) / r.Elapsed.Seconds()
}

// MBPerSec is the measured throughput in value bytes (10^6 bytes per MB).
func (r *Result) MBPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Bytes) / 1e6 / r.Elapsed.Seconds()
}

// WriteSummary writes the run's summary, a few lines.
func (r *Result) WriteSummary(w io.Writer) {
	fmt.Fprintf(w, "%s: %s records of %d B in %.2f s (topic %s, %d partitions): %s records/s, %.1f MB/s",
		r.Mode, Count(r.Records), r.RecordBytes, r.Elapsed.Seconds(), r.Topic, r.Partitions, Count(int64(r.RecordsPerSec()+0.5)), r.MBPerSec())
	if r.Rate > 0 {
		fmt.Fprintf(w, " (target %s records/s)", Count(int64(r.Rate)))
	}
	fmt.Fprintln(w)
	if h := r.Latency; h != nil && h.Count() > 0 {
		what := "produce → ack"
		if r.Mode == E2E {
			what = "produce → consume"
		}
		writeLatency(w, what, h)
	}
	if h := r.AckLatency; h != nil && h.Count() > 0 {
		writeLatency(w, "produce → ack", h)
	}
}

func writeLatency(w io.Writer, what string, h *Histogram) {
	fmt.Fprintf(w, "latency (%s): p50 %s  p99 %s  p99.9 %s  max %s  mean %s\n", what,
		Millis(h.Quantile(0.50)), Millis(h.Quantile(0.99)), Millis(h.Quantile(0.999)), Millis(h.Max()), Millis(h.Mean()))
}

// Count formats n with thousands separators: 1234567 is "1,234,567".
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Millis formats d in milliseconds with three significant digits or more.
func Millis(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms < 1:
		return strconv.FormatFloat(ms, 'f', 3, 64) + " ms"
	case ms < 10:
		return strconv.FormatFloat(ms, 'f', 2, 64) + " ms"
	case ms < 100:
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	}
	return strconv.FormatFloat(ms, 'f', 0, 64) + " ms"
}

// stampBytes is the size of the send time an e2e record carries at the
// start of its value: nanoseconds since the run's epoch plus one, big
// endian (0 marks a warm-up record that is not measured).
const stampBytes = 8

// run is one run's shared state.
type run struct {
	cfg      Config
	epoch    time.Time // monotonic base of e2e stamps
	done     atomic.Int64
	lat      Histogram
	ackLat   Histogram // e2e: produce → ack
	ctx      context.Context
	cancel   context.CancelCauseFunc
	failOnce sync.Once
}

func (r *run) fail(err error) {
	r.failOnce.Do(func() { r.cancel(err) })
}

// err is the run's failure, if any.
func (r *run) err() error {
	if r.ctx.Err() == nil {
		return nil
	}
	return context.Cause(r.ctx)
}

// Run runs one benchmark and returns its result. It creates the topic
// (Partitions partitions, the broker's default replication factor) for
// produce and e2e runs if it does not exist.
func Run(ctx context.Context, c Config) (*Result, error) {
	cfg, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, epoch: time.Now()}
	r.ctx, r.cancel = context.WithCancelCause(ctx)
	defer r.cancel(nil)

	adm, err := kgo.NewClient(r.clientOpts()...)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	partitions, err := r.topic(kadm.NewClient(adm))
	if err != nil {
		return nil, err
	}
	res := &Result{Mode: cfg.Mode, Topic: cfg.Topic, Partitions: partitions, RecordBytes: cfg.RecordBytes, Rate: cfg.Rate}
	switch cfg.Mode {
	case Produce:
		res.Latency = &r.lat
		err = r.produce(res)
	case Consume:
		err = r.consume(kadm.NewClient(adm), res)
	case E2E:
		res.Latency, res.AckLatency = &r.lat, &r.ackLat
		err = r.e2e(kadm.NewClient(adm), res)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// clientOpts are the options every client of the run starts with.
func (r *run) clientOpts(extra ...kgo.Opt) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(r.cfg.Brokers...), kgo.ClientID("sluice-bench")}
	opts = append(opts, r.cfg.ClientOpts...)
	return append(opts, extra...)
}

// topic makes sure the topic exists and returns its partition count.
func (r *run) topic(adm *kadm.Client) (int32, error) {
	ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second)
	defer cancel()
	tds, err := adm.ListTopics(ctx, r.cfg.Topic)
	if err != nil {
		return 0, fmt.Errorf("bench: metadata: %w", err)
	}
	td, ok := tds[r.cfg.Topic]
	if ok && td.Err == nil {
		return int32(len(td.Partitions)), nil
	}
	if ok && !errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return 0, fmt.Errorf("bench: topic %s: %w", r.cfg.Topic, td.Err)
	}
	if r.cfg.Mode == Consume {
		return 0, fmt.Errorf("bench: topic %s does not exist: nothing to consume", r.cfg.Topic)
	}
	resp, err := adm.CreateTopic(ctx, r.cfg.Partitions, -1, nil, r.cfg.Topic)
	if err == nil && resp.Err != nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
		err = resp.Err
	}
	if err != nil {
		return 0, fmt.Errorf("bench: create topic %s: %w", r.cfg.Topic, err)
	}
	return r.cfg.Partitions, nil
}

// progress prints a line every interval until stop is closed: elapsed
// time, records so far, the rate over the last interval, and for latency
// modes the p99 so far.
func (r *run) progress(start time.Time, stop <-chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	w := r.cfg.Progress
	if w == nil {
		return
	}
	t := time.NewTicker(r.cfg.ProgressInterval)
	defer t.Stop()
	last, lastAt := int64(0), start
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			n := r.done.Load()
			rate := float64(n-last) / now.Sub(lastAt).Seconds()
			line := fmt.Sprintf("%7.1fs %14s records %12s records/s %8.1f MB/s", now.Sub(start).Seconds(), Count(n), Count(int64(rate)), rate*float64(r.cfg.RecordBytes)/1e6)
			if r.cfg.Mode != Consume && r.lat.Count() > 0 {
				line += "  p99 " + Millis(r.lat.Quantile(0.99))
			}
			fmt.Fprintln(w, line)
			last, lastAt = n, now
		}
	}
}

// newProducer returns a producer client for the run.
func (r *run) newProducer() (*kgo.Client, error) {
	codec, _ := ParseCompression(r.cfg.Compression)
	acks := kgo.AllISRAcks()
	switch r.cfg.Acks {
	case 0:
		acks = kgo.NoAck()
	case 1:
		acks = kgo.LeaderAck()
	}
	opts := []kgo.Opt{
		kgo.DefaultProduceTopic(r.cfg.Topic),
		kgo.RequiredAcks(acks),
		kgo.ProducerBatchCompression(codec),
		kgo.ProducerLinger(r.cfg.Linger),
	}
	if !r.cfg.Idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(r.cfg.Inflight))
	}
	return kgo.NewClient(r.clientOpts(opts...)...)
}

// producers creates the run's producer clients and warms each up with one
// record sent synchronously (connections and metadata are then in place).
// Warm-up records carry stamp 0.
func (r *run) producers() ([]*kgo.Client, error) {
	var cls []*kgo.Client
	for range r.cfg.Producers {
		cl, err := r.newProducer()
		if err != nil {
			closeAll(cls)
			return nil, err
		}
		cls = append(cls, cl)
		ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second)
		err = cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, r.cfg.RecordBytes)}).FirstErr()
		cancel()
		if err != nil {
			closeAll(cls)
			return nil, fmt.Errorf("bench: warm-up produce: %w", err)
		}
	}
	return cls, nil
}

func closeAll(cls []*kgo.Client) {
	for _, cl := range cls {
		cl.Close()
	}
}

// runProducers sends the run's records from cls, paced to the target rate
// if there is one, and waits until every record is acknowledged. With ack
// set, each acknowledgement counts as done and records its latency in
// r.lat; otherwise (e2e) the latency goes to r.ackLat.
func (r *run) runProducers(cls []*kgo.Client, ack bool) {
	var wg sync.WaitGroup
	for i, cl := range cls {
		n := r.cfg.Records / int64(len(cls))
		if i < int(r.cfg.Records%int64(len(cls))) {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.produceN(cl, n, r.cfg.Rate/float64(len(cls)), ack, uint64(i))
		}()
	}
	wg.Wait()
}

// latencySample: an unpaced produce run measures the latency of every
// latencySample-th record only. Reading the clock twice per record would
// cost the client more than the broker's whole share of the work on some
// virtual machines (a kvm-clock read is ~70 ns), lowering every broker's
// ceiling; one record in 16 still gives tens of thousands of samples.
const latencySample = 16

// produceN sends n records from cl at rate records/s (0: unpaced). Each
// measured record carries its send time in its first stampBytes bytes (if
// it has that many); the others carry 0 there. The send time is not taken
// from the record's Timestamp: the client truncates that to milliseconds.
func (r *run) produceN(cl *kgo.Client, n int64, rate float64, ack bool, seed uint64) {
	size := r.cfg.RecordBytes
	stamped := size >= stampBytes
	every := int64(1)
	if r.cfg.Mode == Produce && rate == 0 {
		every = latencySample
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	pool := sync.Pool{New: func() any {
		v := make([]byte, size)
		for i := 0; i < len(v); i += 8 {
			var w [8]byte
			binary.LittleEndian.PutUint64(w[:], rng.Uint64())
			copy(v[i:], w[:])
		}
		return &kgo.Record{Value: v}
	}}
	promise := func(rec *kgo.Record, err error) {
		switch {
		case err != nil:
			r.fail(fmt.Errorf("bench: produce: %w", err))
		default:
			if stamped {
				if s := binary.BigEndian.Uint64(rec.Value); s != 0 {
					h := &r.ackLat
					if ack {
						h = &r.lat
					}
					h.Record(time.Since(r.epoch) - time.Duration(s-1))
				}
			}
			if ack {
				r.done.Add(1)
			}
		}
		*rec = kgo.Record{Value: rec.Value}
		pool.Put(rec)
	}
	start := time.Now()
	var now time.Time
	for i := int64(0); i < n; {
		if rate > 0 {
			due := int64(time.Since(start).Seconds()*rate) + 1 // records due by now
			if i >= due {
				time.Sleep(time.Duration(float64(i-due+1) / rate * float64(time.Second)))
				continue
			}
		}
		if r.ctx.Err() != nil {
			break
		}
		rec := pool.Get().(*kgo.Record)
		var stamp uint64
		if i%every == 0 {
			now = time.Now()
			stamp = uint64(now.Sub(r.epoch)) + 1
		}
		rec.Timestamp = now // else the client reads the clock itself
		if stamped {
			binary.BigEndian.PutUint64(rec.Value, stamp)
		}
		cl.Produce(r.ctx, rec, promise)
		i++
	}
	if err := cl.Flush(r.ctx); err != nil && r.ctx.Err() == nil {
		r.fail(fmt.Errorf("bench: flush: %w", err))
	}
}

func (r *run) produce(res *Result) error {
	cls, err := r.producers()
	if err != nil {
		return err
	}
	defer closeAll(cls)
	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go r.progress(start, stop, &wg)
	r.runProducers(cls, true)
	res.Elapsed = time.Since(start)
	close(stop)
	wg.Wait()
	if err := r.err(); err != nil {
		return err
	}
	res.Records = r.done.Load()
	res.Bytes = res.Records * int64(r.cfg.RecordBytes)
	return nil
}

// consumer returns a consuming client (no group) for the run's topic. An
// OFFSET_OUT_OF_RANGE from the broker is returned as an error, not
// recovered from by resetting the offset: a run reads exact ranges, so it
// is always a broker fault worth seeing.
func (r *run) consumer(opts ...kgo.Opt) (*kgo.Client, error) {
	opts = append([]kgo.Opt{kgo.FetchMaxWait(time.Second), kgo.ConsumeResetOffset(kgo.NoResetOffset())}, opts...)
	return kgo.NewClient(r.clientOpts(opts...)...)
}

// listOffsets lists the topic's start or end offsets with list, retrying
// for up to 10 s while the topic is not known yet (just created: the
// client's metadata may lag).
func (r *run) listOffsets(list func(context.Context, ...string) (kadm.ListedOffsets, error)) (kadm.ListedOffsets, error) {
	ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
	defer cancel()
	for {
		l, err := list(ctx, r.cfg.Topic)
		if err == nil {
			err = l.Error()
		}
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, kerr.UnknownTopicOrPartition) && !errors.Is(err, kerr.LeaderNotAvailable) {
			return nil, fmt.Errorf("bench: list offsets: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("bench: list offsets: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// offsets are the listed offsets as exact consume positions, without the
// leader epoch (so the client does not validate it with
// OffsetForLeaderEpoch, which not every broker serves).
func offsets(l kadm.ListedOffsets) map[string]map[int32]kgo.Offset {
	m := map[string]map[int32]kgo.Offset{}
	l.Each(func(o kadm.ListedOffset) {
		if m[o.Topic] == nil {
			m[o.Topic] = map[int32]kgo.Offset{}
		}
		m[o.Topic][o.Partition] = kgo.NewOffset().At(o.Offset)
	})
	return m
}

// poll polls cl once, failing after the idle timeout.
func (r *run) poll(cl *kgo.Client) (kgo.Fetches, error) {
	ctx, cancel := context.WithTimeout(r.ctx, r.cfg.IdleTimeout)
	defer cancel()
	fs := cl.PollFetches(ctx)
	if err := r.err(); err != nil {
		return nil, err
	}
	var err error
	fs.EachError(func(t string, p int32, e error) {
		switch {
		case errors.Is(e, context.DeadlineExceeded):
			err = fmt.Errorf("bench: no record for %v", r.cfg.IdleTimeout)
		case err == nil:
			err = fmt.Errorf("bench: fetch %s/%d: %w", t, p, e)
		}
	})
	return fs, err
}

func (r *run) consume(adm *kadm.Client, res *Result) error {
	starts, err := r.listOffsets(adm.ListStartOffsets)
	if err != nil {
		return err
	}
	ends, err := r.listOffsets(adm.ListEndOffsets)
	if err != nil {
		return err
	}
	target := r.cfg.Records
	if target == 0 {
		starts.Each(func(o kadm.ListedOffset) {
			if e, ok := ends.Lookup(o.Topic, o.Partition); ok {
				target += e.Offset - o.Offset
			}
		})
		if target == 0 {
			return fmt.Errorf("bench: topic %s is empty", r.cfg.Topic)
		}
	}
	cl, err := r.consumer(kgo.ConsumePartitions(offsets(starts)))
	if err != nil {
		return err
	}
	defer cl.Close()
	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go r.progress(start, stop, &wg)
	defer func() { close(stop); wg.Wait() }()
	var n, bytes int64
	for n < target {
		fs, err := r.poll(cl)
		if err != nil {
			return fmt.Errorf("%w (consumed %s of %s)", err, Count(n), Count(target))
		}
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, rec := range p.Records {
				bytes += int64(len(rec.Value))
			}
			n += int64(len(p.Records))
		})
		r.done.Store(n)
	}
	res.Elapsed = time.Since(start)
	res.Records, res.Bytes = n, bytes
	return nil
}

func (r *run) e2e(adm *kadm.Client, res *Result) error {
	ends, err := r.listOffsets(adm.ListEndOffsets)
	if err != nil {
		return err
	}
	cons, err := r.consumer(kgo.ConsumePartitions(offsets(ends)))
	if err != nil {
		return err
	}
	defer cons.Close()
	cls, err := r.producers()
	if err != nil {
		return err
	}
	defer closeAll(cls)
	// The warm-up records (one per producer) reach the consumer first:
	// then its connections and fetches are in place too.
	for warm := 0; warm < len(cls); {
		fs, err := r.poll(cons)
		if err != nil {
			return fmt.Errorf("%w (waiting for the warm-up records)", err)
		}
		warm += fs.NumRecords()
	}

	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go r.progress(start, stop, &wg)
	defer func() { close(stop); wg.Wait() }()
	prodDone := make(chan struct{})
	go func() {
		r.runProducers(cls, false)
		close(prodDone)
	}()
	var n int64
	var consErr error
	for n < r.cfg.Records {
		fs, err := r.poll(cons)
		if err != nil {
			consErr = fmt.Errorf("%w (consumed %s of %s)", err, Count(n), Count(r.cfg.Records))
			break
		}
		now := time.Since(r.epoch)
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, rec := range p.Records {
				if len(rec.Value) < stampBytes {
					continue
				}
				if s := binary.BigEndian.Uint64(rec.Value); s != 0 {
					r.lat.Record(now - time.Duration(s-1))
					n++
				}
			}
		})
		r.done.Store(n)
	}
	res.Elapsed = time.Since(start)
	if consErr != nil {
		r.fail(consErr)
	}
	<-prodDone
	if err := r.err(); err != nil {
		return err
	}
	res.Records, res.Bytes = n, n*int64(r.cfg.RecordBytes)
	return nil
}
