package group

import (
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Config is the coordinator's configuration, with Kafka's broker keys.
type Config struct {
	Partitions            int32         // offsets.topic.num.partitions; default 50
	InitialRebalanceDelay time.Duration // group.initial.rebalance.delay.ms; default 3 s (0 is allowed: set NoInitialDelay)
	NoInitialDelay        bool          // use an initial rebalance delay of 0
	MinSessionTimeout     time.Duration // group.min.session.timeout.ms; default 6 s
	MaxSessionTimeout     time.Duration // group.max.session.timeout.ms; default 30 min
	MaxGroupSize          int           // group.max.size; default unlimited
	OffsetsRetention      time.Duration // offsets.retention.minutes; default 7 days
	OffsetsRetentionCheck time.Duration // offsets.retention.check.interval.ms; default 10 min
	MaxMetadataBytes      int           // offset.metadata.max.bytes; default 4096

	// Topics reports a topic's partition count; commits for partitions it
	// does not know are refused with UNKNOWN_TOPIC_OR_PARTITION, as Kafka's
	// KafkaApis does before the coordinator sees them. Nil accepts all.
	Topics func(topic string) (partitions int32, ok bool)

	Clock  Clock        // default WallClock
	Logger *slog.Logger // default slog.Default()
}

func (c Config) withDefaults() Config {
	if c.Partitions <= 0 {
		c.Partitions = 50
	}
	if c.InitialRebalanceDelay == 0 && !c.NoInitialDelay {
		c.InitialRebalanceDelay = 3 * time.Second
	}
	if c.NoInitialDelay {
		c.InitialRebalanceDelay = 0
	}
	if c.MinSessionTimeout == 0 {
		c.MinSessionTimeout = 6 * time.Second
	}
	if c.MaxSessionTimeout == 0 {
		c.MaxSessionTimeout = 30 * time.Minute
	}
	if c.MaxGroupSize <= 0 {
		c.MaxGroupSize = math.MaxInt32
	}
	if c.OffsetsRetention == 0 {
		c.OffsetsRetention = 7 * 24 * time.Hour
	}
	if c.OffsetsRetentionCheck == 0 {
		c.OffsetsRetentionCheck = 10 * time.Minute
	}
	if c.MaxMetadataBytes == 0 {
		c.MaxMetadataBytes = 4096
	}
	if c.Clock == nil {
		c.Clock = WallClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Record is one record of __consumer_offsets; a nil Value is a tombstone.
type Record struct {
	Key, Value []byte
	// Set by Store.Read from the record's batch: a transactional batch's
	// producer id (its offsets stay pending until the producer's marker,
	// as Kafka's GroupMetadataManager loads them), and transaction markers,
	// reported as a Record with Marker set, ProducerID the marker's
	// producer and no key or value.
	Transactional bool
	ProducerID    int64
	Marker        Marker
}

// Marker is the type of a transaction marker Store.Read reports.
type Marker int8

const (
	NoMarker     Marker = iota // a data record
	MarkerAbort                // the producer's transaction aborted
	MarkerCommit               // the producer's transaction committed
)

// Store is the coordinator's storage: the partitions of __consumer_offsets,
// provided by the broker.
type Store interface {
	// Append writes records to a partition as one batch and returns once
	// they are committed (acks=all).
	Append(partition int32, records []Record) error
	// VerifyTxn starts the verification (KIP-890) that partition is in
	// the producer's transaction, before AppendTxn writes its offsets
	// there, and waits for the transaction coordinator's answer: the guard
	// AppendTxn writes with (0 when the transaction is already open in the
	// partition or verification is disabled), or the Kafka code of the
	// failure, as the partition leader reads it (INVALID_TXN_STATE when
	// the partition is not in the transaction, NETWORK_EXCEPTION when the
	// coordinator did not answer, NOT_LEADER_OR_FOLLOWER, ...).
	VerifyTxn(partition int32, transactionalID string, producerID int64, producerEpoch int16) (guard uint64, code int16)
	// AppendTxn is Append for offsets committed in a transaction
	// (TxnOffsetCommit): one transactional batch of the producer id and
	// epoch, as Kafka's GroupMetadataManager.storeOffsets builds it, with
	// the guard VerifyTxn gave. An error wrapping ErrInvalidProducerEpoch
	// means the producer is fenced at the partition, one wrapping
	// ErrInvalidTxnState that the verification no longer holds.
	AppendTxn(partition int32, producerID int64, producerEpoch int16, guard uint64, records []Record) error
	// Read calls fn for each record of a partition, in offset order, up to
	// its log end, transaction markers included (Record.Marker).
	Read(partition int32, fn func(Record) error) error
}

// Coordinator is the group coordinator.
type Coordinator struct {
	cfg   Config
	store Store
	log   *slog.Logger

	mu struct {
		sync.Mutex
		// groups holds the groups of owned partitions only: a group is
		// added when its partition's load completes or when a request
		// creates it in an owned partition, and removed on Unload.
		groups map[string]*group
		parts  []partition // indexed by partition of __consumer_offsets
		// loading counts the partitions in the loading state.
		loading int
		closed  bool
		// txnGroups: for each producer id, the groups holding offsets it
		// committed in a transaction not yet ended (Kafka's
		// openGroupsForProducer), so CompleteTxn finds them.
		txnGroups map[int64]map[string]struct{}
	}
	// order numbers offsets in the order they were written to their
	// partition (committed.order), loaded or appended: a transaction's
	// offsets replace a committed offset only if written after it.
	order atomic.Int64
	// loads counts the running load goroutines; Close waits for them.
	loads  sync.WaitGroup
	expiry Timer
	// rebalances counts the rebalances begun (stats.go).
	rebalances atomic.Uint64
}

// New loads the groups and offsets of every partition of store and
// returns the coordinator, which owns every partition: the single node's
// coordinator. Load and Unload are not meant for it.
func New(cfg Config, store Store) (*Coordinator, error) {
	c := newCoordinator(cfg, store)
	all := make([]int32, c.cfg.Partitions)
	for p := range all {
		all[p] = int32(p)
		c.mu.parts[p].state = owned
	}
	groups, err := c.read(all, nil)
	if err != nil {
		return nil, err
	}
	c.mu.groups = groups
	for _, g := range groups {
		g.mu.Lock()
		c.armLoaded(g)
		g.mu.Unlock()
	}
	if len(groups) > 0 {
		c.log.Info("loaded consumer groups", "groups", len(groups))
	}
	c.scheduleOffsetExpiry()
	return c, nil
}

// NewPartitioned returns a coordinator that owns no partition yet: the
// broker hands it partitions with Load as it becomes their leader, and
// takes them back with Unload (cluster mode).
func NewPartitioned(cfg Config, store Store) *Coordinator {
	c := newCoordinator(cfg, store)
	c.scheduleOffsetExpiry()
	return c
}

func newCoordinator(cfg Config, store Store) *Coordinator {
	cfg = cfg.withDefaults()
	c := &Coordinator{cfg: cfg, store: store, log: cfg.Logger}
	c.mu.groups = map[string]*group{}
	c.mu.parts = make([]partition, cfg.Partitions)
	c.mu.txnGroups = map[int64]map[string]struct{}{}
	return c
}

// PartitionFor is the __consumer_offsets partition of a group, as Kafka
// computes it: abs(String.hashCode(group)) % partitions, the hash over the
// string's UTF-16 code units.
func PartitionFor(groupID string, partitions int32) int32 {
	var h int32
	for _, u := range utf16Units(groupID) {
		h = 31*h + int32(u)
	}
	return (h & math.MaxInt32) % partitions
}

func utf16Units(s string) []uint16 {
	out := make([]uint16, 0, len(s))
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			out = append(out, uint16(0xd800+(r>>10)), uint16(0xdc00+(r&0x3ff)))
		} else {
			out = append(out, uint16(r))
		}
	}
	return out
}

func (c *Coordinator) partitionFor(groupID string) int32 {
	return PartitionFor(groupID, c.cfg.Partitions)
}

func (c *Coordinator) now() time.Time { return c.cfg.Clock.Now() }

// getGroup returns a group, nil if unknown; with create, an unknown group
// is created Empty. A group whose partition is not owned, or is loading,
// is nil with the code to answer (Kafka's validateGroupStatus:
// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS).
func (c *Coordinator) getGroup(id string, create bool) (*group, int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return nil, 0
	}
	p := c.partitionFor(id)
	if code := c.mu.parts[p].code(); code != 0 {
		return nil, code
	}
	g := c.mu.groups[id]
	if g == nil && create {
		g = newGroup(id, p, c.now())
		c.mu.groups[id] = g
	}
	return g, 0
}

// groups lists the groups, sorted by id.
func (c *Coordinator) groups() []*group {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*group, 0, len(c.mu.groups))
	for _, g := range c.mu.groups {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b *group) int {
		if a.id < b.id {
			return -1
		}
		return 1
	})
	return out
}

// forget removes a dead group from the map.
func (c *Coordinator) forget(g *group) {
	c.mu.Lock()
	if c.mu.groups[g.id] == g {
		delete(c.mu.groups, g.id)
	}
	c.mu.Unlock()
}

// Close stops every timer and answers parked requests with
// NOT_COORDINATOR, as Kafka does when it unloads a group. Running loads
// are cancelled (WaitLoaded returns ErrClosed) and Close waits until they
// have stopped, which they do at their next record.
func (c *Coordinator) Close() {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return
	}
	c.mu.closed = true
	if c.expiry != nil {
		c.expiry.Stop()
	}
	for p := range c.mu.parts {
		if c.mu.parts[p].state == loading {
			c.endLoadLocked(int32(p), notOwned, ErrClosed)
		}
	}
	c.mu.Unlock()
	for _, g := range c.groups() {
		g.mu.Lock()
		g.stop()
		g.mu.Unlock()
	}
	c.loads.Wait()
}

// Partitions is the partition count of __consumer_offsets groups are
// mapped over (Config.Partitions).
func (c *Coordinator) Partitions() int32 { return c.cfg.Partitions }
