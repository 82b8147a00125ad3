package engine

import (
	"log/slog"
	"time"
)

// Kafka's defaults for the settings the engine shares with it.
const (
	DefaultSegmentBytes       = 1 << 30              // segment.bytes
	DefaultSegmentAge         = 7 * 24 * time.Hour   // segment.ms
	DefaultSegmentIndexBytes  = 10 << 20             // segment.index.bytes
	DefaultIndexIntervalBytes = 4096                 // index.interval.bytes
	DefaultMaxBatchBytes      = 1024*1024 + 12       // max.message.bytes (1048588)
	DefaultOpenSegments       = 1000                 // segments whose log stays open, per standalone log
	DefaultRetention          = 7 * 24 * time.Hour   // retention.ms
	minSegmentBytes           = 14 + BatchHeaderSize // Kafka's lower bound for segment.bytes is 14
)

// Options configures a Log. The zero value means Kafka's defaults; every
// field documents its default. Options are copied at open; Log.SetOptions
// changes every setting but FS, Now, Logger, OnFlush and OpenSegments while
// the log is open.
type Options struct {
	// SegmentBytes is the size at which the active segment rolls
	// (segment.bytes). Default 1 GiB.
	SegmentBytes int64

	// SegmentAge rolls the active segment once its first batch is this old
	// (segment.ms), checked on append. Default 7 days.
	SegmentAge time.Duration

	// SegmentIndexBytes bounds each index file (segment.index.bytes); a full
	// index rolls the segment. Default 10 MiB.
	SegmentIndexBytes int

	// IndexIntervalBytes is how many log bytes pass between two sparse index
	// entries (index.interval.bytes). Default 4096.
	IndexIntervalBytes int

	// MaxBatchBytes is the largest batch Append accepts (max.message.bytes).
	// Default 1048588.
	MaxBatchBytes int

	// Retention is how long a segment is kept after its newest record
	// (retention.ms): ApplyRetention deletes older segments. Default 7
	// days; negative keeps segments forever.
	Retention time.Duration

	// RetentionBytes bounds the log's size (retention.bytes): ApplyRetention
	// deletes the oldest segments while the rest still exceed it. Zero or
	// negative means no bound (Kafka's default, -1).
	RetentionBytes int64

	// FlushMessages forces records to disk once this many are unsynced
	// (flush.messages): the append that reaches it waits until a group-commit
	// round has synced it. 1 makes every append durable before it returns.
	// Default 0: no forced flush, as Kafka (replication and the OS's
	// writeback carry durability).
	FlushMessages int64

	// FlushInterval syncs the log this often when it has unsynced records
	// (flush.ms), without making appends wait. Default 0: never.
	FlushInterval time.Duration

	// LogAppendTime makes the log stamp every batch with the time it is
	// appended (message.timestamp.type=LogAppendTime): the batch's max
	// timestamp and timestamp-type attribute are rewritten and its CRC
	// recomputed. Default false: the producer's CreateTime is kept.
	LogAppendTime bool

	// Recompression is the codec produced batches are stored in
	// (compression.type and its levels): see recompress.go. Default: each
	// batch in its producer's codec, as it came.
	Recompression Recompression

	// ProducerIDExpiration is how long an idle producer's state is kept
	// (producer.id.expiration.ms), measured from the max timestamp of its
	// last batch; ApplyRetention forgets older ones. Default 1 day.
	ProducerIDExpiration time.Duration

	// TxnVerification refuses a client's transactional batch that opens
	// its producer's transaction in the partition unless it carries the
	// guard of a verification with the transaction coordinator
	// (transaction.partition.verification.enable, KIP-890: txnverify.go).
	// Default false: such batches are written (Kafka's default is true;
	// the broker sets it).
	TxnVerification bool

	// OpenSegments bounds how many segments keep their log's descriptor
	// open (the file cache) when the Log is opened on its own; a Store uses
	// StoreOptions.OpenFiles instead. Default 1000.
	OpenSegments int

	// Compaction is the cleanup policy and the compaction keys
	// (cleanup.policy, min.cleanable.dirty.ratio, ...): see compaction.go.
	// Default: cleanup.policy=delete.
	Compaction CompactionOptions

	// FS is the file system the log lives in. Default OSFS; tests inject
	// errors and crashes through it.
	FS FS

	// Now is the clock used for segment age. Default time.Now.
	Now func() time.Time

	// Logger receives recovery and roll events. Default slog.Default().
	Logger *slog.Logger

	// OnFlush, if set, is called after each flush that synced the log's
	// unsynced appends (a group-commit round, flush.ms's, Flush, Close),
	// with the time its fdatasyncs took, from the goroutine that flushed,
	// with no lock of the log held but its flush lock: it must be quick
	// (the broker's log flush time metric). Not called for a failed flush,
	// nor for a sealed segment's sync at its roll. Default none.
	OnFlush func(took time.Duration)
}

func (o Options) withDefaults() Options {
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.SegmentBytes < minSegmentBytes {
		o.SegmentBytes = minSegmentBytes
	}
	if o.SegmentAge <= 0 {
		o.SegmentAge = DefaultSegmentAge
	}
	if o.SegmentIndexBytes <= 0 {
		o.SegmentIndexBytes = DefaultSegmentIndexBytes
	}
	if o.SegmentIndexBytes < 4*timeIndexEntrySize {
		o.SegmentIndexBytes = 4 * timeIndexEntrySize
	}
	if o.IndexIntervalBytes <= 0 {
		o.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if o.Retention == 0 {
		o.Retention = DefaultRetention
	}
	if o.MaxBatchBytes <= 0 {
		o.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if o.OpenSegments <= 0 {
		o.OpenSegments = DefaultOpenSegments
	}
	if o.ProducerIDExpiration <= 0 {
		o.ProducerIDExpiration = DefaultProducerIDExpiration
	}
	o.Compaction = o.Compaction.withDefaults()
	if o.FS == nil {
		o.FS = OSFS
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}
