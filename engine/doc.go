// Package engine is sluice's storage engine: a segmented, offset-addressed
// commit log of Kafka record batches. It knows nothing of networks and
// imports nothing of the rest of sluice, so any log-structured system can
// embed it.
//
// # Model
//
// A Log is one partition: an ordered sequence of record batches, each
// record with a unique, increasing 64-bit offset. Append assigns offsets;
// Read returns a View of whole batches from one segment, which writes itself
// to a socket with sendfile(2) (io.WriterTo) or hands bytes to in-process
// readers. A Store is a data directory of logs. BatchBuilder and
// RecordIterator let users who do not speak Kafka's format write and read
// records (key, value, headers, timestamp).
//
// # Files
//
// A log directory holds segments, each three files named by the segment's
// base offset, 20 digits zero-padded:
//
//	00000000000000368769.log        batches, back to back
//	00000000000000368769.index      sparse offset index
//	00000000000000368769.timeindex  sparse time index
//	00000000000000368769.txnindex   aborted transactions (only a segment with an abort marker)
//
// .log holds Kafka RecordBatch v2 bytes exactly as a producer sent them,
// with the base offset and leader epoch written into the header (both
// outside the CRC); a log with Options.Recompression (Kafka's
// compression.type) stores a batch in another codec rebuilt in its own
// (recompress.go). Layout of a batch and its records:
//
//	offset  size  field
//	     0     8  baseOffset           int64
//	     8     4  batchLength          int32  bytes after this field
//	    12     4  partitionLeaderEpoch int32
//	    16     1  magic                int8   2
//	    17     4  crc                  uint32 CRC-32C of bytes [21, end)
//	    21     2  attributes           int16  0-2 codec, 3 LogAppendTime, 4 transactional, 5 control
//	    23     4  lastOffsetDelta      int32
//	    27     8  baseTimestamp        int64
//	    35     8  maxTimestamp         int64
//	    43     8  producerId           int64
//	    51     2  producerEpoch        int16
//	    53     4  baseSequence         int32
//	    57     4  recordCount          int32
//	    61     …  records: length, attributes, timestampDelta, offsetDelta,
//	              key, value, headers (zig-zag varints and byte strings)
//
// Control batches (attribute bit 5) are transaction markers (control.go),
// appended by a partition leader as the coordinator's appends
// (AppendCoordinatorNoWait: fenced by producer and coordinator epochs);
// a .txnindex holds an entry of 34 bytes for each abort marker in its
// segment (txnindex.go), and the producer state tracks open transactions,
// whose oldest bounds the last stable offset (producerstate.go, state.go),
// and the verifications that let a client's batch open one
// (txnverify.go, Options.TxnVerification).
//
// .index entries are 8 bytes: relative offset (uint32) and file position
// (uint32), big-endian; .timeindex entries are 12 bytes: timestamp in ms
// (int64) and relative offset (uint32). One entry of each is written per
// IndexIntervalBytes of log. index.go has the diagrams and the meaning of
// an entry.
//
// Beside the segments: a standalone log (OpenLog) or a Store's data
// directory holds .lock, .clean-shutdown (present only after a clean Close),
// recovery-point-offset-checkpoint (checkpoint.go) and
// cleaner-offset-checkpoint (the compacted logs' clean points,
// cleanermanager.go); a Store's data directory also holds
// replication-offset-checkpoint (the logs' high watermarks, Kafka's format,
// hwcheckpoint.go); a Store's partition directories hold
// partition.metadata with the topic ID (store.go). While the cleaner swaps
// a compacted segment in, its files pass through <name>.cleaned and
// <name>.swap (swap.go).
//
// # Compaction
//
// A log whose cleanup policy is compact (or compact,delete) is compacted
// by the Store's cleaner threads, as Kafka's log cleaner does
// (compaction.go, cleaner.go, cleanfilter.go, cleantxn.go, offsetmap.go,
// swap.go, cleanermanager.go): the dirtiest log is picked, the keys of its dirty
// section are mapped to their latest offsets in a fixed-size offset map,
// and the segments from the log start to the end of the mapped range are
// rewritten, grouped up to segment.bytes, keeping each key's latest record
// and tombstones until their delete horizon (KIP-534: stamped in the batch
// when the cleaner first keeps them). Transactions (cleantxn.go): the
// cleanable range ends before the segment of the first unstable offset,
// aborted records are dropped and never mapped, and a marker goes, after
// its delete horizon, once its transaction has no batch left; a cleaned
// segment's .txnindex keeps only the aborts that still have records.
// Offsets, producer ids, epochs and sequence ranges are preserved; the
// producer's last batch stays, empty if need be. Compacted logs have gaps between and inside batches, which reads,
// recovery and timestamp lookups step over. Cleaned segments are swapped in
// through .cleaned -> .swap -> live renames that a crash at any point
// either undoes or completes at the next open.
//
// # Space, durability and recovery
//
// The active segment's .log is reserved ahead of the write point with
// fallocate in adaptive chunks (256 KiB for a quiet partition, up to 16 MiB
// for a busy one); the logical end is kept in memory and the file is
// trimmed when the segment rolls or the log closes. Index files grow in
// fallocated chunks under a mapping made once at full capacity (at the
// first entry), so a store into a mapped index never faults on a full disk.
// A partition never written reserves nothing.
//
// # Descriptors
//
// A partition costs one file descriptor at most, as in Kafka: index files
// are mapped and closed (reopened only for a moment to grow, trim or sync
// them), and a segment's .log descriptor, the active segment's included, is
// kept by the Store's file cache (filecache.go), which closes the least
// recently used idle ones beyond StoreOptions.OpenFiles (by default half the
// process's descriptor limit); the next append or read reopens it. A View
// holds its segment, not the descriptor, which it takes only to send or
// read its bytes. So a Store of any number of partitions stays under its
// bound, plus the descriptors in use at that moment.
//
// No fsync happens per append (Kafka's default: replication and the OS's
// writeback carry durability). A rolled segment is flushed in the
// background; Flush syncs everything appended. The recovery point is the
// offset below which everything is on disk. After a clean Close only the
// last segment's tail is checked at open; after an unclean stop every
// segment from the one holding the recovery point is scanned, each batch's
// length, magic, CRC and increasing offsets checked, and the log is cut at
// the first batch that fails (a zeroed preallocated tail, a torn write or
// corruption), with later segments removed and indexes rebuilt.
//
// A failed write or fsync is sticky: the page cache may have lost data, so
// the log refuses appends (ErrLogFailed) until it is reopened.
//
// # Concurrency
//
// Appends, rolls and truncation hold Log.mu. Reads take no lock of the log:
// they load the log end offset and an immutable snapshot of the segment tree
// atomically and take a reference on one segment. Bytes below a segment's
// published size never change while a reference is held: deleted segments
// stay readable until released, and truncating a segment a reader holds
// copies its kept prefix to a new file instead of cutting it in place.
//
// A cleaning pass holds its Cleaner's mutex and its log's pass lock
// (Log.clean.pass) throughout, taking Log.mu only to read the log's state
// and to swap segments; it holds references on the segments it reads.
//
// Lock order: cleanerManager.mu, hwCheckpoint.mu, Store.mu, Cleaner.mu, Log.clean.pass,
// Log.mu, cleanerCheckpoint.mu, fileCache.mu, segment.mu. Log.flushMu is
// taken without Log.mu held.
package engine
