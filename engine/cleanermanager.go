package engine

// The Store's cleaner threads and the clean points, after Kafka 3.9's
// LogCleanerManager.
//
// Each of StoreOptions.Cleaner.Threads threads owns a Cleaner (its offset
// map and buffers) and loops: pick the dirtiest compacted log not being
// cleaned, run one pass over it (cleaner.go), and when no log qualifies,
// wait Backoff. A log qualifies when its cleanable dirty bytes are a share
// of its clean plus cleanable bytes above min.cleanable.dirty.ratio (Kafka
// compares with >), or when it has cleanable bytes and its dirty data is
// older than max.compaction.lag.ms; among those the highest ratio wins
// (grabFilthiestCompactedLog). Clean bytes are those of the segments below
// the clean point, cleanable ones those of the segments from the one
// holding the clean point to the first uncleanable offset. A pass that
// fails on bad data marks the log uncleanable until the Store reopens, as
// Kafka does.
//
// The clean points are kept in the data directory (in a standalone log's
// directory for OpenLog) as cleaner-offset-checkpoint, in the text format
// of checkpoint.go, keyed by log directory name:
//
//	0
//	2
//	config-0 81234
//	config-1 0
//
// A log without an entry is dirty from its start. The file is rewritten
// (writeFileAtomic) when a pass ends, when a truncation moves the log end
// below a clean point, and when a log is deleted.
//
// Lock order: cleanerManager.mu, Store.mu, Log.mu, cleanerCheckpoint.mu; a
// pass takes Cleaner.mu and Log.clean.pass before Log.mu, and no manager
// lock (doc.go has the whole order).

import (
	"errors"
	"maps"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

const cleanerCheckpointFile = "cleaner-offset-checkpoint"

// cleanerCheckpoint is a cleaner-offset-checkpoint file and its entries.
type cleanerCheckpoint struct {
	fs   FS
	path string
	mu   sync.Mutex
	offs map[string]int64
}

func openCleanerCheckpoint(fs FS, dir string) (*cleanerCheckpoint, error) {
	path := filepath.Join(dir, cleanerCheckpointFile)
	offs, err := readCheckpoint(fs, path)
	if err != nil {
		return nil, err
	}
	return &cleanerCheckpoint{fs: fs, path: path, offs: offs}, nil
}

func (c *cleanerCheckpoint) get(name string) (int64, bool) {
	if c == nil {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	off, ok := c.offs[name]
	return off, ok
}

// set makes off the clean point of name, durably.
func (c *cleanerCheckpoint) set(name string, off int64) error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.offs[name]; ok && old == off {
		return nil
	}
	next := maps.Clone(c.offs)
	next[name] = off
	if err := writeCheckpoint(c.fs, c.path, next); err != nil {
		return err
	}
	c.offs = next
	return nil
}

// retain drops, durably, the entries keep rejects.
func (c *cleanerCheckpoint) retain(keep func(name string) bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := maps.Clone(c.offs)
	maps.DeleteFunc(next, func(name string, _ int64) bool { return !keep(name) })
	if len(next) == len(c.offs) {
		return nil
	}
	if err := writeCheckpoint(c.fs, c.path, next); err != nil {
		return err
	}
	c.offs = next
	return nil
}

// CleanerTotals count the work of a Store's cleaner since it opened.
type CleanerTotals struct {
	Passes         int64 // passes completed
	BytesRead      int64 // log bytes read, offset maps included
	BytesWritten   int64 // log bytes written
	RecordsRemoved int64
	Aborted        int64 // passes stopped by a change to their log
	Failed         int64 // passes that failed (their logs are left alone)
}

type cleanerManager struct {
	opts     CleanerOptions
	cleaners chan *Cleaner // idle cleaners; a pass takes one

	mu          sync.Mutex
	inProgress  map[*Log]bool
	uncleanable map[*Log]bool
	passed      chan struct{} // closed and replaced after every pass

	passes, read, written, removed, aborted, failed atomic.Int64
}

func newCleanerManager(o CleanerOptions) *cleanerManager {
	o = o.withDefaults()
	m := &cleanerManager{
		opts:        o,
		cleaners:    make(chan *Cleaner, o.Threads),
		inProgress:  map[*Log]bool{},
		uncleanable: map[*Log]bool{},
		passed:      make(chan struct{}),
	}
	for range o.Threads {
		m.cleaners <- NewCleaner(o)
	}
	return m
}

// grab picks the dirtiest log that qualifies (see the top of the file) and
// marks it in progress.
func (m *cleanerManager) grab(logs []*Log) *Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	var best *Log
	bestRatio := -1.0
	for _, l := range logs {
		c := l.opts.Load().Compaction
		if !c.Policy.compacts() || m.inProgress[l] || m.uncleanable[l] {
			continue
		}
		d := l.dirtyStats()
		if d.dirtyBytes == 0 || !(d.overdue || d.ratio > c.MinCleanableDirtyRatio) {
			continue
		}
		if d.ratio > bestRatio {
			best, bestRatio = l, d.ratio
		}
	}
	if best != nil {
		m.inProgress[best] = true
	}
	return best
}

// run cleans l with a cleaner from the pool and accounts the pass.
func (m *cleanerManager) run(l *Log) (CleanStats, error) {
	c := <-m.cleaners
	st, err := c.Clean(l)
	m.cleaners <- c
	m.mu.Lock()
	delete(m.inProgress, l)
	switch {
	case err == nil:
		m.passes.Add(1)
	case errors.Is(err, errCleanAborted), errors.Is(err, ErrClosed), errors.Is(err, ErrLogFailed):
		m.aborted.Add(1)
	default:
		m.failed.Add(1)
		m.uncleanable[l] = true
		l.cfg.logger.Error("cleaning failed: the log is left uncleaned until reopened", "err", err)
	}
	m.read.Add(st.BytesRead + st.MapBytesRead)
	m.written.Add(st.BytesWritten)
	m.removed.Add(st.Removed)
	close(m.passed)
	m.passed = make(chan struct{})
	m.mu.Unlock()
	return st, err
}

// passedChan is closed at the end of the next pass.
func (m *cleanerManager) passedChan() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.passed
}

func (m *cleanerManager) totals() CleanerTotals {
	return CleanerTotals{
		Passes: m.passes.Load(), BytesRead: m.read.Load(), BytesWritten: m.written.Load(),
		RecordsRemoved: m.removed.Load(), Aborted: m.aborted.Load(), Failed: m.failed.Load(),
	}
}

// forget drops a closed or deleted log.
func (m *cleanerManager) forget(l *Log) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.uncleanable, l)
}

// cleanerLoop is one cleaner thread.
func (s *Store) cleanerLoop() {
	defer s.bg.Done()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		for {
			l := s.cleaner.grab(s.logs())
			if l == nil {
				break
			}
			s.cleaner.run(l)
			select {
			case <-s.stop:
				return
			default:
			}
		}
		t.Reset(s.cleaner.opts.Backoff)
	}
}

// Compact cleans, now and in this goroutine, every compacted log that
// qualifies (see cleanermanager.go), until none does, and returns the
// passes' stats. Logs a background thread is cleaning are skipped. It is
// for tools and tests; the background threads do this on their own.
func (s *Store) Compact() ([]CleanStats, error) {
	var out []CleanStats
	var errs []error
	skip := map[*Log]bool{}
	for {
		var logs []*Log
		for _, l := range s.logs() {
			if !skip[l] {
				logs = append(logs, l)
			}
		}
		l := s.cleaner.grab(logs)
		if l == nil {
			return out, errors.Join(errs...)
		}
		st, err := s.cleaner.run(l)
		if err != nil && !errors.Is(err, errCleanAborted) {
			errs = append(errs, err)
		}
		if st.End > st.FirstDirty {
			out = append(out, st)
		}
		if err != nil || st.End <= st.FirstDirty {
			skip[l] = true // no progress: not again in this call
		}
	}
}

// CleanerStats returns the cleaner's totals since the Store opened.
func (s *Store) CleanerStats() CleanerTotals { return s.cleaner.totals() }
