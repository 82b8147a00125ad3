package main

// The fault-injection suite's workload and checker, after Jepsen's Kafka
// checker: idempotent acks=all producers write unique values to a topic
// while a consumer group reads it, every acknowledgement, failure and
// group delivery is recorded in a history, and at the end every partition
// is read from its start and the history is judged against that read.
//
// A value is "<producer>-<sequence>", the sequence in 9 zero-padded
// digits, so values sort as they were sent and no value holds another.
// A producer sends its sequences in increasing order and cycles through
// its partitions, so each partition receives one producer's sequences in
// increasing order: an idempotent producer must keep that order in the log.
//
// The anomalies (analyze):
//
//	lost          acknowledged, absent from the final read
//	duplicated    one value at two offsets (final read and group reads)
//	inconsistent  two values observed at one offset (acks, group, final)
//	misplaced     acknowledged at one position, read at another
//	disordered    a partition's sequences of one producer not increasing
//	groupMissed   acknowledged, never delivered to the consumer group
//	unknown       read, but never sent (or not a value of the workload)
//	nonRetriable  errors the producers saw that a client cannot retry
//	              (and franz-go's data-loss detection: an out-of-order
//	              sequence or unknown producer id made it reset its id)
//
// Records that failed with a retriable error, or whose fate no answer
// told, may be in the log or not: they are indeterminate, as in Jepsen.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// position is where a record sits: partition and offset.
type position struct {
	partition int32
	offset    int64
}

// read is one record as a consumer delivered it.
type read struct {
	position
	value string
}

// history is everything the workload's clients observed. It is safe for
// concurrent use.
type history struct {
	mu struct {
		sync.Mutex
		sent         map[string]bool     // every value handed to a producer
		acked        map[string]position // the acknowledgement's position (offset -1 when it named none)
		failed       int                 // records that failed with a retriable error
		errs         map[string]int      // retriable errors by text, counted per record
		nonRetriable []string
		group        []read // every record the group delivered, redeliveries included
	}
}

func newHistory() *history {
	h := &history{}
	h.mu.sent = map[string]bool{}
	h.mu.acked = map[string]position{}
	h.mu.errs = map[string]int{}
	return h
}

func (h *history) send(v string) {
	h.mu.Lock()
	h.mu.sent[v] = true
	h.mu.Unlock()
}

// result records a produce's outcome for r.
func (h *history) result(r *kgo.Record, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := string(r.Value)
	switch {
	case err == nil:
		h.mu.acked[v] = position{r.Partition, r.Offset}
	case retriable(err):
		h.mu.failed++
		h.mu.errs[err.Error()]++
	default:
		h.mu.nonRetriable = append(h.mu.nonRetriable, fmt.Sprintf("%s to partition %d: %v", v, r.Partition, err))
	}
}

// dataLoss records franz-go's data-loss detection on topic-partition.
func (h *history) dataLoss(topic string, partition int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.mu.nonRetriable = append(h.mu.nonRetriable, fmt.Sprintf("%s-%d: the producer detected data loss (OUT_OF_ORDER_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID) and reset its producer id", topic, partition))
}

func (h *history) groupRead(r *kgo.Record) {
	h.mu.Lock()
	h.mu.group = append(h.mu.group, read{position{r.Partition, r.Offset}, string(r.Value)})
	h.mu.Unlock()
}

// retriable reports whether err is one a client retries: a retriable
// Kafka error code, a connection failure, or franz-go giving up after
// retrying such errors.
func retriable(err error) bool {
	var ke *kerr.Error
	var ne net.Error
	switch {
	case errors.As(err, &ke):
		return ke.Retriable
	case errors.Is(err, kgo.ErrRecordRetries), errors.Is(err, kgo.ErrRecordTimeout):
		return true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false // the test gave up on the record: not the broker's answer
	case errors.As(err, &ne), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	return false
}

// workValue is the value of producer's sequence seq.
func workValue(producer string, seq int64) string { return fmt.Sprintf("%s-%09d", producer, seq) }

// parseWorkValue splits a workload value; ok is false for anything else.
func parseWorkValue(v string) (producer string, seq int64, ok bool) {
	i := strings.LastIndexByte(v, '-')
	if i <= 0 || len(v)-i-1 != 9 {
		return "", 0, false
	}
	seq, err := strconv.ParseInt(v[i+1:], 10, 64)
	return v[:i], seq, err == nil
}

// report is the checker's verdict on a history. Each list holds every
// anomaly of its kind, sorted.
type report struct {
	acked, failed, indeterminate, read, groupReads int
	failedRead                                     int // failed retriably, yet in the log (allowed)
	errs                                           map[string]int
	lost, duplicated, inconsistent, misplaced      []string
	disordered, groupMissed, unknown, nonRetriable []string
}

// analyze judges history h against final, a read of every partition from
// its start to its end, each partition's records in offset order. It does
// no I/O.
func analyze(h *history, final []read) report {
	h.mu.Lock()
	defer h.mu.Unlock()
	rep := report{acked: len(h.mu.acked), failed: h.mu.failed, read: len(final), groupReads: len(h.mu.group),
		errs: h.mu.errs, nonRetriable: slices.Clone(h.mu.nonRetriable)}
	rep.indeterminate = len(h.mu.sent) - rep.acked - rep.failed - len(rep.nonRetriable)

	at := map[position]map[string]bool{}    // every value observed at a position
	where := map[string]map[position]bool{} // every position a value was read at
	observe := func(p position, v string, isRead bool) {
		if p.offset < 0 {
			return
		}
		if at[p] == nil {
			at[p] = map[string]bool{}
		}
		at[p][v] = true
		if isRead {
			if where[v] == nil {
				where[v] = map[position]bool{}
			}
			where[v][p] = true
		}
	}
	for v, p := range h.mu.acked {
		observe(p, v, false)
	}
	for _, r := range h.mu.group {
		observe(r.position, r.value, true)
	}
	inFinal := map[string]position{}
	type stream struct {
		partition int32
		producer  string
	}
	last := map[stream]read{}
	for _, r := range final {
		observe(r.position, r.value, true)
		inFinal[r.value] = r.position
		producer, seq, ok := parseWorkValue(r.value)
		if !ok || !h.mu.sent[r.value] {
			rep.unknown = append(rep.unknown, fmt.Sprintf("%q at %d/%d", r.value, r.partition, r.offset))
			continue
		}
		s := stream{r.partition, producer}
		if prev, ok := last[s]; ok {
			if _, prevSeq, _ := parseWorkValue(prev.value); seq < prevSeq { // a repeat is a duplicate, not disorder
				rep.disordered = append(rep.disordered, fmt.Sprintf("partition %d: %s at offset %d after %s at %d", r.partition, r.value, r.offset, prev.value, prev.offset))
			}
		}
		last[s] = r
	}
	for p, vs := range at {
		if len(vs) > 1 {
			rep.inconsistent = append(rep.inconsistent, fmt.Sprintf("%d/%d: %v", p.partition, p.offset, slices.Sorted(mapKeys(vs))))
		}
	}
	for v, ps := range where {
		if len(ps) > 1 {
			var s []string
			for p := range ps {
				s = append(s, fmt.Sprintf("%d/%d", p.partition, p.offset))
			}
			slices.Sort(s)
			rep.duplicated = append(rep.duplicated, fmt.Sprintf("%s at %v", v, s))
		}
	}
	grouped := map[string]bool{}
	for _, r := range h.mu.group {
		grouped[r.value] = true
	}
	for v := range h.mu.sent {
		if _, acked := h.mu.acked[v]; !acked {
			if _, ok := inFinal[v]; ok {
				rep.failedRead++
			}
		}
	}
	for v, p := range h.mu.acked {
		got, ok := inFinal[v]
		switch {
		case !ok:
			rep.lost = append(rep.lost, fmt.Sprintf("%s (acknowledged at %d/%d)", v, p.partition, p.offset))
		case got.partition != p.partition || (p.offset >= 0 && got.offset != p.offset):
			rep.misplaced = append(rep.misplaced, fmt.Sprintf("%s acknowledged at %d/%d, read at %d/%d", v, p.partition, p.offset, got.partition, got.offset))
		}
		if !grouped[v] {
			rep.groupMissed = append(rep.groupMissed, v)
		}
	}
	for _, l := range [][]string{rep.lost, rep.duplicated, rep.inconsistent, rep.misplaced, rep.disordered, rep.groupMissed, rep.unknown, rep.nonRetriable} {
		slices.Sort(l)
	}
	return rep
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// anomalies lists the report's anomalies by kind, with up to 10 examples
// each; none means the history is valid.
func (r report) anomalies() []string {
	var out []string
	for _, k := range []struct {
		what string
		list []string
	}{
		{"acknowledged records lost", r.lost},
		{"values at more than one offset", r.duplicated},
		{"offsets with more than one value", r.inconsistent},
		{"acknowledgements naming another position than the read", r.misplaced},
		{"order violations", r.disordered},
		{"acknowledged records the consumer group never delivered", r.groupMissed},
		{"records read that were never sent", r.unknown},
		{"non-retriable producer errors", r.nonRetriable},
	} {
		if len(k.list) > 0 {
			out = append(out, fmt.Sprintf("%d %s: %v", len(k.list), k.what, k.list[:min(10, len(k.list))]))
		}
	}
	return out
}

func (r report) String() string {
	var errs []string
	for e, n := range r.errs {
		errs = append(errs, fmt.Sprintf("%dx %s", n, e))
	}
	slices.Sort(errs)
	return fmt.Sprintf("%d acknowledged, %d failed retriably %v, %d never answered, %d unacknowledged in the log; %d read at the end, %d group deliveries",
		r.acked, r.failed, errs, r.indeterminate, r.failedRead, r.read, r.groupReads)
}

// workload is a faults test's clients on one topic: producers writing
// unique values and a consumer group reading, recording into one history.
type workload struct {
	c          *testCluster
	ctx        context.Context
	topic      string
	partitions int32
	rf         int16
	h          *history
	producers  []*workProducer
	group      *groupReader
	ends       map[int32]int64   // per partition, the end offset check read to
	replicas   map[int32][]int32 // per partition, its replicas when check ran
}

// startWorkload creates topic (partitions partitions, RF 3,
// min.insync.replicas 2), waits until every replica is in sync, and starts
// the consumer group "<topic>-readers" reading it from the start. ctx
// bounds every produce and read of the workload.
func startWorkload(ctx context.Context, c *testCluster, topic string, partitions int32) *workload {
	c.t.Helper()
	return startWorkloadRF(ctx, c, topic, partitions, 3)
}

// startWorkloadRF is startWorkload with rf replicas a partition.
func startWorkloadRF(ctx context.Context, c *testCluster, topic string, partitions int32, rf int16) *workload {
	c.t.Helper()
	createReplicatedRF(ctx, c.t, c, topic, partitions, rf)
	w := &workload{c: c, ctx: ctx, topic: topic, partitions: partitions, rf: rf, h: newHistory()}
	w.group = startGroupReader(ctx, c, w.h, topic)
	return w
}

// workProducer is one idempotent acks=all producer of a workload, writing
// values of its name with sequences 0, 1, 2, ... to its partitions in
// turn.
type workProducer struct {
	name       string
	cl         *kgo.Client
	partitions []int32
	acked      atomic.Int64   // acknowledged records
	ackedIn    []atomic.Int64 // acknowledged records by partition, indexed as partitions
	done       atomic.Int64   // records answered, acknowledged or not
	sent       atomic.Int64
	stop       chan struct{}
	exit       chan struct{} // closed once it sends no more
	once       sync.Once
}

// produceOpts are a workload producer's settings.
type produceOpts struct {
	partitions []int32 // written in turn; all the topic's if empty
	rate       int     // records a second at most; 0 is as fast as the window allows
	total      int64   // records to send; 0 is until stopped
	window     int     // records sent and not yet answered, at most (default 500)
	opts       []kgo.Opt
}

// produce starts a producer named name (unique in the workload). Its
// client is idempotent (franz-go's default), acks=all, gives a record up
// after 6 tries with retriable errors (franz-go does only when the
// sequence numbers allow), reports franz-go's data-loss detection into
// the history, asks for metadata again 250 ms after it last did at the
// soonest (franz-go's MetadataMinAge, 5 s by default, would otherwise
// decide how long a partition waits for its new leader), and then takes
// o.opts.
func (w *workload) produce(name string, o produceOpts) *workProducer {
	w.c.t.Helper()
	parts := o.partitions
	if len(parts) == 0 {
		for p := range w.partitions {
			parts = append(parts, p)
		}
	}
	if o.window == 0 {
		o.window = 500
	}
	opts := append([]kgo.Opt{
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordRetries(6),
		kgo.ProducerOnDataLossDetected(w.h.dataLoss),
		kgo.MetadataMinAge(250 * time.Millisecond),
	}, o.opts...)
	p := &workProducer{name: name, cl: w.c.client(opts...), partitions: parts, ackedIn: make([]atomic.Int64, len(parts)),
		stop: make(chan struct{}), exit: make(chan struct{})}
	w.producers = append(w.producers, p)
	go func() {
		defer close(p.exit)
		window := make(chan struct{}, o.window)
		var tick *time.Ticker
		perTick := int64(o.rate / 100)
		if o.rate > 0 {
			tick = time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			perTick = max(1, perTick)
		}
		for seq := int64(0); o.total == 0 || seq < o.total; seq++ {
			if tick != nil && seq%perTick == 0 {
				select {
				case <-tick.C:
				case <-p.stop:
					return
				}
			}
			select {
			case window <- struct{}{}:
			case <-p.stop:
				return
			}
			v := workValue(name, seq)
			w.h.send(v)
			p.sent.Add(1)
			i := seq % int64(len(parts))
			r := &kgo.Record{Topic: w.topic, Partition: parts[i], Value: []byte(v)}
			p.cl.Produce(w.ctx, r, func(r *kgo.Record, err error) {
				w.h.result(r, err)
				if err == nil {
					p.acked.Add(1)
					p.ackedIn[i].Add(1)
				}
				p.done.Add(1)
				<-window
			})
		}
	}()
	return p
}

// waitAcked waits until p has n records acknowledged.
func (p *workProducer) waitAcked(t *testing.T, n int64) {
	t.Helper()
	poll(t, fmt.Sprintf("producer %s: %d records acknowledged", p.name, n), func() error {
		if got := p.acked.Load(); got < n {
			return fmt.Errorf("%d acknowledged, %d of %d sent answered", got, p.done.Load(), p.sent.Load())
		}
		return nil
	})
}

// progress waits until n more records than now are acknowledged in each
// of p's partitions: the cluster serves acks=all produces to every one.
func (p *workProducer) progress(t *testing.T, n int64) {
	t.Helper()
	want := make([]int64, len(p.partitions))
	for i := range want {
		want[i] = p.ackedIn[i].Load() + n
	}
	poll(t, fmt.Sprintf("producer %s: %d more records acknowledged in each of the partitions %v", p.name, n, p.partitions), func() error {
		var behind []string
		for i, part := range p.partitions {
			if got := p.ackedIn[i].Load(); got < want[i] {
				behind = append(behind, fmt.Sprintf("partition %d: %d of %d", part, got, want[i]))
			}
		}
		if len(behind) > 0 {
			return fmt.Errorf("acknowledged %v", behind)
		}
		return nil
	})
}

// finish stops p sending and waits until every record it sent is
// answered.
func (p *workProducer) finish(t *testing.T) {
	t.Helper()
	p.once.Do(func() { close(p.stop) })
	<-p.exit
	poll(t, fmt.Sprintf("producer %s: every record answered", p.name), func() error {
		if d, s := p.done.Load(), p.sent.Load(); d < s {
			return fmt.Errorf("%d of %d answered", d, s)
		}
		return nil
	})
}

// groupReader is the workload's consumer group member.
type groupReader struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	exit   chan struct{}
	mu     struct {
		sync.Mutex
		next      map[int32]int64 // per partition, the offset after the highest delivered
		fetchErrs map[string]int
	}
}

func startGroupReader(ctx context.Context, c *testCluster, h *history, topic string) *groupReader {
	g := &groupReader{
		cl: c.client(kgo.ConsumerGroup(topic+"-readers"), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.MetadataMinAge(250*time.Millisecond)),
		exit: make(chan struct{}),
	}
	g.mu.next, g.mu.fetchErrs = map[int32]int64{}, map[string]int{}
	ctx, g.cancel = context.WithCancel(ctx)
	go func() {
		defer close(g.exit)
		for ctx.Err() == nil {
			fs := g.cl.PollFetches(ctx)
			g.mu.Lock()
			fs.EachError(func(_ string, _ int32, err error) {
				if !errors.Is(err, context.Canceled) {
					g.mu.fetchErrs[err.Error()]++
				}
			})
			fs.EachRecord(func(r *kgo.Record) {
				h.groupRead(r)
				g.mu.next[r.Partition] = max(g.mu.next[r.Partition], r.Offset+1)
			})
			g.mu.Unlock()
		}
	}()
	return g
}

// waitReached waits until the group has delivered every partition up to
// its end offset in ends, then stops the member.
func (g *groupReader) waitReached(t *testing.T, ends map[int32]int64) {
	t.Helper()
	poll(t, "the consumer group has read to the end", func() error {
		g.mu.Lock()
		defer g.mu.Unlock()
		var behind []string
		for p, end := range ends {
			if g.mu.next[p] < end {
				behind = append(behind, fmt.Sprintf("partition %d at %d of %d", p, g.mu.next[p], end))
			}
		}
		if len(behind) > 0 {
			slices.Sort(behind)
			return fmt.Errorf("%v; fetch errors %v", behind, g.mu.fetchErrs)
		}
		return nil
	})
	g.cancel()
	<-g.exit
}

// check ends the workload and judges it: the producers finish, every
// partition is read from its start to its end offset (the high watermark,
// the log end once every replica is in sync), the group must have read as
// far, the history must show no anomaly, and every live replica of each
// partition must hold the same bytes in its segment files, ending there.
// Every live replica should be in sync when it is called. It fails the
// test on any anomaly and returns the report.
func (w *workload) check(t *testing.T) report {
	t.Helper()
	for _, p := range w.producers {
		p.finish(t)
	}
	w.c.waitAgree(fmt.Sprintf("every partition of %s led with its live replicas in sync", w.topic), func(m *kmsg.MetadataResponse) error {
		if err := w.c.wantTopic(m, w.topic, int(w.partitions), int(w.rf)); err != nil {
			return err
		}
		w.replicas = map[int32][]int32{}
		for p := range w.partitions {
			part := partitionOf(m, w.topic, p)
			w.replicas[p] = part.Replicas
			isr := slices.Sorted(slices.Values(part.ISR))
			if want := w.liveReplicas(p); !slices.Equal(isr, want) {
				return fmt.Errorf("%s-%d: ISR %v, want %v", w.topic, p, isr, want)
			}
		}
		return nil
	})
	ends := map[int32]int64{}
	listed, err := kadm.NewClient(w.c.client()).ListEndOffsets(w.ctx, w.topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		t.Fatalf("end offsets of %s: %v", w.topic, err)
	}
	for p := range w.partitions {
		o, _ := listed.Lookup(w.topic, p)
		ends[p] = o.Offset
	}
	final := readToEnds(w.ctx, t, w.c, w.topic, ends)
	w.group.waitReached(t, ends)
	rep := analyze(w.h, final)
	t.Logf("%s: %s", w.topic, rep)
	if errs := w.group.mu.fetchErrs; len(errs) > 0 { // the member has stopped
		t.Logf("%s: the group's fetch errors: %v", w.topic, errs)
	}
	for _, a := range rep.anomalies() {
		t.Errorf("%s: %s", w.topic, a)
	}
	w.ends = ends
	w.replicasEqual(t)
	return rep
}

// replicasEqual waits until the live replicas of each partition hold
// the same bytes, ending at the offset check read to (check first).
func (w *workload) replicasEqual(t *testing.T) {
	t.Helper()
	for p := range w.partitions {
		w.c.waitLogsEqual(w.topic, p, w.liveReplicas(p), wantEnd(w.ends[p]))
	}
}

// liveReplicas lists the live brokers among partition's replicas when
// check ran, sorted.
func (w *workload) liveReplicas(partition int32) []int32 {
	return slices.DeleteFunc(slices.Clone(w.c.live()), func(id int32) bool { return !slices.Contains(w.replicas[partition], id) })
}

// readToEnds reads every partition of topic from its start until the
// offset before its end in ends, as a fresh consumer outside any group.
func readToEnds(ctx context.Context, t *testing.T, c *testCluster, topic string, ends map[int32]int64) []read {
	t.Helper()
	starts := map[int32]kgo.Offset{}
	next := map[int32]int64{}
	for p, end := range ends {
		if end > 0 {
			starts[p] = kgo.NewOffset().AtStart()
			next[p] = 0
		}
	}
	if len(starts) == 0 {
		return nil
	}
	cl := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: starts}))
	defer cl.Close()
	var out []read
	for len(next) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s to its end offsets %v: still to read from %v: %v", topic, ends, next, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < ends[r.Partition] {
				out = append(out, read{position{r.Partition, r.Offset}, string(r.Value)})
			}
			if n, ok := next[r.Partition]; ok && r.Offset+1 > n {
				next[r.Partition] = r.Offset + 1
				if r.Offset+1 >= ends[r.Partition] {
					delete(next, r.Partition)
				}
			}
		})
	}
	return out
}
