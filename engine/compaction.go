package engine

// Compaction settings: a log's cleanup policy and compaction keys (Options.
// Compaction) and a Store's cleaner settings (StoreOptions.Cleaner), with
// Kafka's names and defaults (TopicConfig, CleanerConfig in Kafka 3.9).
// cleaner.go describes what the cleaner does with them.

import (
	"fmt"
	"time"
)

// CleanupPolicy is a log's cleanup.policy.
type CleanupPolicy uint8

const (
	// PolicyDelete removes whole segments by age and size (retention.ms,
	// retention.bytes). Kafka's default, and the zero value.
	PolicyDelete CleanupPolicy = iota
	// PolicyCompact keeps the latest record of every key, forever; retention
	// by age and size does not apply.
	PolicyCompact
	// PolicyCompactDelete ("compact,delete") compacts and also applies
	// retention by age and size.
	PolicyCompactDelete
)

func (p CleanupPolicy) String() string {
	switch p {
	case PolicyDelete:
		return "delete"
	case PolicyCompact:
		return "compact"
	case PolicyCompactDelete:
		return "compact,delete"
	}
	return fmt.Sprintf("CleanupPolicy(%d)", uint8(p))
}

// compacts reports whether the cleaner compacts logs of this policy.
func (p CleanupPolicy) compacts() bool { return p == PolicyCompact || p == PolicyCompactDelete }

// deletes reports whether retention by age and size applies.
func (p CleanupPolicy) deletes() bool { return p != PolicyCompact }

// Kafka's defaults for the compaction keys.
const (
	DefaultMinCleanableDirtyRatio = 0.5            // min.cleanable.dirty.ratio
	DefaultDeleteRetention        = 24 * time.Hour // delete.retention.ms
)

// CompactionOptions are a log's cleanup policy and compaction keys. The zero
// value is Kafka's defaults with cleanup.policy=delete (no compaction).
type CompactionOptions struct {
	// Policy is cleanup.policy. Default PolicyDelete.
	Policy CleanupPolicy

	// MinCleanableDirtyRatio is min.cleanable.dirty.ratio: a log is cleaned
	// once its dirty bytes exceed this share of its cleanable bytes (or its
	// dirty data is older than MaxCompactionLag). Default 0.5; a value
	// outside (0, 1] means the default.
	MinCleanableDirtyRatio float64

	// MinCompactionLag is min.compaction.lag.ms: a segment whose newest
	// record is younger than this is not cleaned yet. Default 0.
	MinCompactionLag time.Duration

	// MaxCompactionLag is max.compaction.lag.ms: dirty data whose first
	// batch is older than this makes the log cleanable whatever its dirty
	// ratio. Default 0: no bound (Kafka's Long.MAX_VALUE).
	MaxCompactionLag time.Duration

	// DeleteRetention is delete.retention.ms: how long a tombstone (a record
	// with a null value) stays after the cleaner first meets it, so
	// consumers reading the log see the delete. Default 1 day; negative
	// means 0.
	DeleteRetention time.Duration
}

func (o CompactionOptions) withDefaults() CompactionOptions {
	if !(o.MinCleanableDirtyRatio > 0 && o.MinCleanableDirtyRatio <= 1) {
		o.MinCleanableDirtyRatio = DefaultMinCleanableDirtyRatio
	}
	if o.MinCompactionLag < 0 {
		o.MinCompactionLag = 0
	}
	if o.MaxCompactionLag < 0 {
		o.MaxCompactionLag = 0
	}
	if o.DeleteRetention == 0 {
		o.DeleteRetention = DefaultDeleteRetention
	}
	// A negative DeleteRetention stays negative (the cleaner reads it as
	// 0): defaults applied twice, at open and by SetOptions, must not turn
	// it into the default.
	return o
}

// Kafka's defaults for the cleaner (log.cleaner.*).
const (
	DefaultCleanerThreads           = 1         // log.cleaner.threads
	DefaultCleanerDedupeBufferBytes = 128 << 20 // log.cleaner.dedupe.buffer.size, all threads together
	DefaultCleanerIOBufferBytes     = 512 << 10 // log.cleaner.io.buffer.size, all threads together
	DefaultCleanerLoadFactor        = 0.9       // log.cleaner.io.buffer.load.factor
	DefaultCleanerBackoff           = 15 * time.Second
)

// CleanerOptions configure a Store's log cleaner. The zero value is Kafka's
// defaults.
type CleanerOptions struct {
	// Disabled turns the background cleaner off (log.cleaner.enable=false):
	// compacted logs then grow until Store.Compact is called.
	Disabled bool

	// Threads is how many logs are cleaned at once (log.cleaner.threads).
	// Default 1.
	Threads int

	// DedupeBufferBytes is the memory of the offset maps of all threads
	// together (log.cleaner.dedupe.buffer.size): each thread's map holds
	// DedupeBufferBytes/Threads/24 slots, filled to LoadFactor. A thread
	// allocates its map when it first cleans. Default 128 MiB.
	DedupeBufferBytes int64

	// IOBufferBytes is the read and write buffer memory of all threads
	// together (log.cleaner.io.buffer.size); a buffer grows to hold the
	// largest batch met. Default 512 KiB.
	IOBufferBytes int

	// LoadFactor is how full an offset map may become before a pass stops
	// mapping (log.cleaner.io.buffer.load.factor). Default 0.9.
	LoadFactor float64

	// Backoff is how long an idle cleaner thread waits before looking for a
	// dirty log again (log.cleaner.backoff.ms). Default 15 s.
	Backoff time.Duration
}

func (o CleanerOptions) withDefaults() CleanerOptions {
	if o.Threads <= 0 {
		o.Threads = DefaultCleanerThreads
	}
	if o.DedupeBufferBytes <= 0 {
		o.DedupeBufferBytes = DefaultCleanerDedupeBufferBytes
	}
	if o.IOBufferBytes <= 0 {
		o.IOBufferBytes = DefaultCleanerIOBufferBytes
	}
	if !(o.LoadFactor > 0 && o.LoadFactor <= 1) {
		o.LoadFactor = DefaultCleanerLoadFactor
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultCleanerBackoff
	}
	return o
}
