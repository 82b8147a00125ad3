package group

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"
)

// manualClock is a Clock whose time moves only when a test advances it;
// due timers fire in deadline order, in the advancing goroutine.
type manualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

type manualTimer struct {
	c       *manualClock
	at      time.Time
	f       func()
	stopped bool
}

func newManualClock() *manualClock { return &manualClock{now: time.UnixMilli(1_700_000_000_000)} }

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

// Advance moves time forward by d, firing every timer that comes due
// (including timers armed by fired ones) at its own time.
func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		c.timers = slices.DeleteFunc(c.timers, func(t *manualTimer) bool { return t.stopped })
		slices.SortStableFunc(c.timers, func(a, b *manualTimer) int { return a.at.Compare(b.at) })
		if len(c.timers) == 0 || c.timers[0].at.After(end) {
			c.now = end
			c.mu.Unlock()
			return
		}
		t := c.timers[0]
		c.timers = c.timers[1:]
		t.stopped = true
		if t.at.After(c.now) {
			c.now = t.at
		}
		c.mu.Unlock()
		t.f()
	}
}

// memStore is a Store in memory, with an injectable failure.
type memStore struct {
	mu    sync.Mutex
	parts map[int32][]Record
	fail  error
	// verifyCode is what VerifyTxn answers (0: verified).
	verifyCode int16
}

func newMemStore() *memStore { return &memStore{parts: map[int32][]Record{}} }

func (s *memStore) Append(p int32, rs []Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.parts[p] = append(s.parts[p], rs...)
	return nil
}

func (s *memStore) VerifyTxn(p int32, transactionalID string, producerID int64, epoch int16) (uint64, int16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return 0, s.verifyCode
}

func (s *memStore) AppendTxn(p int32, producerID int64, epoch int16, guard uint64, rs []Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	for _, r := range rs {
		r.Transactional, r.ProducerID = true, producerID
		s.parts[p] = append(s.parts[p], r)
	}
	return nil
}

// mark appends producer id's transaction marker to partition p, as
// WriteTxnMarkers does.
func (s *memStore) mark(p int32, producerID int64, commit bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := MarkerAbort
	if commit {
		m = MarkerCommit
	}
	s.parts[p] = append(s.parts[p], Record{ProducerID: producerID, Marker: m})
}

func (s *memStore) Read(p int32, fn func(Record) error) error {
	s.mu.Lock()
	rs := slices.Clone(s.parts[p])
	s.mu.Unlock()
	for _, r := range rs {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

var errInjected = errors.New("injected store failure")

func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// gatedStore is a memStore whose reads the test lets finish one by one:
// each Read hands the test a channel (on reads) and returns when the test
// closes it, after delivering the records (or before, with before set).
// A set readErr fails every Read.
type gatedStore struct {
	*memStore
	before  bool
	reads   chan chan struct{}
	readErr error
}

func newGatedStore(s *memStore) *gatedStore {
	return &gatedStore{memStore: s, reads: make(chan chan struct{})}
}

func (s *gatedStore) Read(p int32, fn func(Record) error) error {
	release := make(chan struct{})
	if s.before {
		s.reads <- release
		<-release
	}
	if s.readErr != nil {
		return s.readErr
	}
	if err := s.memStore.Read(p, fn); err != nil {
		return err
	}
	if !s.before {
		s.reads <- release
		<-release
	}
	return nil
}

// nextRead waits for the next Read of s and returns what lets it finish;
// the bound only turns a hang into a failure.
func (s *gatedStore) nextRead(t *testing.T) chan struct{} {
	t.Helper()
	select {
	case r := <-s.reads:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the load never read the store")
	}
	panic("unreachable")
}
