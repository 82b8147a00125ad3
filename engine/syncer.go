package engine

// Group commit. With a flush policy (Options.FlushMessages), appends wait
// until their records are on disk, and one syncer makes them so in rounds:
// a round takes every log with unsynced appends, fdatasyncs each of them
// once (the logs of a round in parallel), and advances each log's recovery
// point to the end offset it had when the round began, which releases every
// appender that was waiting then. Under load many appends share one fsync,
// so fsyncs per append fall as load rises.
//
// Appenders wait without holding the log's lock: appends continue while a
// round is in flight and are covered by the next one.

import (
	"fmt"
	"sync"
	"time"
)

// syncer runs sync rounds for the logs of a Store (or one standalone log).
type syncer struct {
	mu      sync.Mutex
	pending map[*Log]struct{}
	spare   map[*Log]struct{}
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

func newSyncer() *syncer {
	s := &syncer{
		pending: map[*Log]struct{}{},
		spare:   map[*Log]struct{}{},
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go s.run()
	return s
}

// request asks for a round that covers l's appends so far.
func (s *syncer) request(l *Log) {
	s.mu.Lock()
	s.pending[l] = struct{}{}
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *syncer) run() {
	defer close(s.done)
	var wg sync.WaitGroup
	for {
		select {
		case <-s.kick:
		case <-s.stop:
			return
		}
		s.mu.Lock()
		round := s.pending
		s.pending, s.spare = s.spare, round
		s.mu.Unlock()
		if len(round) == 1 {
			for l := range round {
				l.syncRound()
			}
		} else {
			for l := range round {
				wg.Add(1)
				go func() {
					defer wg.Done()
					l.syncRound()
				}()
			}
			wg.Wait()
		}
		clear(round)
	}
}

// close stops the syncer after the round in flight.
func (s *syncer) close() {
	close(s.stop)
	<-s.done
}

// syncRound makes everything appended so far durable. Errors are sticky in
// the log and reach the waiting appenders through awaitDurable.
func (l *Log) syncRound() {
	if err := l.flushUpTo(l.nextOffset.Load()); err != nil {
		l.cfg.logger.Error("sync failed", "err", err)
	}
}

// durableSignal is closed (and replaced) whenever the recovery point
// advances or the log fails, waking awaitDurable.
type durableSignal struct {
	mu sync.Mutex
	ch chan struct{}
}

func (d *durableSignal) wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ch == nil {
		d.ch = make(chan struct{})
	}
	return d.ch
}

func (d *durableSignal) broadcast() {
	d.mu.Lock()
	if d.ch != nil {
		close(d.ch)
		d.ch = nil
	}
	d.mu.Unlock()
}

// needsSync reports whether the flush policy wants res made durable before
// it is acknowledged: flush.messages=N asks it once N records are unsynced.
func (l *Log) needsSync(res AppendResult) bool {
	n := l.opts.Load().FlushMessages
	return n > 0 && res.LastOffset+1-l.recoveryPoint.Load() >= n
}

// AwaitFlushPolicy waits until the append res is as durable as the flush
// policy requires: with FlushMessages set and reached, until it is on disk.
// Append calls it itself; AppendNoWait leaves it to the caller, who can then
// append to several logs first and have one sync round cover them all.
func (l *Log) AwaitFlushPolicy(res AppendResult) error {
	if !l.needsSync(res) {
		return nil
	}
	return l.awaitDurable(res.LastOffset + 1)
}

// awaitDurable waits until every offset below offset is on disk.
func (l *Log) awaitDurable(offset int64) error {
	for {
		ch := l.durable.wait() // before the check: an advance after it closes ch
		if l.recoveryPoint.Load() >= offset {
			return nil
		}
		l.mu.Lock()
		err, closed := l.mu.err, l.mu.closed
		l.mu.Unlock()
		if err != nil {
			return fmt.Errorf("%w: %w", ErrLogFailed, err)
		}
		if closed && l.recoveryPoint.Load() < offset {
			return ErrClosed
		}
		l.syncer.request(l)
		<-ch
	}
}

// flushTicker flushes the log every flush.ms (interval at first) until
// Close, following changes of the interval (SetOptions signals resetTick);
// it ends when flush.ms is turned off, and SetOptions starts a new one when
// it is turned on again.
func (l *Log) flushTicker(interval time.Duration) {
	defer l.bg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-l.stopTick:
			return
		case <-l.resetTick:
			l.mu.Lock()
			next := l.opts.Load().FlushInterval
			if next <= 0 {
				l.mu.ticking = false
				l.mu.Unlock()
				return
			}
			l.mu.Unlock()
			if next != interval {
				interval = next
				t.Reset(interval)
			}
		case <-t.C:
			if l.nextOffset.Load() > l.recoveryPoint.Load() {
				l.syncer.request(l)
			}
		}
	}
}
