package txn

import (
	"maps"
	"slices"

	"github.com/sluice-io/sluice/engine"
)

// Options configure a Coordinator. The zero value means Kafka's defaults.
type Options struct {
	// MaxTimeoutMs is transaction.max.timeout.ms, the largest
	// transaction timeout InitProducerId accepts. Default 900000 (15 min).
	MaxTimeoutMs int32
	// ExpirationMs is transactional.id.expiration.ms: an id idle this long
	// (no transaction in progress) expires at the next ExpireIDs. Default
	// 604800000 (7 days).
	ExpirationMs int64
	// OffsetsPartitions is offsets.topic.num.partitions, to find the
	// __consumer_offsets partition AddOffsetsToTxn adds. Default 50.
	OffsetsPartitions int32
	// ValueVersion is the version of the values written, 0 or 1. Default
	// 1 (as Kafka 3.5+).
	ValueVersion int16
	// NewProducerID hands out a producer id never used before (the
	// driver's block of ids from coordinator.AllocateProducerIDs). It must
	// not block. A nonzero code (e.g. COORDINATOR_LOAD_IN_PROGRESS while
	// the driver fetches a block) answers the InitProducerId with it.
	// Required.
	NewProducerID func() (id int64, code int16)
}

func (o Options) withDefaults() Options {
	if o.MaxTimeoutMs == 0 {
		o.MaxTimeoutMs = 900000
	}
	if o.ExpirationMs == 0 {
		o.ExpirationMs = 604800000
	}
	if o.OffsetsPartitions == 0 {
		o.OffsetsPartitions = 50
	}
	if o.ValueVersion == 0 {
		o.ValueVersion = 1
	}
	return o
}

// ValueVersionClassic asks Options for version 0 values (0 means default).
const ValueVersionClassic int16 = -1

// Event is an input of Step.
type Event interface{ event() }

// Tick sets the coordinator's clock (milliseconds since the epoch); the
// driver steps one before the requests it read at that time. Time that
// goes backwards is ignored.
type Tick struct{ NowMs int64 }

// InitProducerID is a transactional InitProducerId request. ProducerID and
// Epoch are the KIP-360 fields (-1 when absent). Req identifies the
// request in its Answer.
type InitProducerID struct {
	Req             uint64
	Version         int16
	TransactionalID string
	TimeoutMs       int32
	ProducerID      int64
	Epoch           int16
}

// AddPartitions is an AddPartitionsToTxn request of one transaction. The
// broker has already refused unknown topics and unauthorized ones; one
// Answer carries the code for every partition.
type AddPartitions struct {
	Req             uint64
	Version         int16
	TransactionalID string
	ProducerID      int64
	Epoch           int16
	Partitions      []engine.Partition
}

// AddOffsets is an AddOffsetsToTxn request: it adds the group's
// __consumer_offsets partition to the transaction.
type AddOffsets struct {
	Req             uint64
	Version         int16
	TransactionalID string
	ProducerID      int64
	Epoch           int16
	Group           string
}

// EndTxn is an EndTxn request: commit or abort.
type EndTxn struct {
	Req             uint64
	Version         int16
	TransactionalID string
	ProducerID      int64
	Epoch           int16
	Commit          bool
}

// AbortTimedOut is the periodic check (every
// transaction.abort.timed.out.transaction.cleanup.interval.ms) that aborts
// transactions open past their timeout, fencing their producers.
type AbortTimedOut struct{}

// ExpireIDs is the periodic check (every
// transaction.remove.expired.transaction.cleanup.interval.ms) that expires
// idle transactional ids.
type ExpireIDs struct{}

// WriteResult is the outcome of one Write: Code 0 once it is durably in
// __transaction_state (acks=all), else the partition's error code
// (REQUEST_TIMED_OUT for a write whose outcome is unknown).
type WriteResult struct {
	ID   uint64
	Code int16
}

// MarkerResult is the outcome of one Marker: Code 0 once the partition's
// leader wrote it. Gone means the partition no longer exists (its topic
// was deleted); it counts as written, as Kafka drops such partitions.
type MarkerResult struct {
	ID   uint64
	Code int16
	Gone bool
}

// Loaded follows the Load of every record of the partition: transactions
// left in a Prepare state send their markers again (Kafka's
// loadTransactionsForTxnTopicPartition), and requests may be stepped.
type Loaded struct{}

func (Loaded) event()         {}
func (Tick) event()           {}
func (InitProducerID) event() {}
func (AddPartitions) event()  {}
func (AddOffsets) event()     {}
func (EndTxn) event()         {}
func (AbortTimedOut) event()  {}
func (ExpireIDs) event()      {}
func (WriteResult) event()    {}
func (MarkerResult) event()   {}

// Write is a record to append to this coordinator's __transaction_state
// partition (acks=all). Value nil is a tombstone.
type Write struct {
	ID              uint64
	TransactionalID string
	Key, Value      []byte
}

// Marker is a WriteTxnMarkers entry for one partition, to send to its
// leader (the driver batches a broker's markers into one request) and
// retry until a MarkerResult with Code 0 or Gone.
type Marker struct {
	ID               uint64
	Partition        engine.Partition
	ProducerID       int64
	Epoch            int16
	Commit           bool
	CoordinatorEpoch int32
}

// Answer is the response to request Req: Code, and for InitProducerId the
// producer id and epoch (-1 on error).
type Answer struct {
	Req        uint64
	Code       int16
	ProducerID int64
	Epoch      int16
}

// Ready is what the driver must do: append Writes in order, send Markers,
// send Answers. Its slices are the driver's after Ready returns.
type Ready struct {
	Writes  []Write
	Markers []Marker
	Answers []Answer
}

// Empty reports whether there is nothing to do.
func (rd Ready) Empty() bool {
	return len(rd.Writes) == 0 && len(rd.Markers) == 0 && len(rd.Answers) == 0
}

// flightKind is what a written record completes.
type flightKind int8

const (
	flightInit     flightKind = iota // answer the InitProducerId
	flightAdd                        // answer AddPartitions or AddOffsets
	flightPrepare                    // answer EndTxn (if from a client), send markers
	flightComplete                   // nothing to answer; retried until written
	flightDead                       // forget the id
)

// flight is a Write not yet answered by a WriteResult.
type flight struct {
	kind  flightKind
	id    string
	req   *request // nil when no request waits for it
	fence bool     // a fencing abort: its failure sets fenceFailed
	write Write    // kept to be re-sent (flightComplete)
}

// request is a request waiting for an Answer.
type request struct {
	req    uint64
	legacy bool // an old version that knows INVALID_PRODUCER_EPOCH, not PRODUCER_FENCED
	// success is the code answered once its record is written: 0, or
	// CONCURRENT_TRANSACTIONS for an InitProducerId that had to abort an
	// ongoing transaction first.
	success int16
}

// Coordinator is the decision core of one __transaction_state partition,
// led under one coordinator epoch (the partition's leader epoch).
type Coordinator struct {
	opts      Options
	partition int32
	epoch     int32
	nowMs     int64
	txns      map[string]*txnState
	flights   map[uint64]*flight  // by Write id
	markers   map[uint64]Marker   // sent, not yet acknowledged, by Marker id
	markerOf  map[uint64]string   // Marker id -> transactional id
	nextID    uint64              // of Writes and Markers
	rd        Ready               // accumulated since the last Ready
	retry     []uint64            // markers to send again
	unwritten map[uint64]struct{} // writes to re-send
	readied   bool                // Ready taken, Advance not yet called
}

// New returns the coordinator of __transaction_state partition partition,
// under coordinator epoch epoch, with no transactional ids (use Load for
// those read from the partition).
func New(partition, epoch int32, opts Options) *Coordinator {
	opts = opts.withDefaults()
	if opts.ValueVersion == ValueVersionClassic {
		opts.ValueVersion = 0
	}
	if opts.NewProducerID == nil {
		panic("txn: Options.NewProducerID is required")
	}
	return &Coordinator{opts: opts, partition: partition, epoch: epoch,
		txns: map[string]*txnState{}, flights: map[uint64]*flight{},
		markers: map[uint64]Marker{}, markerOf: map[uint64]string{},
		unwritten: map[uint64]struct{}{}}
}

// Step feeds one event. No event may be stepped between Ready and Advance.
func (c *Coordinator) Step(ev Event) {
	if c.readied {
		panic("txn: Step between Ready and Advance")
	}
	switch ev := ev.(type) {
	case Loaded:
		c.loaded()
	case Tick:
		c.nowMs = max(c.nowMs, ev.NowMs)
	case InitProducerID:
		c.initProducerID(ev)
	case AddPartitions:
		c.addPartitions(ev.Req, ev.Version, ev.TransactionalID, ev.ProducerID, ev.Epoch, ev.Partitions)
	case AddOffsets:
		p := engine.Partition{Topic: OffsetsTopic, Partition: groupPartition(ev.Group, c.opts.OffsetsPartitions)}
		c.addPartitions(ev.Req, ev.Version, ev.TransactionalID, ev.ProducerID, ev.Epoch, []engine.Partition{p})
	case EndTxn:
		c.endTxn(ev)
	case AbortTimedOut:
		c.abortTimedOut()
	case ExpireIDs:
		c.expireIDs()
	case WriteResult:
		c.written(ev)
	case MarkerResult:
		c.markerDone(ev)
	default:
		panic("txn: unknown event")
	}
}

// Ready returns what to do since the last Advance.
func (c *Coordinator) Ready() Ready {
	c.readied = true
	rd := c.rd
	for _, id := range c.retry {
		if m, ok := c.markers[id]; ok {
			rd.Markers = append(rd.Markers, m)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.unwritten)) {
		if f, ok := c.flights[id]; ok {
			rd.Writes = append(rd.Writes, f.write)
		}
	}
	return rd
}

// Advance acknowledges rd, the last Ready, as handed to the driver.
func (c *Coordinator) Advance(rd Ready) {
	c.readied = false
	c.rd = Ready{}
	c.retry = c.retry[:0]
	clear(c.unwritten)
}

// Get returns the written metadata of a transactional id.
func (c *Coordinator) Get(transactionalID string) (Metadata, bool) {
	s, ok := c.txns[transactionalID]
	if !ok {
		return Metadata{}, false
	}
	m := s.meta
	m.Partitions = slices.Clone(m.Partitions)
	return m, true
}

// IDs returns the transactional ids known, sorted.
func (c *Coordinator) IDs() []string { return slices.Sorted(maps.Keys(c.txns)) }

// Epoch is the coordinator epoch.
func (c *Coordinator) Epoch() int32 { return c.epoch }

// Partition is the __transaction_state partition coordinated.
func (c *Coordinator) Partition() int32 { return c.partition }
