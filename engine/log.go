package engine

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"
)

// Log is one partition: an ordered, offset-addressed sequence of record
// batches kept in segment files under one directory.
//
// Appends are serialized by the log's lock; reads take no lock of the log:
// they load the current segment view (an immutable copy-on-write clone of
// the segment tree) and the log end offset atomically, then take a reference
// on one segment.
//
// Options may change while the log is open (SetOptions): every operation
// loads the current *Options once and reads its settings from that copy, so
// an append never mixes two configurations.
//
// Lock order: Log.mu, then fileCache.mu, then segment.mu. Log.flushMu is
// taken without Log.mu held and never while holding segment.mu.
type Log struct {
	dir        string
	name       string // directory base name, the checkpoint key
	fs         FS
	opts       atomic.Pointer[Options] // immutable once stored; SetOptions replaces it whole
	cfg        *segmentConfig
	cache      *fileCache
	standalone bool     // opened by OpenLog: owns its checkpoint, marker and lock
	dirLock    *os.File // standalone only

	mu struct {
		sync.Mutex
		tree   *btree.BTreeG[segEntry] // all segments by base offset
		active *segment
		files  *segmentFiles // the active segment's files
		err    error         // sticky write failure
		closed bool
		// ticking is set while the flush.ms ticker goroutine runs.
		ticking bool
	}

	view          atomic.Pointer[segmentView] // readers' snapshot of mu.tree
	nextOffset    atomic.Int64                // log end offset: the offset the next record gets
	startOffset   atomic.Int64
	highWatermark atomic.Int64 // in [startOffset, nextOffset]; replication/host/driver.go
	firstUnstable atomic.Int64 // first offset of the oldest open transaction, -1: none; state.go
	leaderEpoch   atomic.Int32
	recoveryPoint atomic.Int64 // everything below is on disk
	closed        atomic.Bool

	flushMu   sync.Mutex     // serializes flushes; guards nothing else
	bg        sync.WaitGroup // background flushes after roll, the flush.ms ticker
	syncer    *syncer        // group commit rounds (shared by a Store's logs)
	ownSyncer bool
	durable   durableSignal // wakes appenders waiting for the recovery point
	// epochs and producers are the partition state (state.go), guarded by
	// mu; lastEpoch caches the epoch cache's latest epoch.
	epochs    *epochCache
	producers *producerState
	aborted   []AbortedTxn // the aborted transactions, by marker offset (txnindex.go)
	// abortedView is aborted as last published for AbortedTxns, which
	// reads it without the lock: an entry below a published length never
	// changes (aborted only grows at its end or is replaced whole).
	abortedView atomic.Pointer[[]AbortedTxn]
	lastEpoch   int32
	// sinceSnapshot is how many bytes of batches the log holds past the
	// last producer snapshot taken (or loaded), guarded by mu.
	sinceSnapshot int64
	// snapshotAt is the offset of the newest producer snapshot on disk
	// that this log loaded or wrote, or the log start offset if it is
	// newer (replaying from there is the same as from no snapshot).
	snapshotAt atomic.Int64

	// syncRounds counts flushes that advanced the recovery point (tests and
	// benchmarks report fsyncs per append with it).
	syncRounds atomic.Int64
	stopTick   chan struct{} // closed by Close: the flush.ms ticker ends
	resetTick  chan struct{} // buffered 1: the ticker rereads flush.ms
	clean      logCleanState // compaction (cleaner.go)
}

type segEntry struct {
	base int64
	seg  *segment
}

func segLess(a, b segEntry) bool { return a.base < b.base }

// segmentView is what readers see: read-only, replaced whole on change.
type segmentView struct {
	tree *btree.BTreeG[segEntry]
}

// floor returns the segment with the largest base <= offset.
func (v *segmentView) floor(offset int64) *segment {
	var s *segment
	v.tree.DescendLessOrEqual(segEntry{base: offset}, func(e segEntry) bool {
		s = e.seg
		return false
	})
	return s
}

// after returns the segment with the smallest base > base, or nil if there
// is none.
func (v *segmentView) after(base int64) *segment {
	var s *segment
	v.tree.AscendGreaterOrEqual(segEntry{base: base + 1}, func(e segEntry) bool {
		s = e.seg
		return false
	})
	return s
}

// AppendResult describes an append.
type AppendResult struct {
	FirstOffset int64 // offset of the batch's first record
	LastOffset  int64 // offset of its last record
	// LogAppendTime is the time stamped on the batch by a LogAppendTime
	// log, -1 otherwise (Kafka's produce response field).
	LogAppendTime int64
	// Duplicate is set when an idempotent producer's batch repeats one of
	// its last five: nothing was appended and the offsets are the original
	// batch's.
	Duplicate bool
}

// OpenLog opens (creating if needed) the log in dir on its own, outside a
// Store: it takes a lock on the directory and keeps its recovery point and
// clean-shutdown marker there.
func OpenLog(dir string, opts Options) (*Log, error) {
	o := opts.withDefaults()
	if err := o.FS.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("engine: create log dir %s: %w", dir, err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	clean, err := takeCleanMarker(o.FS, dir)
	var cp map[string]int64
	var ccp *cleanerCheckpoint
	if err == nil {
		cp, err = readCheckpoint(o.FS, filepath.Join(dir, recoveryPointFile))
	}
	if err == nil {
		ccp, err = openCleanerCheckpoint(o.FS, dir)
	}
	if err != nil {
		lock.Close()
		return nil, err
	}
	sy := newSyncer()
	l, err := openLog(dir, o, newFileCache(o.OpenSegments), sy, clean, cp[filepath.Base(dir)])
	if err != nil {
		sy.close()
		lock.Close()
		return nil, err
	}
	l.standalone, l.dirLock, l.ownSyncer = true, lock, true
	l.clean.cp = ccp
	return l, nil
}

// openLog opens the log in dir. After an unclean stop (clean false) every
// segment from the one holding recoveryPoint on is scanned and checked.
func openLog(dir string, opts Options, cache *fileCache, sy *syncer, clean bool, recoveryPoint int64) (*Log, error) {
	l := newLog(dir, opts, cache, sy)
	if err := l.load(clean, recoveryPoint); err != nil {
		l.closeSegments()
		return nil, err
	}
	if opts.FlushMessages == 1 {
		// Every acknowledged record must be on disk: make what recovery
		// kept so before serving it.
		if err := l.flushUpTo(l.nextOffset.Load()); err != nil {
			l.closeSegments()
			return nil, err
		}
	}
	l.mu.Lock()
	err := l.loadStateLocked()
	if err == nil {
		l.highWatermark.Store(l.startOffset.Load())
		l.startTickerLocked()
	}
	l.mu.Unlock()
	if err != nil {
		l.closeSegments()
		return nil, err
	}
	return l, nil
}

// createLog makes the log of dir, a directory just created: there is
// nothing to list, recover or load, only a first segment at offset 0 to
// create (whose directory fsync the caller counts on), so that creating a
// topic of many partitions costs few operations for each.
func createLog(dir string, opts Options, cache *fileCache, sy *syncer) (*Log, error) {
	l := newLog(dir, opts, cache, sy)
	s, f, err := l.createSegmentLocked(0, false)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.active, l.mu.files = s, f
	l.publishLocked()
	l.epochs = &epochCache{fs: l.fs, path: filepath.Join(dir, leaderEpochCheckpointFile)}
	l.producers = newProducerState()
	l.firstUnstable.Store(-1)
	l.lastEpoch = -1
	l.snapshotAt.Store(0)
	l.startTickerLocked()
	return l, nil
}

// newLog is a log of dir with no segment yet.
func newLog(dir string, opts Options, cache *fileCache, sy *syncer) *Log {
	l := &Log{
		dir:    dir,
		name:   filepath.Base(dir),
		cache:  cache,
		syncer: sy,
		fs:     opts.FS,
		cfg: &segmentConfig{
			fs:     opts.FS,
			logger: opts.Logger.With("log", filepath.Base(dir)),
		},
		stopTick:  make(chan struct{}),
		resetTick: make(chan struct{}, 1),
	}
	l.opts.Store(&opts)
	l.cfg.indexInterval.Store(int64(opts.IndexIntervalBytes))
	l.cfg.indexBytes.Store(int64(opts.SegmentIndexBytes))
	l.mu.tree = btree.NewG(32, segLess)
	return l
}

// Options returns the log's current options.
func (l *Log) Options() Options { return *l.opts.Load() }

// SetOptions changes the log's settings while it is open, as Kafka applies a
// topic's new configuration without a restart. Zero fields mean defaults, as
// at open. Each setting takes effect at the next operation that reads it:
//   - SegmentBytes, SegmentAge, MaxBatchBytes, LogAppendTime, Recompression,
//     FlushMessages and IndexIntervalBytes at the next append (a lowered
//     SegmentBytes rolls the active segment at the next append that would
//     pass it);
//   - Retention, RetentionBytes and ProducerIDExpiration at the next
//     retention pass;
//   - Compaction (cleanup policy and compaction keys) at the cleaner's next
//     pick of a log, and at the next pass over this one;
//   - FlushInterval restarts the flush.ms ticker (zero stops it);
//   - SegmentIndexBytes from the next segment, as in Kafka: the active
//     segment's index files are already sized.
//
// FS, Now, Logger, OnFlush and OpenSegments are fixed at open and ignored
// here.
// Appends already past their options check finish under the old settings.
func (l *Log) SetOptions(o Options) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return ErrClosed
	}
	cur := l.opts.Load()
	o = o.withDefaults()
	next := *cur
	next.SegmentBytes = o.SegmentBytes
	next.SegmentAge = o.SegmentAge
	next.SegmentIndexBytes = o.SegmentIndexBytes
	next.IndexIntervalBytes = o.IndexIntervalBytes
	next.MaxBatchBytes = o.MaxBatchBytes
	next.Retention = o.Retention
	next.RetentionBytes = o.RetentionBytes
	next.FlushMessages = o.FlushMessages
	next.FlushInterval = o.FlushInterval
	next.LogAppendTime = o.LogAppendTime
	next.Recompression = o.Recompression
	next.ProducerIDExpiration = o.ProducerIDExpiration
	next.TxnVerification = o.TxnVerification
	next.Compaction = o.Compaction
	l.opts.Store(&next)
	l.cfg.indexInterval.Store(int64(next.IndexIntervalBytes))
	l.cfg.indexBytes.Store(int64(next.SegmentIndexBytes))
	if next.FlushInterval != cur.FlushInterval {
		l.startTickerLocked()
		select {
		case l.resetTick <- struct{}{}:
		default:
		}
	}
	return nil
}

// startTickerLocked starts the flush.ms ticker if the options ask for one
// and it is not running. l.mu is held and the log is open, so the bg.Add
// happens before Close's bg.Wait.
func (l *Log) startTickerLocked() {
	interval := l.opts.Load().FlushInterval
	if l.mu.ticking || interval <= 0 {
		return
	}
	l.mu.ticking = true
	l.bg.Add(1)
	go l.flushTicker(interval)
}

// Dir is the log's directory.
func (l *Log) Dir() string { return l.dir }

// StartOffset is the first offset still in the log (the log start offset).
func (l *Log) StartOffset() int64 { return l.startOffset.Load() }

// EndOffset is the log end offset: the offset the next record will get.
func (l *Log) EndOffset() int64 { return l.nextOffset.Load() }

// RecoveryPoint is the offset below which everything is known to be on
// disk; recovery after a crash rescans from the segment holding it.
func (l *Log) RecoveryPoint() int64 { return l.recoveryPoint.Load() }

// SetLeaderEpoch sets the leader epoch stamped into appended batches.
func (l *Log) SetLeaderEpoch(epoch int32) { l.leaderEpoch.Store(epoch) }

// Append validates batch (one Kafka RecordBatch v2 as a producer sends it:
// see ValidateBatch), assigns it the next offsets, stamps the leader epoch,
// and writes it. The batch's bytes are modified in place (base offset and
// leader epoch, both outside the CRC), unless the log's Recompression
// rebuilds the batch in another codec: then the rebuilt copy, in a pooled
// buffer, is written and batch is left as it was. With a flush policy it
// returns once the batch is as durable as the policy requires
// (AwaitFlushPolicy). It never allocates (recompressing, once the pool's
// buffers have grown).
func (l *Log) Append(batch []byte) (AppendResult, error) {
	res, err := l.AppendNoWait(batch)
	if err != nil {
		return res, err
	}
	return res, l.AwaitFlushPolicy(res)
}

// AppendNoWait is Append without waiting for the flush policy: the caller
// calls AwaitFlushPolicy before acknowledging the records.
func (l *Log) AppendNoWait(batch []byte) (AppendResult, error) {
	return l.appendNoWait(batch, false, 0)
}

// AppendCoordinatorNoWait is AppendNoWait for a batch a coordinator writes,
// Kafka's AppendOrigin.COORDINATOR: a transaction marker (a control batch,
// AppendControlBatch) a partition leader writes for WriteTxnMarkers, or the
// group coordinator's transactional offset commit. The batch is validated
// as a client's, but its producer's sequence numbers are not checked and
// it is never a duplicate; an older producer epoch is refused
// (ErrInvalidProducerEpoch), as is a non-transactional data batch while
// its producer's transaction is open (ErrInvalidTxnState) and a marker from
// a coordinator epoch older than the producer's last marker's
// (ErrCoordinatorFenced). A marker for a producer without an open
// transaction is written (Kafka writes it too): it ends nothing.
func (l *Log) AppendCoordinatorNoWait(batch []byte) (AppendResult, error) {
	return l.appendNoWait(batch, true, 0)
}

// AppendCoordinatorVerifiedNoWait is AppendCoordinatorNoWait for the group
// coordinator's transactional offset commit with the guard of its
// verification (StartTxnVerification): with Options.TxnVerification a
// transactional data batch opening its producer's transaction needs the
// producer's current guard, as a client's (ErrInvalidTxnState).
func (l *Log) AppendCoordinatorVerifiedNoWait(batch []byte, guard VerificationGuard) (AppendResult, error) {
	return l.appendNoWait(batch, true, guard)
}

func (l *Log) appendNoWait(batch []byte, coordinator bool, guard VerificationGuard) (AppendResult, error) {
	o := l.opts.Load()
	if len(batch) > o.MaxBatchBytes {
		return AppendResult{}, fmt.Errorf("%w: %d bytes, the limit is %d", ErrBatchTooLarge, len(batch), o.MaxBatchBytes)
	}
	h, err := ValidateBatch(batch)
	if err != nil {
		return AppendResult{}, err
	}
	if o.Recompression.needed(&h) {
		// Outside the lock: appends to this log go on meanwhile.
		rb := getRecompressBuffers()
		defer rb.put() // after the write: the batch is in rb
		if batch, err = rb.recompress(batch, &h, &o.Recompression, o.MaxBatchBytes); err != nil {
			return AppendResult{}, err
		}
		if len(batch) > o.MaxBatchBytes {
			return AppendResult{}, fmt.Errorf("%w: %d bytes once recompressed with %v, the limit is %d", ErrBatchTooLarge, len(batch), o.Recompression.Codec, o.MaxBatchBytes)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return AppendResult{}, err
	}
	coordEpoch := int32(-1)
	if h.Control() {
		cr, err := ParseControlBatch(batch)
		if err != nil {
			return AppendResult{}, fmt.Errorf("%w: log %s: %w", ErrInvalidBatch, l.name, err)
		}
		coordEpoch = cr.CoordinatorEpoch
	}
	if coordinator {
		if err := l.producers.checkCoordinator(&h, coordEpoch); err != nil {
			return AppendResult{}, fmt.Errorf("log %s: %w", l.name, err)
		}
		if o.TxnVerification && !h.Control() && h.ProducerID >= 0 {
			if err := l.producers.checkVerified(&h, l.producers.producers[h.ProducerID], guard); err != nil {
				return AppendResult{}, fmt.Errorf("log %s: %w", l.name, err)
			}
		}
	} else if h.ProducerID >= 0 {
		dup, err := l.producers.check(&h, o.TxnVerification, guard)
		if err != nil {
			return AppendResult{}, err
		}
		if dup != nil {
			res := AppendResult{FirstOffset: dup.firstOffset, LastOffset: dup.lastOffset, LogAppendTime: -1, Duplicate: true}
			if o.LogAppendTime {
				res.LogAppendTime = dup.timestamp // the original's: its max timestamp was stamped
			}
			return res, nil
		}
	}
	h.BaseOffset = l.nextOffset.Load()
	h.LeaderEpoch = l.leaderEpoch.Load()
	setBaseOffset(batch, h.BaseOffset)
	setLeaderEpoch(batch, h.LeaderEpoch)
	if o.LogAppendTime {
		stampLogAppendTime(batch, &h, o.Now().UnixMilli())
	}
	if err := l.appendLocked(o, batch, &h); err != nil {
		return AppendResult{}, err
	}
	if err := l.trackAppendLocked(batch, &h); err != nil {
		return AppendResult{}, err
	}
	return AppendResult{FirstOffset: h.BaseOffset, LastOffset: h.LastOffset(), LogAppendTime: logAppendTime(&h)}, nil
}

// AppendReplicated appends batches that already carry their offsets and
// leader epochs, as a follower copies them from its leader: one or more
// whole batches back to back. Each must pass its CRC check and start at or
// after the log end offset (gaps are allowed: a compacted leader has them).
// It accepts what Kafka's cleaner writes: batches with fewer records than
// their offset range, and empty batches.
func (l *Log) AppendReplicated(batches []byte) (AppendResult, error) {
	res, err := l.appendReplicated(batches)
	if err != nil || res.LastOffset < 0 {
		return res, err
	}
	return res, l.AwaitFlushPolicy(res)
}

func (l *Log) appendReplicated(batches []byte) (AppendResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return AppendResult{}, err
	}
	res := AppendResult{FirstOffset: -1, LastOffset: -1}
	o := l.opts.Load()
	for pos := 0; pos < len(batches); {
		h, err := checkStoredBatch(batches[pos:])
		if err != nil {
			return res, fmt.Errorf("%w: replicated batch at byte %d: %w", ErrInvalidBatch, pos, err)
		}
		b := batches[pos : pos+int(h.Size())]
		if next := l.nextOffset.Load(); h.BaseOffset < next {
			return res, fmt.Errorf("%w: replicated batch at byte %d has base offset %d, the log ends at %d", ErrNonMonotonic, pos, h.BaseOffset, next)
		}
		if len(b) > max(o.MaxBatchBytes, int(o.SegmentBytes)) {
			return res, fmt.Errorf("%w: replicated batch of %d bytes", ErrBatchTooLarge, len(b))
		}
		if h.Control() && h.NumRecords > 0 {
			if _, err := ParseControlBatch(b); err != nil {
				return res, fmt.Errorf("%w: log %s: replicated batch at byte %d: %w", ErrInvalidBatch, l.name, pos, err)
			}
		}
		if err := l.appendLocked(o, b, &h); err != nil {
			return res, err
		}
		if err := l.trackAppendLocked(b, &h); err != nil {
			return res, err
		}
		if res.FirstOffset < 0 {
			res.FirstOffset = h.BaseOffset
		}
		res.LastOffset = h.LastOffset()
		pos += len(b)
	}
	return res, nil
}

// Failure is the write or sync error that failed the log (sticky: every
// later append is refused with ErrLogFailed until the log is opened
// again), nil if none.
func (l *Log) Failure() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.err
}

func (l *Log) writableLocked() error {
	if l.mu.closed {
		return ErrClosed
	}
	if l.mu.err != nil {
		return fmt.Errorf("%w: %w", ErrLogFailed, l.mu.err)
	}
	return nil
}

// appendLocked rolls if needed and writes one batch with offsets assigned,
// under the options o.
func (l *Log) appendLocked(o *Options, b []byte, h *BatchHeader) error {
	now := o.Now()
	s := l.mu.active
	if why := s.needsRoll(l.mu.files, int64(len(b)), h.LastOffset(), h.MaxTimestamp, o.SegmentBytes, o.SegmentAge, now); why != "" {
		if err := l.rollLocked(h.BaseOffset, why); err != nil {
			return err
		}
		s = l.mu.active
	}
	// The reference keeps the log's descriptor open while it is written;
	// the file cache may have closed it since the last append (acquire
	// reopens it).
	f, err := s.hold()
	if err != nil {
		return err
	}
	err = s.appendLocked(f, b, h, now)
	s.release()
	if err != nil {
		var se *stickyError
		if errors.As(err, &se) {
			l.mu.err = se.err
			return fmt.Errorf("%w: %w", ErrLogFailed, se.err)
		}
		return err
	}
	l.nextOffset.Store(h.LastOffset() + 1)
	l.sinceSnapshot += int64(len(b))
	return nil
}

// Roll closes the active segment and starts a new one at the log end
// offset. An empty active segment is left as it is.
func (l *Log) Roll() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	if l.mu.active.size.Load() == 0 {
		return nil
	}
	return l.rollLocked(l.nextOffset.Load(), "requested")
}

// rollLocked seals the active segment and makes a new active segment at
// base. An empty active segment is removed instead of sealed. The sealed
// segment is flushed in the background, then the recovery point passes it.
func (l *Log) rollLocked(base int64, why string) error {
	old, of := l.mu.active, l.mu.files
	if base < l.nextOffset.Load() {
		return fmt.Errorf("engine: roll to %d below the log end offset %d", base, l.nextOffset.Load())
	}
	empty := old.size.Load() == 0
	if empty && base == old.base {
		return nil // already an empty segment at base
	}
	if !empty {
		if _, err := old.hold(); err != nil {
			return err
		}
		defer old.release()
		if err := old.sealLocked(of); err != nil {
			var se *stickyError
			if errors.As(err, &se) {
				l.mu.err = se.err
			}
			return err
		}
		if l.opts.Load().FlushMessages > 0 {
			// The next segment's name becomes durable below. Were the old
			// segment's size not durable first, a crash could leave it
			// ending short of the next base, without the zeroed or torn
			// tail that tells recovery of a hole, and the log with a gap
			// of lost offsets. With a flush policy the old segment holds
			// at most the batches waiting for a sync round: this fsync is
			// cheap. (Without one it could be a whole segment of dirty
			// data: the roll leaves it to the background flush.)
			if err := datasync(of.log); err != nil {
				l.mu.err = err
				l.durable.broadcast()
				return fmt.Errorf("%w: %w", ErrLogFailed, err)
			}
		}
	}
	s, f, err := l.createSegmentLocked(base, true)
	if err != nil {
		var se *stickyError
		if errors.As(err, &se) {
			l.mu.err = se.err
			return fmt.Errorf("%w: %w", ErrLogFailed, se.err)
		}
		return err
	}
	s.w.chunk = old.w.chunk
	if empty {
		l.mu.tree.Delete(segEntry{base: old.base})
	}
	l.publishLocked()
	if empty {
		old.retireAndRemove()
	} else {
		old.deactivate()
		l.cfg.logger.Debug("rolled segment", "reason", why, "segment", old.base, "bytes", old.size.Load(), "next", base)
		snap, snapOff := l.snapshotLocked()
		l.bg.Add(1)
		go func() {
			defer l.bg.Done()
			if err := l.writeSnapshot(snap, snapOff); err != nil {
				l.cfg.logger.Warn("writing producer snapshot", "offset", snapOff, "err", err)
			}
			err := l.flushUpTo(base)
			if err == nil {
				// flushUpTo skips a segment the recovery point has passed
				// (flush.messages synced its data before the roll), but the
				// seal changed it since: its trim and indexes must reach the
				// disk too, or a crash leaves a zeroed tail in a segment
				// that is no longer the last.
				err = l.flushSealed(old)
			}
			if err != nil {
				l.cfg.logger.Warn("flushing rolled segment", "segment", old.base, "err", err)
			}
		}()
	}
	l.mu.active, l.mu.files = s, f
	return nil
}

// createSegmentLocked creates an empty segment at base (replacing stray
// files of that name, when there may be any), makes the creation durable,
// and adds it to the tree (unpublished).
func (l *Log) createSegmentLocked(base int64, strays bool) (*segment, *segmentFiles, error) {
	s := newSegment(l.dir, base, l.cache, l.cfg)
	for _, p := range []string{s.logPath(), s.indexPath(), s.timeIndexPath(), s.txnIndexPath()} {
		if !strays {
			break
		}
		if err := l.fs.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("engine: remove stray %s: %w", p, err)
		}
	}
	f, err := s.openFiles(true)
	if err == nil {
		if err = syncDir(l.fs, l.dir); err != nil {
			f.close(0, true)
		}
	}
	if err != nil {
		// Files left at base would outlive the failure: the old active
		// segment goes on taking offsets >= base, and the next open would
		// take the empty stray for the last segment and end the log at
		// base. Remove them durably, or fail for good.
		var errs []error
		for _, p := range []string{s.logPath(), s.indexPath(), s.timeIndexPath()} {
			if rerr := l.fs.Remove(p); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				errs = append(errs, rerr)
			}
		}
		if len(errs) == 0 {
			errs = append(errs, syncDir(l.fs, l.dir))
		}
		if rerr := errors.Join(errs...); rerr != nil {
			return nil, nil, &stickyError{fmt.Errorf("engine: create segment %d: %w; removing its files: %w", base, err, rerr)}
		}
		return nil, nil, err
	}
	s.activate(f)
	l.mu.tree.ReplaceOrInsert(segEntry{base: base, seg: s})
	return s, f, nil
}

// publishLocked hands readers a fresh snapshot of the segment tree.
func (l *Log) publishLocked() {
	l.view.Store(&segmentView{tree: l.mu.tree.Clone()})
}

// Read returns whole batches from one segment, starting with the batch that
// holds offset and ending before the first batch whose last offset is >= upTo
// (the caller's high watermark; pass EndOffset() for all). It returns at
// most maxBytes, but always at least one whole batch when one is readable,
// even a larger one, as Kafka does. A read at the log end offset, or one
// whose first batch reaches upTo, returns an empty View. Offsets below the
// log start offset or above the log end offset give ErrOffsetOutOfRange.
// The caller must Release the view.
func (l *Log) Read(offset, maxBytes, upTo int64) (View, error) {
	for {
		if l.closed.Load() {
			return View{}, ErrClosed
		}
		// The end offset is loaded before the view: a roll publishes the new
		// segment before any offset in it becomes visible.
		end := l.nextOffset.Load()
		v := l.view.Load()
		if offset < l.startOffset.Load() || offset > end {
			return View{}, fmt.Errorf("%w: offset %d, log %s holds [%d, %d)", ErrOffsetOutOfRange, offset, l.name, l.startOffset.Load(), end)
		}
		if offset == end || offset >= upTo {
			return View{}, nil
		}
		upTo = min(upTo, end)
		retry := false
		for s := v.floor(offset); s != nil; s = v.after(s.base) {
			// hi bounds the offsets in s. The last segment has none: appends
			// may have grown it past end since end was loaded (its size and
			// the end offset are two stores), so its read is always cut at
			// upTo by position.
			hi := int64(math.MaxInt64)
			if n := v.after(s.base); n != nil {
				hi = n.base
			}
			f, err := s.acquire()
			if err != nil {
				return View{}, err
			}
			if f == nil {
				retry = true // retired under us: reload the view
				break
			}
			view, found, err := s.read(f, offset, maxBytes, upTo, hi)
			if err != nil || view.n == 0 {
				s.release()
			}
			if err != nil {
				return View{}, err
			}
			if found {
				if view.n == 0 {
					return View{}, nil
				}
				// The view keeps the reference, not the descriptor: a
				// fetch holding views of many partitions holds no
				// descriptor until it sends each (View.WriteTo).
				s.releaseLog()
				return view, nil
			}
			if hi >= upTo {
				return View{}, nil
			}
		}
		if !retry {
			return View{}, nil
		}
	}
}

// Flush makes everything appended so far durable and advances the
// recovery point to the log end offset.
func (l *Log) Flush() error {
	if l.closed.Load() {
		return ErrClosed
	}
	return l.flushUpTo(l.nextOffset.Load())
}

// flushUpTo fsyncs every segment holding offsets in [recovery point,
// target) and then moves the recovery point to target.
func (l *Log) flushUpTo(target int64) error {
	_, err := l.flushRound(target)
	return err
}

// flushRound is flushUpTo; synced reports whether it fsynced the segments
// itself (the recovery point was below target), which Close needs to know.
func (l *Log) flushRound(target int64) (synced bool, err error) {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	rp := l.recoveryPoint.Load()
	if target <= rp {
		return false, nil
	}
	l.mu.Lock()
	failed := l.mu.err
	l.mu.Unlock()
	if failed != nil {
		// A failed write or fsync may have lost pages that a retried fsync
		// would report synced: nothing becomes durable until the log is
		// reopened and recovery finds what reached the disk.
		l.durable.broadcast()
		return false, fmt.Errorf("%w: %w", ErrLogFailed, failed)
	}
	v := l.view.Load()
	start := time.Now()
	var errs []error
	for s := v.floor(rp); s != nil && s.base < target; s = v.after(s.base) {
		f, err := s.acquire()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if f == nil {
			continue // removed: nothing to flush
		}
		if s.isActive() {
			// The active segment is rescanned after a crash whatever its
			// index says (it holds the recovery point), so its data alone
			// must reach the disk; sealing it flushes the indexes too.
			errs = append(errs, datasync(f.log))
		} else {
			errs = append(errs, s.flushFiles(f))
		}
		s.release()
	}
	if err := errors.Join(errs...); err != nil {
		l.mu.Lock()
		if l.mu.err == nil {
			l.mu.err = err // an fsync failure is sticky
		}
		l.mu.Unlock()
		l.durable.broadcast()
		return false, fmt.Errorf("%w: %w", ErrLogFailed, err)
	}
	// A failure recorded meanwhile (a roll's fsync, under l.mu) may be an
	// fsync of the same file that failed before ours "succeeded".
	l.mu.Lock()
	failed = l.mu.err
	if failed == nil {
		l.recoveryPoint.Store(target)
	}
	l.mu.Unlock()
	l.durable.broadcast()
	if failed != nil {
		return false, fmt.Errorf("%w: %w", ErrLogFailed, failed)
	}
	l.syncRounds.Add(1)
	if onFlush := l.opts.Load().OnFlush; onFlush != nil {
		onFlush(time.Since(start))
	}
	return true, nil
}

// flushSealed syncs the files of a sealed segment (data, trimmed size and
// indexes). A failure is sticky, as in flushUpTo, and is serialized with
// flushUpTo's rounds, which after it advance the recovery point no more.
func (l *Log) flushSealed(s *segment) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	f, err := s.acquire()
	if f == nil && err == nil {
		return nil // removed: nothing to flush
	}
	if err == nil {
		err = s.flushFiles(f)
		s.release()
	}
	if err != nil {
		l.mu.Lock()
		if l.mu.err == nil {
			l.mu.err = err
		}
		l.mu.Unlock()
		l.durable.broadcast()
		return fmt.Errorf("%w: %w", ErrLogFailed, err)
	}
	return nil
}

// isActive reports whether s is its log's active segment.
func (s *segment) isActive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.active
}

// flushFiles syncs a segment's log and indexes. A segment opened read-only
// (inactive, reopened by the cache) has its index files synced by path.
func (s *segment) flushFiles(f *segmentFiles) error {
	if f.writable {
		return f.flush()
	}
	if err := datasync(f.log); err != nil {
		return err
	}
	return errors.Join(syncPath(s.cfg.fs, s.indexPath()), syncPath(s.cfg.fs, s.timeIndexPath()))
}

func syncPath(fs FS, path string) error {
	f, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("engine: open %s for sync: %w", path, err)
	}
	defer f.Close()
	return datasync(f)
}

// Close flushes the log, trims the active segment and closes every file no
// reader holds (held ones close when released). A standalone log also
// writes its recovery point and clean-shutdown marker. A log that failed
// (ErrLogFailed) is closed without either, and Close returns the failure.
// Close is idempotent.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return nil
	}
	l.mu.closed = true
	l.closed.Store(true)
	l.mu.Unlock()
	l.endCleaning() // a running pass sees closed and stops: wait for it
	close(l.stopTick)
	l.bg.Wait()

	var errs []error
	trimmed := false
	l.mu.Lock()
	failed := l.mu.err != nil
	active, files := l.mu.active, l.mu.files
	if failed {
		// Nothing is flushed or marked clean: say so, so that no caller (a
		// Store writing its clean-shutdown marker) takes it for a clean
		// close.
		errs = append(errs, fmt.Errorf("%w: %w", ErrLogFailed, l.mu.err))
	} else if _, err := active.hold(); err != nil {
		// The log cannot be trimmed: not a clean close.
		failed = true
		errs = append(errs, err)
	} else {
		var err error
		trimmed, err = active.trimLocked(files)
		errs = append(errs, err)
	}
	l.mu.Unlock()
	if !failed {
		synced, err := l.flushRound(l.nextOffset.Load())
		errs = append(errs, err)
		// The trim may come after the recovery point covered the active
		// segment's data (then the round synced nothing): the trim and the
		// indexes must be on disk before the clean-shutdown marker says
		// so, or the next open, which does not scan segments before the
		// last, would read the zeroed tail as data. The reference taken
		// above kept the descriptor open for it. A partition with nothing
		// new since its last sync costs no fsync.
		if trimmed && !synced {
			errs = append(errs, datasync(files.log))
		}
		errs = append(errs, files.index.flush(), files.timeIndex.flush())
		active.release()
		l.mu.Lock()
		snap, snapOff := l.closeSnapshotLocked()
		l.mu.Unlock()
		errs = append(errs, l.writeSnapshot(snap, snapOff))
	}
	l.closeSegments()
	l.durable.broadcast()
	if l.ownSyncer {
		l.syncer.close()
	}
	if l.standalone {
		if err := errors.Join(errs...); err == nil && !failed {
			errs = append(errs,
				writeCheckpoint(l.fs, filepath.Join(l.dir, recoveryPointFile), map[string]int64{l.name: l.recoveryPoint.Load()}),
				writeCleanMarker(l.fs, l.dir))
		}
		errs = append(errs, l.dirLock.Close())
	}
	return errors.Join(errs...)
}

// closeSegments retires every segment without removing files.
func (l *Log) closeSegments() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.tree.Ascend(func(e segEntry) bool {
		e.seg.retire()
		return true
	})
}

// segmentCount is the number of segments (for tests and metrics).
func (l *Log) segmentCount() int { return l.view.Load().tree.Len() }

// Size is the number of bytes of data in the log's segments.
func (l *Log) Size() int64 {
	var n int64
	l.view.Load().tree.Ascend(func(e segEntry) bool {
		n += e.seg.size.Load()
		return true
	})
	return n
}

// SegmentBases lists the base offsets of the log's segments, oldest first.
func (l *Log) SegmentBases() []int64 {
	var out []int64
	l.view.Load().tree.Ascend(func(e segEntry) bool {
		out = append(out, e.base)
		return true
	})
	return out
}
