package host

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator/group"
	"github.com/sluice-io/sluice/coordinator/txn"
	rhost "github.com/sluice-io/sluice/replication/host"
	"github.com/sluice-io/sluice/wire/interbroker"
)

// StateTopic is Kafka's internal topic of transaction states.
const StateTopic = "__transaction_state"

const (
	// writeTimeout bounds the wait for a __transaction_state record's
	// replication: request.timeout.ms, as Kafka's TransactionStateManager
	// appends.
	writeTimeout = 30 * time.Second
	// retryBackoff delays the report of a failed write or marker.
	retryBackoff = 100 * time.Millisecond
	// markerTimeout bounds one WriteTxnMarkers request.
	markerTimeout = 30 * time.Second
	// CallTimeout bounds a request's wait for its coordinator: the write
	// of its record and a little more.
	CallTimeout = writeTimeout + 5*time.Second
)

// Options are a broker's collaborators for its transaction coordinators.
type Options struct {
	Self   int32
	Config config.TxnConfig // WithDefaults is applied by New
	Logger *slog.Logger
	// Closing is closed as the broker shuts down: waits end.
	Closing <-chan struct{}
	// Leader is this broker's replica of a partition if it leads it,
	// else nil and the code a request for it is answered
	// (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION).
	Leader func(topic string, partition int32) (*rhost.Partition, int16)
	// Metadata is the broker's metadata cache as of now.
	Metadata func() Metadata
	// WriteMarkers writes markers at this broker's own partitions
	// (WriteTxnMarkers served by a call).
	WriteMarkers func(ctx context.Context, req *kmsg.WriteTxnMarkersRequest) *kmsg.WriteTxnMarkersResponse
	// Dial opens connections to other brokers; nil on the single node.
	Dial func(interbroker.Options) interbroker.Sender
	// NewProducerID hands out a producer id, or the code InitProducerId
	// is answered.
	NewProducerID func() (int64, int16)
	// OffsetsPartitions is the partition count of __consumer_offsets,
	// which a transaction's offsets are written to.
	OffsetsPartitions func() int32
	// StatePartitions is the partition count of __transaction_state.
	StatePartitions func() int32
}

// Metadata is what the markers need of the metadata cache.
type Metadata interface {
	// Leader is the live leader of a partition (-1 if it has none, or it
	// is not live); known is false if the cache does not have the
	// partition.
	Leader(topic string, partition int32) (leader int32, known bool)
	// TopicDeleted reports that the cache has the cluster's topics and
	// not this one.
	TopicDeleted(topic string) bool
}

// Coordinators holds the drivers of the partitions of __transaction_state
// this broker leads.
type Coordinators struct {
	opts Options
	// holdMarkers, when set (the seam for a coordinator that dies
	// between its decision and its markers), makes every WriteTxnMarkers
	// fail unsent, to be retried.
	holdMarkers atomic.Bool

	mu struct {
		sync.Mutex
		drivers map[int32]*Driver
		closed  bool
		// send carries markers to other brokers, made on first use.
		send interbroker.Sender
	}
}

// New returns the coordinators of a broker; none runs until Move.
func New(opts Options) *Coordinators {
	opts.Config = opts.Config.WithDefaults()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Coordinators{opts: opts}
}

// HoldMarkers holds (or releases) every marker: they fail unsent and are
// retried. A fault seam for tests.
func (cs *Coordinators) HoldMarkers(hold bool) { cs.holdMarkers.Store(hold) }

// Driver is the driver of partition p of __transaction_state, nil if this
// broker does not lead it.
func (cs *Coordinators) Driver(p int32) *Driver {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.mu.drivers[p]
}

// Drivers are the drivers of every partition this broker leads.
func (cs *Coordinators) Drivers() []*Driver {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	ds := make([]*Driver, 0, len(cs.mu.drivers))
	for _, d := range cs.mu.drivers {
		ds = append(ds, d)
	}
	return ds
}

// DriverFor is the loaded driver of a transactional id's partition, or the
// code a request for it is answered: NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS.
func (cs *Coordinators) DriverFor(transactionalID string) (*Driver, int16) {
	d := cs.Driver(group.PartitionFor(transactionalID, cs.opts.StatePartitions()))
	switch {
	case d == nil:
		return nil, kerr.NotCoordinator.Code
	case !d.Loaded():
		select {
		case <-d.done:
			return nil, kerr.NotCoordinator.Code
		default:
			return nil, kerr.CoordinatorLoadInProgress.Code
		}
	}
	return d, 0
}

// Call routes a request of a transactional id to its coordinator and waits
// for the answer (at most CallTimeout); a coordinator that is not here, or
// not loaded, is answered with its code.
func (cs *Coordinators) Call(transactionalID string, ev func(req uint64) txn.Event) txn.Answer {
	d, code := cs.DriverFor(transactionalID)
	if d == nil {
		return txn.Answer{Code: code, ProducerID: -1, Epoch: -1}
	}
	ctx, cancel := cs.closingContext(CallTimeout)
	defer cancel()
	return d.Call(ctx, ev)
}

// closingContext is a context that ends after d or when the broker
// closes (as replication/host's Manager and the broker make theirs).
func (cs *Coordinators) closingContext(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	go func() {
		select {
		case <-cs.opts.Closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// Move starts (lead) or stops the driver of a partition of
// __transaction_state; its coordinator epoch is the partition's leader
// epoch.
func (cs *Coordinators) Move(partition int32, lead bool, leaderEpoch int32) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	old := cs.mu.drivers[partition]
	if old != nil {
		if lead && old.epoch == leaderEpoch {
			return
		}
		old.stopDriver()
		delete(cs.mu.drivers, partition)
	}
	if !lead || cs.mu.closed {
		return
	}
	if cs.mu.drivers == nil {
		cs.mu.drivers = map[int32]*Driver{}
	}
	d := newDriver(cs, partition, leaderEpoch)
	cs.mu.drivers[partition] = d
	go d.run()
}

// Close stops every driver (requests waiting on one are answered
// NOT_COORDINATOR) and waits for them.
func (cs *Coordinators) Close() {
	cs.mu.Lock()
	cs.mu.closed = true
	ds := cs.mu.drivers
	cs.mu.drivers = nil
	send := cs.mu.send
	cs.mu.send = nil
	cs.mu.Unlock()
	for _, d := range ds {
		d.stopDriver()
	}
	for _, d := range ds {
		<-d.done
	}
	if send != nil {
		send.Close()
	}
}

// markerSender is the connection pool markers to other brokers go
// through, nil on the single node or once closed.
func (cs *Coordinators) markerSender() interbroker.Sender {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.mu.send == nil && cs.opts.Dial != nil && !cs.mu.closed {
		cs.mu.send = cs.opts.Dial(interbroker.Options{RequestTimeout: markerTimeout,
			ClientID: "broker-" + strconv.Itoa(int(cs.opts.Self)) + "-txn-markers"})
	}
	return cs.mu.send
}
