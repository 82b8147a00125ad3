package host

// A Driver owns its txn.Coordinator on one goroutine (run): it reads the
// partition to its log end into the core (Load, then Loaded), then loops:
// the core's Ready is performed (Writes appended to the partition as one
// batch and waited for acks=all in a goroutine; Markers sent as
// WriteTxnMarkers, batched per leader, markers.go; Answers handed to the
// requests waiting for them), then one event is stepped: a request, the
// result of a write or marker, or a periodic check (AbortTimedOut every
// transaction.abort.timed.out.transaction.cleanup.interval.ms, ExpireIDs
// every transaction.remove.expired.transaction.cleanup.interval.ms). Every
// event is preceded by a Tick of the clock. A write or marker that failed
// is reported back after retryBackoff, so that the core's retry of it does
// not spin.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/coordinator/txn"
	"github.com/sluice-io/sluice/engine"
	rhost "github.com/sluice-io/sluice/replication/host"
)

// Driver runs the transaction coordinator of one partition of
// __transaction_state under one leader epoch.
type Driver struct {
	cs        *Coordinators
	partition int32
	epoch     int32
	in        chan func(*txnLoop) // events, run on the loop's goroutine
	results   chan txn.Event      // WriteResults and MarkerResults
	stop      chan struct{}       // closed by stopDriver
	loaded    chan struct{}       // closed once the partition is loaded
	done      chan struct{}       // closed when run returns
	stopOnce  sync.Once

	mu struct {
		sync.Mutex
		stopped bool
	}
}

func newDriver(cs *Coordinators, partition, epoch int32) *Driver {
	return &Driver{cs: cs, partition: partition, epoch: epoch,
		in: make(chan func(*txnLoop)), results: make(chan txn.Event, 64),
		stop: make(chan struct{}), loaded: make(chan struct{}), done: make(chan struct{})}
}

// Loaded reports whether the partition is loaded: requests are served.
func (d *Driver) Loaded() bool {
	select {
	case <-d.loaded:
		return true
	default:
		return false
	}
}

// AwaitLoaded waits until the partition is loaded, the driver stops or
// ctx ends.
func (d *Driver) AwaitLoaded(ctx context.Context) {
	select {
	case <-d.loaded:
	case <-d.done:
	case <-ctx.Done():
	}
}

// stopDriver stops the loop; no append of it lands after it returns.
func (d *Driver) stopDriver() {
	d.stopOnce.Do(func() {
		d.mu.Lock()
		d.mu.stopped = true
		d.mu.Unlock()
		close(d.stop)
	})
}

// report hands a result to the loop, unless it has stopped.
func (d *Driver) report(ev txn.Event) {
	select {
	case d.results <- ev:
	case <-d.done:
	}
}

// reportLater reports a failure after the retry backoff.
func (d *Driver) reportLater(ev txn.Event) {
	time.AfterFunc(retryBackoff, func() { d.report(ev) })
}

// errTxnDriverStopped answers requests of a driver that stopped.
var errStopped = errors.New("txn host: the transaction coordinator moved")

// Call steps the event ev makes (given its request id) and waits for its
// answer. A driver that stops first answers NOT_COORDINATOR.
func (d *Driver) Call(ctx context.Context, ev func(req uint64) txn.Event) txn.Answer {
	ch := make(chan txn.Answer, 1)
	step := func(l *txnLoop) {
		l.nextReq++
		l.waiting[l.nextReq] = ch
		l.c.Step(ev(l.nextReq))
	}
	fail := func(code int16) txn.Answer { return txn.Answer{Code: code, ProducerID: -1, Epoch: -1} }
	select {
	case d.in <- step:
	case <-d.done:
		return fail(kerr.NotCoordinator.Code)
	case <-ctx.Done():
		return fail(kerr.RequestTimedOut.Code)
	}
	select {
	case a := <-ch:
		return a
	case <-ctx.Done():
		return fail(kerr.RequestTimedOut.Code)
	}
}

// Inspect runs fn on the loop's goroutine (reading the core's state) and
// waits for it; false if the driver stopped.
func (d *Driver) Inspect(ctx context.Context, fn func(c *txn.Coordinator)) bool {
	ran := make(chan struct{})
	select {
	case d.in <- func(l *txnLoop) { fn(l.c); close(ran) }:
	case <-d.done:
		return false
	case <-ctx.Done():
		return false
	}
	<-ran
	return true
}

// txnLoop is the state of run's goroutine.
type txnLoop struct {
	d       *Driver
	c       *txn.Coordinator
	waiting map[uint64]chan<- txn.Answer
	nextReq uint64
}

func (d *Driver) run() {
	defer close(d.done)
	o := &d.cs.opts
	tc := o.Config
	opts := txn.Options{
		MaxTimeoutMs:      int32(min(tc.MaxTimeout.Milliseconds(), 1<<31-1)),
		ExpirationMs:      tc.IDExpiration.Milliseconds(),
		OffsetsPartitions: o.OffsetsPartitions(),
		NewProducerID:     o.NewProducerID,
	}
	l := &txnLoop{d: d, c: txn.New(d.partition, d.epoch, opts), waiting: map[uint64]chan<- txn.Answer{}}
	defer func() {
		for _, ch := range l.waiting {
			ch <- txn.Answer{Code: kerr.NotCoordinator.Code, ProducerID: -1, Epoch: -1}
		}
	}()
	start := time.Now()
	n, err := d.load(l.c)
	if err != nil {
		if !d.stopped() {
			o.Logger.Error("loading transactions", "topic", StateTopic, "partition", d.partition, "err", err)
		}
		return
	}
	l.c.Step(txn.Tick{NowMs: time.Now().UnixMilli()})
	l.c.Step(txn.Loaded{})
	close(d.loaded)
	level := slog.LevelDebug
	if n > 0 {
		level = slog.LevelInfo
	}
	o.Logger.Log(context.Background(), level, "loaded transactions", "topic", StateTopic, "partition", d.partition,
		"coordinator_epoch", d.epoch, "records", n, "ids", len(l.c.IDs()), "took", time.Since(start))
	abortT := time.NewTicker(tc.AbortCheck)
	defer abortT.Stop()
	expireT := time.NewTicker(tc.ExpireCheck)
	defer expireT.Stop()
	for {
		l.perform()
		select {
		case <-d.stop:
			return
		case f := <-d.in:
			l.c.Step(txn.Tick{NowMs: time.Now().UnixMilli()})
			f(l)
		case ev := <-d.results:
			l.c.Step(txn.Tick{NowMs: time.Now().UnixMilli()})
			l.c.Step(ev)
		case <-abortT.C:
			l.c.Step(txn.Tick{NowMs: time.Now().UnixMilli()})
			l.c.Step(txn.AbortTimedOut{})
		case <-expireT.C:
			l.c.Step(txn.Tick{NowMs: time.Now().UnixMilli()})
			l.c.Step(txn.ExpireIDs{})
		}
	}
}

func (d *Driver) stopped() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mu.stopped
}

// perform does what the core decided until it has nothing more.
func (l *txnLoop) perform() {
	for {
		rd := l.c.Ready()
		l.c.Advance(rd)
		if rd.Empty() {
			return
		}
		if len(rd.Writes) > 0 {
			l.d.write(rd.Writes)
		}
		if len(rd.Markers) > 0 {
			l.d.sendMarkers(rd.Markers)
		}
		for _, a := range rd.Answers {
			if ch, ok := l.waiting[a.Req]; ok {
				delete(l.waiting, a.Req)
				ch <- a
			}
		}
	}
}

// write appends the records as one batch and waits, in a goroutine, for
// their replication (acks=all); each is reported by a WriteResult.
func (d *Driver) write(ws []txn.Write) {
	fail := func(code int16) {
		for _, w := range ws {
			d.reportLater(txn.WriteResult{ID: w.ID, Code: code})
		}
	}
	p, code := d.cs.opts.Leader(StateTopic, d.partition)
	if p == nil {
		fail(code)
		return
	}
	if err := p.CheckAcksAll(); err != nil {
		fail(rhost.ErrorCode(err))
		return
	}
	var bb engine.BatchBuilder
	now := time.Now().UnixMilli()
	for _, w := range ws {
		bb.Add(engine.Record{Timestamp: now, Key: w.Key, Value: w.Value})
	}
	d.mu.Lock()
	if d.mu.stopped {
		d.mu.Unlock()
		fail(kerr.NotCoordinator.Code)
		return
	}
	res, err := p.AppendAsLeader(bb.Build(), rhost.AppendHow{AcksAll: true})
	d.mu.Unlock()
	if err != nil {
		code, _ := p.AppendError(err)
		fail(code)
		return
	}
	p.Notify()
	go func() {
		err := p.Log.AwaitFlushPolicy(res)
		if err == nil {
			err = p.AwaitReplicated(res.LastOffset+1, writeTimeout, d.cs.opts.Closing)
		}
		for _, w := range ws {
			if err != nil {
				d.reportLater(txn.WriteResult{ID: w.ID, Code: rhost.ErrorCode(err)})
			} else {
				d.report(txn.WriteResult{ID: w.ID})
			}
		}
	}()
}

// load reads the partition to its log end into c, as Kafka's
// TransactionStateManager loads it: a record that does not parse is
// skipped with a warning naming its offset.
func (d *Driver) load(c *txn.Coordinator) (int, error) {
	p, code := d.cs.opts.Leader(StateTopic, d.partition)
	if p == nil {
		return 0, fmt.Errorf("txn host: %s-%d: %w", StateTopic, d.partition, kerr.ErrorForCode(code))
	}
	n := 0
	err := p.ReadRecords(func(r engine.Record) error {
		if d.stopped() {
			return errStopped
		}
		n++
		if err := c.Load(r.Key, r.Value); err != nil {
			d.cs.opts.Logger.Warn("skipping a record of "+StateTopic, "partition", d.partition, "offset", r.Offset, "err", err)
		}
		return nil
	})
	return n, err
}
