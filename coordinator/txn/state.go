package txn

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/sluice-io/sluice/engine"
)

// State is a transaction's state, numbered as Kafka's TransactionState
// (the byte written in __transaction_state's value).
type State int8

// The states, with Kafka's ids. These values are part of the log format
// and must not change.
const (
	Empty             State = 0 // no transaction; the producer id is in use
	Ongoing           State = 1 // partitions added, not ended
	PrepareCommit     State = 2 // commit decided; markers being written
	PrepareAbort      State = 3 // abort decided; markers being written
	CompleteCommit    State = 4 // commit markers written everywhere
	CompleteAbort     State = 5 // abort markers written everywhere
	Dead              State = 6 // expired; its tombstone is being written
	PrepareEpochFence State = 7 // in memory only: an epoch bump aborting Ongoing
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort",
	"CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// validPrevious is Kafka's TransactionState.validPreviousStates: the
// states a transaction may move to each state from.
var validPrevious = [...][]State{
	Empty:             {Empty, CompleteCommit, CompleteAbort},
	Ongoing:           {Ongoing, Empty, CompleteCommit, CompleteAbort},
	PrepareCommit:     {Ongoing},
	PrepareAbort:      {Ongoing, PrepareEpochFence},
	CompleteCommit:    {PrepareCommit},
	CompleteAbort:     {PrepareAbort},
	Dead:              {Empty, CompleteCommit, CompleteAbort},
	PrepareEpochFence: {Ongoing},
}

// CanMove reports whether Kafka allows a transaction in from to move to to.
func CanMove(from, to State) bool {
	return to >= 0 && int(to) < len(validPrevious) && slices.Contains(validPrevious[to], from)
}

// Metadata is the coordinator's view of one transactional id (Kafka's
// TransactionMetadata), as of its last written record.
type Metadata struct {
	TransactionalID string
	ProducerID      int64
	Epoch           int16 // -1 before the first InitProducerId is written
	// LastProducerID and LastEpoch are the id and epoch before the last
	// bump, in memory only (KIP-360: a retried InitProducerId that carries
	// them gets the bump it missed instead of PRODUCER_FENCED).
	LastProducerID int64
	LastEpoch      int16
	TimeoutMs      int32
	State          State
	// Partitions in the transaction, sorted by topic then partition; empty
	// unless Ongoing or Prepare*.
	Partitions []engine.Partition
	StartMs    int64 // when the transaction began; -1 if none
	UpdateMs   int64 // last transition
}

// transit is a transition decided and waiting for its record to be
// written (Kafka's TxnTransitMetadata, and pendingState while in flight).
type transit struct {
	to         State
	producerID int64
	epoch      int16
	lastID     int64
	lastEpoch  int16
	timeoutMs  int32
	partitions []engine.Partition
	startMs    int64
	updateMs   int64
}

// txnState is a transactional id's entry: the written metadata, the
// transition in flight, and, in a Prepare state, the partitions whose
// markers are not yet written.
type txnState struct {
	meta    Metadata
	pending *transit // at most one transition in flight (Kafka's pendingState)
	// fenceFailed is Kafka's hasFailedEpochFence: a fencing abort whose
	// record failed leaves the epoch bumped in memory, and the next fence
	// reuses it rather than bumping again.
	fenceFailed bool
	markersLeft map[engine.Partition]bool
}

// transit returns a transition to to that keeps everything else of m.
func (m *Metadata) transit(to State, now int64) *transit {
	return &transit{to: to, producerID: m.ProducerID, epoch: m.Epoch, lastID: m.LastProducerID,
		lastEpoch: m.LastEpoch, timeoutMs: m.TimeoutMs, partitions: m.Partitions,
		startMs: m.StartMs, updateMs: now}
}

// apply makes a written transition the metadata. It panics on a move
// Kafka forbids: that is a broken invariant of the core.
func (s *txnState) apply(t *transit) {
	if !CanMove(s.meta.State, t.to) {
		panic("txn: illegal transition " + s.meta.State.String() + " -> " + t.to.String() + " of " + s.meta.TransactionalID)
	}
	s.meta.State, s.meta.ProducerID, s.meta.Epoch = t.to, t.producerID, t.epoch
	s.meta.LastProducerID, s.meta.LastEpoch = t.lastID, t.lastEpoch
	s.meta.TimeoutMs, s.meta.Partitions = t.timeoutMs, t.partitions
	s.meta.StartMs, s.meta.UpdateMs = t.startMs, t.updateMs
	s.fenceFailed = false
}

func comparePartitions(a, b engine.Partition) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// union returns the sorted union of have (sorted) and add, a new slice.
func union(have, add []engine.Partition) []engine.Partition {
	out := slices.Clone(have)
	for _, p := range add {
		if i, found := slices.BinarySearchFunc(out, p, comparePartitions); !found {
			out = slices.Insert(out, i, p)
		}
	}
	return out
}

// epochExhausted is Kafka's TransactionMetadata.isEpochExhausted: the
// last epoch a bump may reach leaves room for one fencing bump.
func epochExhausted(epoch int16) bool { return epoch >= 32767-1 }
