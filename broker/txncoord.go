package broker

// The transaction coordinator's place in the broker: __transaction_state,
// created on the first FindCoordinator of a transactional id (key type 1),
// as Kafka creates it, and one driver (txnDriver) for each of its
// partitions this broker leads, running coordinator/txn's decision core.
//
// A driver is started when this broker becomes the partition's leader
// (hosting.go calls moveTxns as it does moveGroups) and stopped when it
// stops leading it: the partition's leader epoch is the coordinator epoch
// its markers carry, so the markers of a coordinator that lost the
// partition are refused by the partition leaders once a newer one sent
// theirs (TRANSACTION_COORDINATOR_FENCED).
//
// The driver owns its txn.Coordinator on one goroutine (run): it reads the
// partition to its log end into the core (Load, then Loaded), then loops:
// the core's Ready is performed (Writes appended to the partition as one
// batch and waited for acks=all in a goroutine; Markers sent as
// WriteTxnMarkers, batched per leader, to this broker by a call and to
// others over the network, txnmarkers.go; Answers handed to the requests
// waiting for them), then one event is stepped: a request, the result of a
// write or marker, or a periodic check (AbortTimedOut every
// transaction.abort.timed.out.transaction.cleanup.interval.ms, ExpireIDs
// every transaction.remove.expired.transaction.cleanup.interval.ms). Every
// event is preceded by a Tick of the broker's clock. A write or marker that
// failed is reported back after txnRetryBackoff, so that the core's retry
// of it does not spin.
//
// A request finds its driver by its transactional id's partition
// (group.PartitionFor over transaction.state.log.num.partitions, Java's
// String.hashCode as Kafka's partitionFor): none is NOT_COORDINATOR, one
// still loading COORDINATOR_LOAD_IN_PROGRESS. A driver that stops answers
// every request waiting on it NOT_COORDINATOR, so the client finds the new
// coordinator.
//
// __transaction_state has Kafka's internal topic configs
// (TransactionLog.transactionTopicConfigs): cleanup.policy=compact,
// compression.type=uncompressed, min.insync.replicas=transaction.state.log.min.isr,
// segment.bytes=transaction.state.log.segment.bytes and
// unclean.leader.election.enable=false. Its replication factor is
// transaction.state.log.replication.factor (3), clamped to 1 on the
// single node, as is its min.insync.replicas.
//
// Lock order: txnCoordinators.mu is taken under controlState.mu and
// Broker.admin (hosting.go starts and stops drivers under them) and nests
// txnDriver.mu, which an append to the partition holds (so that no append
// of a stopped driver lands after it stopped) and which nests the
// partition's and engine's locks. Neither is held across a wait for
// replication or the network.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/coordinator/group"
	"github.com/sluice-io/sluice/coordinator/txn"
	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/replication/host"
	"github.com/sluice-io/sluice/wire/interbroker"
)

// txnStateTopic is Kafka's internal topic of transaction states.
const txnStateTopic = "__transaction_state"

const (
	// txnWriteTimeout bounds the wait for a __transaction_state record's
	// replication: request.timeout.ms, as Kafka's TransactionStateManager
	// appends.
	txnWriteTimeout = 30 * time.Second
	// txnRetryBackoff delays the report of a failed write or marker.
	txnRetryBackoff = 100 * time.Millisecond
	// txnMarkerTimeout bounds one WriteTxnMarkers request.
	txnMarkerTimeout = 30 * time.Second
)

// txnTopicConfigs are the configs __transaction_state is created with.
func txnTopicConfigs(tc config.TxnConfig, single bool) map[string]string {
	minISR := tc.StateMinISR
	if single {
		minISR = 1
	}
	return map[string]string{
		"cleanup.policy":                 "compact",
		"compression.type":               "uncompressed",
		"min.insync.replicas":            strconv.Itoa(int(minISR)),
		"segment.bytes":                  strconv.FormatInt(tc.StateSegmentBytes, 10),
		"unclean.leader.election.enable": "false",
	}
}

// txnCoordinators holds the drivers of the partitions of
// __transaction_state this broker leads.
type txnCoordinators struct {
	mu      sync.Mutex
	drivers map[int32]*txnDriver
	closed  bool
	// send carries markers to other brokers (ZooKeeper mode), made on
	// first use.
	send interbroker.Sender
	// verifySend carries transaction verifications to other brokers'
	// coordinators (txnverify.go), made on first use.
	verifySend interbroker.Sender
	// holdMarkers, when set (a test's seam for a coordinator that dies
	// between its decision and its markers), makes every WriteTxnMarkers
	// fail unsent, to be retried.
	holdMarkers atomic.Bool
}

// txnPartitions is the partition count of __transaction_state: as the
// metadata has it once created (Kafka reads the topic's count too), else
// transaction.state.log.num.partitions.
func (b *Broker) txnPartitions() int32 {
	if t := b.ctl.cache.load().topics[txnStateTopic]; t != nil && t.count > 0 {
		return t.count
	}
	return b.cfg.Txns.WithDefaults().StatePartitions
}

// txnCoordinator finds a transactional id's coordinator for
// FindCoordinator, creating __transaction_state first if needed.
func (b *Broker) txnCoordinator(key, listener string) (id int32, host string, port int32, code int16, msg string) {
	tc := b.cfg.Txns.WithDefaults()
	return b.internalCoordinator(internalTopic{name: txnStateTopic, partitions: b.txnPartitions(),
		replication: tc.StateReplication, replicationKey: "transaction.state.log.replication.factor",
		configs: txnTopicConfigs(tc, b.cluster == nil), what: "transactional id"}, key, listener,
		func(ctx context.Context, p int32) {
			if d := b.txnDriver(p); d != nil {
				select {
				case <-d.loaded:
				case <-d.done:
				case <-ctx.Done():
				}
			}
		})
}

// txnDriver is the driver of partition p of __transaction_state, nil if
// this broker does not lead it.
func (b *Broker) txnDriver(p int32) *txnDriver {
	b.txns.mu.Lock()
	defer b.txns.mu.Unlock()
	return b.txns.drivers[p]
}

// txnDriverFor is the loaded driver of a transactional id's partition, or
// the error code a request for it is answered: NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS.
func (b *Broker) txnDriverFor(transactionalID string) (*txnDriver, int16) {
	d := b.txnDriver(group.PartitionFor(transactionalID, b.txnPartitions()))
	switch {
	case d == nil:
		return nil, kerr.NotCoordinator.Code
	case !d.isLoaded():
		select {
		case <-d.done:
			return nil, kerr.NotCoordinator.Code
		default:
			return nil, kerr.CoordinatorLoadInProgress.Code
		}
	}
	return d, 0
}

// moveTxns starts (lead) or stops the driver of a partition of
// __transaction_state. Under controlState.mu and Broker.admin.
func (b *Broker) moveTxns(partition int32, lead bool, leaderEpoch int32) {
	b.txns.mu.Lock()
	defer b.txns.mu.Unlock()
	old := b.txns.drivers[partition]
	if old != nil {
		if lead && old.epoch == leaderEpoch {
			return
		}
		old.stopDriver()
		delete(b.txns.drivers, partition)
	}
	if !lead || b.txns.closed {
		return
	}
	if b.txns.drivers == nil {
		b.txns.drivers = map[int32]*txnDriver{}
	}
	d := newTxnDriver(b, partition, leaderEpoch)
	b.txns.drivers[partition] = d
	go d.run()
}

// closeTxns stops every driver: waiting requests are answered
// NOT_COORDINATOR.
func (b *Broker) closeTxns() {
	b.txns.mu.Lock()
	b.txns.closed = true
	ds := b.txns.drivers
	b.txns.drivers = nil
	send, verifySend := b.txns.send, b.txns.verifySend
	b.txns.send, b.txns.verifySend = nil, nil
	b.txns.mu.Unlock()
	for _, d := range ds {
		d.stopDriver()
	}
	for _, d := range ds {
		<-d.done
	}
	if send != nil {
		send.Close()
	}
	if verifySend != nil {
		verifySend.Close()
	}
}

// markerSender is the connection pool markers to other brokers go
// through.
func (b *Broker) markerSender() interbroker.Sender {
	b.txns.mu.Lock()
	defer b.txns.mu.Unlock()
	if b.txns.send == nil && b.cluster != nil && !b.txns.closed {
		b.txns.send = b.openInterBroker(b.cluster.zk, interbroker.Options{RequestTimeout: txnMarkerTimeout,
			ClientID: "broker-" + strconv.Itoa(int(b.cfg.ID)) + "-txn-markers"})
	}
	return b.txns.send
}

// txnDriver runs the transaction coordinator of one partition of
// __transaction_state under one leader epoch.
type txnDriver struct {
	b         *Broker
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

func newTxnDriver(b *Broker, partition, epoch int32) *txnDriver {
	return &txnDriver{b: b, partition: partition, epoch: epoch,
		in: make(chan func(*txnLoop)), results: make(chan txn.Event, 64),
		stop: make(chan struct{}), loaded: make(chan struct{}), done: make(chan struct{})}
}

func (d *txnDriver) isLoaded() bool {
	select {
	case <-d.loaded:
		return true
	default:
		return false
	}
}

// stopDriver stops the loop; no append of it lands after it returns.
func (d *txnDriver) stopDriver() {
	d.stopOnce.Do(func() {
		d.mu.Lock()
		d.mu.stopped = true
		d.mu.Unlock()
		close(d.stop)
	})
}

// report hands a result to the loop, unless it has stopped.
func (d *txnDriver) report(ev txn.Event) {
	select {
	case d.results <- ev:
	case <-d.done:
	}
}

// reportLater reports a failure after the retry backoff.
func (d *txnDriver) reportLater(ev txn.Event) {
	time.AfterFunc(txnRetryBackoff, func() { d.report(ev) })
}

// errTxnDriverStopped answers requests of a driver that stopped.
var errTxnDriverStopped = errors.New("broker: the transaction coordinator moved")

// call steps the event ev makes (given its request id) and waits for its
// answer. A driver that stops first answers NOT_COORDINATOR.
func (d *txnDriver) call(ctx context.Context, ev func(req uint64) txn.Event) txn.Answer {
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

// inspect runs fn on the loop's goroutine (reading the core's state) and
// waits for it; false if the driver stopped.
func (d *txnDriver) inspect(ctx context.Context, fn func(c *txn.Coordinator)) bool {
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
	d       *txnDriver
	c       *txn.Coordinator
	waiting map[uint64]chan<- txn.Answer
	nextReq uint64
}

func (d *txnDriver) run() {
	defer close(d.done)
	b := d.b
	tc := b.cfg.Txns.WithDefaults()
	opts := txn.Options{
		MaxTimeoutMs:      int32(min(tc.MaxTimeout.Milliseconds(), 1<<31-1)),
		ExpirationMs:      tc.IDExpiration.Milliseconds(),
		OffsetsPartitions: b.existingGroups().Partitions(),
		NewProducerID:     b.txnProducerID,
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
			b.log.Error("loading transactions", "topic", txnStateTopic, "partition", d.partition, "err", err)
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
	b.log.Log(context.Background(), level, "loaded transactions", "topic", txnStateTopic, "partition", d.partition,
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

func (d *txnDriver) stopped() bool {
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
func (d *txnDriver) write(ws []txn.Write) {
	fail := func(code int16) {
		for _, w := range ws {
			d.reportLater(txn.WriteResult{ID: w.ID, Code: code})
		}
	}
	p, code := d.b.leaderPartition(txnStateTopic, d.partition)
	if p == nil {
		fail(code)
		return
	}
	if err := p.CheckAcksAll(); err != nil {
		fail(errorCode(err))
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
	res, err := p.AppendAsLeader(bb.Build(), host.AppendHow{AcksAll: true})
	d.mu.Unlock()
	if err != nil {
		code, _ := produceError(d.b, p, err)
		fail(code)
		return
	}
	p.Notify()
	go func() {
		err := p.Log.AwaitFlushPolicy(res)
		if err == nil {
			err = p.AwaitReplicated(res.LastOffset+1, txnWriteTimeout, d.b.closing)
		}
		for _, w := range ws {
			if err != nil {
				d.reportLater(txn.WriteResult{ID: w.ID, Code: errorCode(err)})
			} else {
				d.report(txn.WriteResult{ID: w.ID})
			}
		}
	}()
}

// load reads the partition to its log end into c, as Kafka's
// TransactionStateManager loads it: a record that does not parse is
// skipped with a warning naming its offset.
func (d *txnDriver) load(c *txn.Coordinator) (int, error) {
	p, code := d.b.leaderPartition(txnStateTopic, d.partition)
	if p == nil {
		return 0, fmt.Errorf("broker: %s-%d: %w", txnStateTopic, d.partition, kerr.ErrorForCode(code))
	}
	n := 0
	err := readLog(p, func(r engine.Record) error {
		if d.stopped() {
			return errTxnDriverStopped
		}
		n++
		if err := c.Load(r.Key, r.Value); err != nil {
			d.b.log.Warn("skipping a record of "+txnStateTopic, "partition", d.partition, "offset", r.Offset, "err", err)
		}
		return nil
	})
	return n, err
}

// readLog calls fn for every record of a partition's data batches up to
// its log end, with its key and value copied.
func readLog(p *host.Partition, fn func(engine.Record) error) error {
	it := engine.NewRecordIterator(nil)
	return forEachChunk(p, func(buf []byte, off int64) error {
		*it = *engine.NewRecordIterator(buf)
		for it.Next() {
			r := it.Record()
			rec := engine.Record{Offset: r.Offset, Timestamp: r.Timestamp, Key: bytes.Clone(r.Key)}
			if r.Value != nil {
				rec.Value = bytes.Clone(r.Value)
			}
			if err := fn(rec); err != nil {
				return err
			}
		}
		if err := it.Err(); err != nil {
			return fmt.Errorf("broker: read %s-%d at %d: %w", p.Topic, p.Index, off, err)
		}
		return nil
	})
}

// forEachChunk reads a partition from its log start to its log end (not
// the high watermark: see offsetsStore.Read) in chunks of whole batches of
// up to 1 MiB, each copied into a buffer the next reuses, and calls fn
// with each chunk and the offset it starts at.
func forEachChunk(p *host.Partition, fn func(buf []byte, off int64) error) error {
	end := p.Log.EndOffset()
	var buf []byte
	for off := p.Log.StartOffset(); off < end; {
		v, err := p.Log.Read(off, 1<<20, end)
		if err != nil {
			return fmt.Errorf("broker: read %s-%d at %d: %w", p.Topic, p.Index, off, err)
		}
		if v.Len() == 0 {
			v.Release()
			return nil
		}
		buf, err = v.AppendTo(buf[:0])
		v.Release()
		if err != nil {
			return fmt.Errorf("broker: read %s-%d at %d: %w", p.Topic, p.Index, off, err)
		}
		if err := fn(buf, off); err != nil {
			return err
		}
		next := off
		for pos := 0; pos < len(buf); {
			h, err := engine.ParseBatchHeader(buf[pos:])
			if err != nil || h.Size() > int64(len(buf)-pos) || h.LastOffset() < next {
				return fmt.Errorf("broker: read %s-%d at %d: %w (%v)", p.Topic, p.Index, next, engine.ErrCorrupt, err)
			}
			next = h.LastOffset() + 1
			pos += int(h.Size())
		}
		off = next
	}
	return nil
}

// txnProducerID is the core's NewProducerID: an id from this broker's
// blocks (producerids.go), as InitProducerId hands out. While no block can
// be recorded the request is answered COORDINATOR_LOAD_IN_PROGRESS, which
// clients retry; exhausted ids are UNKNOWN_SERVER_ERROR.
func (b *Broker) txnProducerID() (int64, int16) {
	id, err := b.pids.next()
	switch {
	case err == nil:
		return id, 0
	case errors.Is(err, coordinator.ErrProducerIDsExhausted):
		b.log.Error("InitProducerId", "err", err)
		return -1, kerr.UnknownServerError.Code
	default:
		b.log.Error("InitProducerId: allocating producer ids", "err", err)
		return -1, kerr.CoordinatorLoadInProgress.Code
	}
}

// txnCallTimeout bounds a request's wait for its transaction coordinator:
// the write of its record (txnWriteTimeout) and a little more.
const txnCallTimeout = txnWriteTimeout + 5*time.Second

// txnCall routes a request of a transactional id to its coordinator and
// waits for the answer; a coordinator that is not here, or not loaded, is
// answered with its code.
func (b *Broker) txnCall(transactionalID string, ev func(req uint64) txn.Event) txn.Answer {
	d, code := b.txnDriverFor(transactionalID)
	if d == nil {
		return txn.Answer{Code: code, ProducerID: -1, Epoch: -1}
	}
	ctx, cancel := b.closingContext(txnCallTimeout)
	defer cancel()
	return d.call(ctx, ev)
}
