package engine

// A Store is a data directory of partition logs:
//
//	<data>/
//	  .lock                               held while open
//	  .clean-shutdown                     present only after a clean Close
//	  recovery-point-offset-checkpoint    see checkpoint.go
//	  replication-offset-checkpoint       the logs' high watermarks, see hwcheckpoint.go
//	  <topic>-<partition>/                one Log each, with partition.metadata
//	  <topic>-<partition>.<id>-delete/    a deleted log, removed in the background
//
// partition.metadata is text, as Kafka writes it:
//
//	version: 0
//	topic_id: <topic ID, 22 characters of unpadded URL-safe base64>
//
// A deleted log's directory is renamed before anything is removed, so a
// crash mid-delete never leaves data under the live name, where a new topic
// of the same name would find it.

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// TopicID is a topic's 16-byte UUID, as Kafka assigns them.
type TopicID [16]byte

// NewTopicID returns a random (version 4) topic ID.
func NewTopicID() TopicID {
	var id TopicID
	for {
		rand.Read(id[:])
		id[6] = id[6]&0x0f | 0x40
		id[8] = id[8]&0x3f | 0x80
		// As Kafka's Uuid.randomUuid: no id whose string form starts with
		// '-' (base64url 62, the first byte's top six bits), which Kafka's
		// command-line tools would read as an option. The version bits
		// already keep it from the reserved all-zero and one ids.
		if id[0]>>2 != 62 {
			return id
		}
	}
}

// String is Kafka's form: unpadded URL-safe base64.
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// ParseTopicID parses the String form.
func ParseTopicID(s string) (TopicID, error) {
	var id TopicID
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("engine: bad topic ID %q", s)
	}
	copy(id[:], b)
	return id, nil
}

// Partition names a topic partition.
type Partition struct {
	Topic     string
	Partition int32
}

func (p Partition) dirName() string { return p.Topic + "-" + strconv.Itoa(int(p.Partition)) }

// parsePartitionDir splits "<topic>-<partition>"; ok is false for other names.
func parsePartitionDir(name string) (Partition, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return Partition{}, false
	}
	n, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || n < 0 || strconv.Itoa(int(n)) != name[i+1:] {
		return Partition{}, false
	}
	return Partition{Topic: name[:i], Partition: int32(n)}, true
}

const (
	partitionMetadataFile = "partition.metadata"
	deleteDirSuffix       = "-delete"
)

// StoreOptions configures a Store. The zero value means defaults.
type StoreOptions struct {
	// Log holds the defaults of every log in the store.
	Log Options

	// LogOptions, if set, gives the options of one topic's logs (a topic's
	// configuration overriding the broker's). It is called with the
	// store's lock held (when a log opens, and by ReloadOptions), so it must
	// not call into the Store.
	LogOptions func(topic string) Options

	// OpenFiles bounds how many segments keep their log's descriptor open
	// across all logs, the active segments' included (index files hold
	// none): the least recently used idle ones are closed and reopened at
	// their next append or read. Default half the process's descriptor
	// limit (RLIMIT_NOFILE) when it is read, else 1000.
	OpenFiles int

	// OpenParallelism is how many logs are opened (and recovered) at once.
	// Default GOMAXPROCS.
	OpenParallelism int

	// CheckpointInterval is how often recovery points are written
	// (log.flush.offset.checkpoint.interval.ms). Default 60 s.
	CheckpointInterval time.Duration

	// RetentionCheckInterval is how often every log's retention is applied
	// (log.retention.check.interval.ms). Default 5 minutes.
	RetentionCheckInterval time.Duration

	// Cleaner configures the compaction of logs whose cleanup policy
	// compacts (log.cleaner.*): see compaction.go and cleanermanager.go.
	Cleaner CleanerOptions
}

type storeLog struct {
	log *Log
	id  TopicID
}

// Store holds the logs of a data directory.
//
// Lock order: Store.mu before any Log's locks.
type Store struct {
	dir   string
	fs    FS
	opts  StoreOptions
	cache *fileCache
	lock  *os.File

	mu struct {
		sync.Mutex
		logs   map[Partition]storeLog
		closed bool
	}
	stop    chan struct{}
	bg      sync.WaitGroup
	syncer  *syncer
	cleaner *cleanerManager
	cleanCp *cleanerCheckpoint // the logs' clean points
	hwCp    *hwCheckpoint      // the logs' high watermarks
}

// OpenStore opens the data directory dir, creating it if needed, and opens
// every partition log in it in parallel, recovering them after an unclean
// stop.
func OpenStore(dir string, opts StoreOptions) (*Store, error) {
	if opts.OpenFiles <= 0 {
		opts.OpenFiles = defaultOpenFiles()
	}
	if opts.OpenParallelism <= 0 {
		opts.OpenParallelism = runtime.GOMAXPROCS(0)
	}
	if opts.CheckpointInterval <= 0 {
		opts.CheckpointInterval = time.Minute
	}
	if opts.RetentionCheckInterval <= 0 {
		opts.RetentionCheckInterval = 5 * time.Minute
	}
	fs := opts.Log.withDefaults().FS
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("engine: create data dir %s: %w", dir, err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	s := &Store{dir: dir, fs: fs, opts: opts, cache: newFileCache(opts.OpenFiles), lock: lock, stop: make(chan struct{}), syncer: newSyncer()}
	s.mu.logs = map[Partition]storeLog{}
	s.cleaner = newCleanerManager(opts.Cleaner)
	s.hwCp = newHWCheckpoint(fs, dir)
	s.cleanCp, err = openCleanerCheckpoint(fs, dir)
	if err == nil {
		err = s.load()
	}
	if err == nil {
		// Clean points of logs that are gone (deleted while a crash kept
		// their entry) must not pass to a new log of the same name.
		err = s.cleanCp.retain(func(name string) bool {
			tp, ok := parsePartitionDir(name)
			if !ok {
				return false
			}
			_, ok = s.mu.logs[tp]
			return ok
		})
	}
	if err != nil {
		s.closeLogs()
		s.syncer.close()
		lock.Close()
		return nil, err
	}
	s.bg.Add(2)
	go s.checkpointLoop()
	go s.retentionLoop()
	if !s.cleaner.opts.Disabled {
		s.bg.Add(s.cleaner.opts.Threads)
		for range s.cleaner.opts.Threads {
			go s.cleanerLoop()
		}
	}
	return s, nil
}

func (s *Store) logger() *slog.Logger { return s.opts.Log.withDefaults().Logger }

func (s *Store) logOptions(topic string) Options {
	o := s.opts.Log
	if s.opts.LogOptions != nil {
		o = s.opts.LogOptions(topic)
	}
	return o.withDefaults()
}

func (s *Store) load() error {
	clean, err := takeCleanMarker(s.fs, s.dir)
	if err != nil {
		return err
	}
	cp, err := readCheckpoint(s.fs, filepath.Join(s.dir, recoveryPointFile))
	if err != nil {
		return err
	}
	hws, hwData, err := readHighWatermarks(s.fs, s.hwCp.path)
	if err != nil {
		return err
	}
	s.hwCp.mu.written = hwData
	entries, err := s.fs.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("engine: read data dir %s: %w", s.dir, err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		errs  []error
		slots = make(chan struct{}, s.opts.OpenParallelism)
	)
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() {
			continue
		}
		if strings.HasSuffix(name, deleteDirSuffix) {
			s.removeInBackground(filepath.Join(s.dir, name))
			continue
		}
		tp, ok := parsePartitionDir(name)
		if !ok {
			continue
		}
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			dir := filepath.Join(s.dir, name)
			id, err := readPartitionMetadata(s.fs, dir)
			var l *Log
			if err == nil {
				o := s.logOptions(tp.Topic)
				o.Logger = o.Logger.With("topic", tp.Topic, "partition", tp.Partition)
				l, err = openLog(dir, o, s.cache, s.syncer, clean, cp[name])
			}
			if err == nil {
				l.clean.cp = s.cleanCp
				l.SetHighWatermark(hws[tp]) // clamped to what recovery kept
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("engine: open %s: %w", dir, err))
				return
			}
			s.mu.logs[tp] = storeLog{log: l, id: id}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Dir is the data directory.
func (s *Store) Dir() string { return s.dir }

// Log returns the log of tp and its topic ID.
func (s *Store) Log(tp Partition) (*Log, TopicID, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl, ok := s.mu.logs[tp]
	return sl.log, sl.id, ok
}

// Partitions lists the partitions the store holds.
func (s *Store) Partitions() []Partition {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Partition, 0, len(s.mu.logs))
	for tp := range s.mu.logs {
		out = append(out, tp)
	}
	return out
}

// CreateLog returns the log of tp, creating its directory and
// partition.metadata if it does not exist. An existing log of another topic
// ID is an error wrapping ErrTopicIDMismatch (the old topic's data must be
// deleted first).
func (s *Store) CreateLog(tp Partition, id TopicID) (*Log, error) {
	logs, err := s.CreateLogs(id, tp)
	if err != nil {
		return nil, err
	}
	return logs[0], nil
}

// syncParallelism is how many logs CreateLogs creates, and Close closes,
// at once (at least; OpenParallelism if larger). Both wait on fsyncs, not
// the CPU, and the file system's journal commits fsyncs that wait together
// at once.
const syncParallelism = 32

// CreateLogs is CreateLog for the partitions tps of the topic id, in order:
// the logs a topic's creation makes, created in parallel. Each new log
// costs two fsyncs, of its partition.metadata and of its directory (which
// also makes its first segment durable); one fsync of the data directory
// covers all the new directories. On error, the logs that were created are
// kept in the store (DeleteLog removes them), and none is returned.
func (s *Store) CreateLogs(id TopicID, tps ...Partition) ([]*Log, error) {
	for _, tp := range tps {
		if tp.Topic == "" || tp.Partition < 0 || strings.ContainsAny(tp.Topic, "/\x00") || tp.Topic == "." || tp.Topic == ".." {
			return nil, fmt.Errorf("engine: invalid partition %q/%d", tp.Topic, tp.Partition)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return nil, ErrClosed
	}
	out := make([]*Log, len(tps))
	var create []int // indexes into tps of the logs to create
	for i, tp := range tps {
		sl, ok := s.mu.logs[tp]
		if !ok {
			create = append(create, i)
			continue
		}
		if sl.id != id {
			return nil, fmt.Errorf("%w: %s holds topic ID %s, not %s", ErrTopicIDMismatch, tp.dirName(), sl.id, id)
		}
		out[i] = sl.log
	}
	if len(create) == 0 {
		return out, nil
	}
	opts := map[string]Options{}
	for _, i := range create {
		if _, ok := opts[tps[i].Topic]; !ok {
			opts[tps[i].Topic] = s.logOptions(tps[i].Topic)
		}
	}
	errs := make([]error, len(tps))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(len(create), max(s.opts.OpenParallelism, syncParallelism)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i], errs[i] = s.createLog(tps[i], id, opts[tps[i].Topic])
			}
		}()
	}
	for _, i := range create {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, i := range create {
		if out[i] != nil {
			s.mu.logs[tps[i]] = storeLog{log: out[i], id: id}
		}
	}
	err := errors.Join(errs...)
	if err == nil {
		err = syncDir(s.fs, s.dir)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// createLog creates the directory of tp with its partition.metadata and
// opens its log. The metadata's rename is made durable by the fsync of the
// directory that the log's first segment makes; the directory's own name by
// the caller's fsync of the data directory.
func (s *Store) createLog(tp Partition, id TopicID, o Options) (*Log, error) {
	dir := filepath.Join(s.dir, tp.dirName())
	_, err := s.fs.Stat(dir)
	fresh := errors.Is(err, os.ErrNotExist)
	if err := s.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("engine: create %s: %w", dir, err)
	}
	if err := writeFileReplace(s.fs, filepath.Join(dir, partitionMetadataFile), partitionMetadata(id)); err != nil {
		return nil, err
	}
	o.Logger = o.Logger.With("topic", tp.Topic, "partition", tp.Partition)
	var l *Log
	if fresh {
		l, err = createLog(dir, o, s.cache, s.syncer)
	} else {
		// Left by a crash during a creation or a deletion: open what it holds.
		l, err = openLog(dir, o, s.cache, s.syncer, false, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("engine: open %s: %w", dir, err)
	}
	l.clean.cp = s.cleanCp
	return l, nil
}

// ReloadOptions applies the current options of topic (LogOptions, or the
// store's defaults) to each of its open logs (Log.SetOptions): the topic's
// configuration changed. It holds the store's lock, so a log CreateLog opens
// meanwhile is either open already, and updated, or opened afterwards with
// the new options. LogOptions must not call into the Store.
func (s *Store) ReloadOptions(topic string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var o Options
	loaded := false
	for tp, sl := range s.mu.logs {
		if tp.Topic != topic {
			continue
		}
		if !loaded {
			o, loaded = s.logOptions(topic), true
		}
		sl.log.SetOptions(o) // ErrClosed only: a log being deleted
	}
}

// ReloadAllOptions is ReloadOptions for every topic: the defaults changed.
func (s *Store) ReloadAllOptions() {
	s.mu.Lock()
	defer s.mu.Unlock()
	byTopic := map[string]Options{}
	for tp, sl := range s.mu.logs {
		o, ok := byTopic[tp.Topic]
		if !ok {
			o = s.logOptions(tp.Topic)
			byTopic[tp.Topic] = o
		}
		sl.log.SetOptions(o)
	}
}

// DeleteLog closes the log of tp and removes its data: the directory is
// first renamed to "<topic>-<partition>.<random>-delete" (durably), then
// removed in the background. Views still held keep reading until released.
func (s *Store) DeleteLog(tp Partition) error {
	s.mu.Lock()
	sl, ok := s.mu.logs[tp]
	if ok {
		delete(s.mu.logs, tp)
	}
	s.mu.Unlock()
	if !ok {
		return nil
	}
	err := sl.log.Close()
	s.cleaner.forget(sl.log)
	if cerr := s.cleanCp.retain(func(name string) bool { return name != tp.dirName() }); cerr != nil {
		err = errors.Join(err, cerr)
	}
	var r [16]byte
	rand.Read(r[:])
	dst := filepath.Join(s.dir, tp.dirName()+"."+hex.EncodeToString(r[:])+deleteDirSuffix)
	if rerr := s.fs.Rename(sl.log.Dir(), dst); rerr != nil {
		return errors.Join(err, fmt.Errorf("engine: rename %s for deletion: %w", sl.log.Dir(), rerr))
	}
	if serr := syncDir(s.fs, s.dir); serr != nil {
		return errors.Join(err, serr)
	}
	s.removeInBackground(dst)
	return nil
}

func (s *Store) removeInBackground(dir string) {
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		if err := removeAll(s.fs, dir); err != nil {
			s.logger().Warn("removing deleted log", "dir", dir, "err", err)
		}
	}()
}

// Checkpoint writes every log's recovery point and high watermark
// (recovery-point-offset-checkpoint, replication-offset-checkpoint). The
// high watermarks are not written again when none changed since the last
// write (or since the file was read at open).
func (s *Store) Checkpoint() error {
	s.mu.Lock()
	cp := make(map[string]int64, len(s.mu.logs))
	for tp, sl := range s.mu.logs {
		cp[tp.dirName()] = sl.log.RecoveryPoint()
	}
	s.mu.Unlock()
	err := writeCheckpoint(s.fs, filepath.Join(s.dir, recoveryPointFile), cp)
	return errors.Join(err, s.hwCp.write(func() []partitionHW {
		s.mu.Lock()
		defer s.mu.Unlock()
		hws := make([]partitionHW, 0, len(s.mu.logs))
		for tp, sl := range s.mu.logs {
			hws = append(hws, partitionHW{tp, sl.log.HighWatermark()})
		}
		return hws
	}))
}

// every runs f each interval until the Store closes.
func (s *Store) every(interval time.Duration, f func()) {
	defer s.bg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			f()
		}
	}
}

func (s *Store) checkpointLoop() {
	s.every(s.opts.CheckpointInterval, func() {
		if err := s.Checkpoint(); err != nil {
			s.logger().Warn("writing checkpoints", "err", err)
		}
	})
}

// logs lists the open logs.
func (s *Store) logs() []*Log {
	s.mu.Lock()
	defer s.mu.Unlock()
	logs := make([]*Log, 0, len(s.mu.logs))
	for _, sl := range s.mu.logs {
		logs = append(logs, sl.log)
	}
	return logs
}

// ApplyRetention applies every log's retention now (see Log.ApplyRetention)
// and returns the number of segments deleted.
func (s *Store) ApplyRetention() int {
	total := 0
	for _, l := range s.logs() {
		n, err := l.ApplyRetention()
		total += n
		if err != nil && !errors.Is(err, ErrClosed) {
			s.logger().Warn("applying retention", "log", l.Dir(), "err", err)
		}
	}
	return total
}

func (s *Store) retentionLoop() {
	s.every(s.opts.RetentionCheckInterval, func() { s.ApplyRetention() })
}

// Close closes every log (flushing it), writes the recovery points, the high
// watermarks and the clean-shutdown marker, and releases the directory.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.closed = true
	s.mu.Unlock()
	close(s.stop)
	err := s.closeLogs()
	s.syncer.close()
	s.bg.Wait()
	if err == nil {
		err = s.Checkpoint()
	}
	if err == nil {
		err = writeCleanMarker(s.fs, s.dir)
	}
	return errors.Join(err, s.lock.Close())
}

func (s *Store) closeLogs() error {
	logs := s.logs()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		errs  []error
		slots = make(chan struct{}, max(s.opts.OpenParallelism, syncParallelism))
	)
	for _, l := range logs {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := l.Close(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func partitionMetadata(id TopicID) []byte {
	return []byte("version: 0\ntopic_id: " + id.String() + "\n")
}

// readPartitionMetadata reads a partition directory's topic ID; a directory
// without the file (written by an older version) has the zero ID.
func readPartitionMetadata(fs FS, dir string) (TopicID, error) {
	path := filepath.Join(dir, partitionMetadataFile)
	data, err := readFile(fs, path)
	if errors.Is(err, os.ErrNotExist) {
		return TopicID{}, nil
	}
	if err != nil {
		return TopicID{}, fmt.Errorf("engine: read %s: %w", path, err)
	}
	var version, id string
	for _, line := range strings.Split(string(data), "\n") {
		k, v, _ := strings.Cut(line, ":")
		switch strings.TrimSpace(k) {
		case "version":
			version = strings.TrimSpace(v)
		case "topic_id":
			id = strings.TrimSpace(v)
		}
	}
	if version != "0" {
		return TopicID{}, fmt.Errorf("%w: %s: unknown version %q", ErrCorrupt, path, version)
	}
	tid, err := ParseTopicID(id)
	if err != nil {
		return TopicID{}, fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
	return tid, nil
}
