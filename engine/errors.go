package engine

import "errors"

// Sentinel errors. Every error the engine returns wraps one of these with %w,
// adding the file, the position or the offset involved, so callers test with
// errors.Is and people read the detail.
var (
	// ErrCorrupt marks bytes on disk or in a batch that fail a structural or
	// CRC check. Wrapped as "<ErrCorrupt>: <what> in <file> at position <n>".
	ErrCorrupt = errors.New("engine: corrupt data")

	// ErrInvalidBatch marks a batch handed to Append that is not a valid
	// Kafka RecordBatch v2 (bad length, magic, count or record framing).
	// Recovery reports the same defects on disk as ErrCorrupt.
	ErrInvalidBatch = errors.New("engine: invalid record batch")

	// ErrOffsetOutOfRange is returned by reads below the log start offset or
	// above the log end offset.
	ErrOffsetOutOfRange = errors.New("engine: offset out of range")

	// ErrBatchTooLarge is returned by Append for a batch larger than
	// Options.MaxBatchBytes (Kafka's max.message.bytes).
	ErrBatchTooLarge = errors.New("engine: record batch too large")

	// ErrClosed is returned by every operation on a closed Log or Store.
	ErrClosed = errors.New("engine: log closed")

	// ErrNonMonotonic is returned when batches that already carry offsets
	// (follower appends, recovery) do not continue the log: their base offset
	// is below the log end offset or their offsets do not increase.
	ErrNonMonotonic = errors.New("engine: offsets do not increase")

	// ErrLogFailed is returned by Append after an earlier write or fsync
	// failed (a failed fallocate wrote nothing and is not sticky). The
	// failure is sticky: the page cache may have lost data, so the log refuses
	// appends until it is closed and reopened (recovery then finds what
	// really reached the disk).
	ErrLogFailed = errors.New("engine: log failed on an earlier write")

	// ErrTopicIDMismatch is returned when a partition directory's
	// partition.metadata names another topic ID than the caller expects.
	ErrTopicIDMismatch = errors.New("engine: topic ID mismatch")

	// ErrLocked is returned when another process holds the directory lock.
	ErrLocked = errors.New("engine: directory locked by another process")

	// ErrStaleLeaderEpoch is returned by Log.BecomeLeader for an epoch below
	// the latest the log has seen (in its epoch cache or stamped): a leader
	// decision older than one already applied, which the broker answers as
	// Kafka answers a LeaderAndIsr of an older leader epoch.
	ErrStaleLeaderEpoch = errors.New("engine: leader epoch older than the log's")
)

// Idempotent-producer errors, returned when a batch is checked against its
// producer's state (producerstate.go). The broker maps them to Kafka's
// error codes.
var (
	// ErrOutOfOrderSequence marks a batch whose first sequence does not
	// follow its producer's last one (OUT_OF_ORDER_SEQUENCE_NUMBER). The
	// error is a *SequenceError carrying the sequence expected.
	ErrOutOfOrderSequence = errors.New("engine: out of order sequence number")

	// ErrInvalidProducerEpoch marks a batch from an epoch older than its
	// producer's latest: a fenced producer (INVALID_PRODUCER_EPOCH).
	ErrInvalidProducerEpoch = errors.New("engine: invalid producer epoch")

	// ErrInvalidTxnState marks a data batch that is not transactional from
	// a producer whose transaction is open in the partition
	// (INVALID_TXN_STATE).
	ErrInvalidTxnState = errors.New("engine: invalid transaction state")

	// ErrCoordinatorFenced marks a transaction marker from a coordinator
	// epoch older than the one of its producer's last marker
	// (TRANSACTION_COORDINATOR_FENCED).
	ErrCoordinatorFenced = errors.New("engine: transaction coordinator fenced")
)
