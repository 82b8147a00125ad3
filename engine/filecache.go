package engine

import (
	"container/list"
	"sync"
)

// fileCache bounds how many segments keep their log's descriptor open, so
// a Store of many partitions, or a log of many segments, works under a
// file-descriptor limit: a segment's index files hold no descriptor
// (index.go), and its log's is opened on first use (an append or a read)
// and closed once the bound is passed, the least recently used first,
// unless someone holds it. The active segments count like the others: an
// idle partition's descriptor is closed and reopened by its next append or
// read. One cache serves a whole Store.
//
// The order is CLOCK's, LRU's approximation: a use sets the segment's used
// bit with no lock (appends and reads of open segments never take mu), and
// the hand, sweeping the ring of open segments, clears set bits and closes
// the first idle segment whose bit is clear. A segment held by a reader or
// the appender is not closed: the bound can be passed by as many segments
// as are held at once.
//
// Invariant: every segment whose log is open is in the ring once the
// acquire that opened it returns.
//
// Lock order: cache.mu before segment.mu; segment.mu is never held while
// taking cache.mu.
type fileCache struct {
	mu    sync.Mutex
	limit int
	ring  list.List     // of *segment whose log is open
	hand  *list.Element // the next segment the sweep looks at; nil: the front
}

func newFileCache(limit int) *fileCache {
	return &fileCache{limit: limit}
}

// add tracks s, whose log descriptor was just opened, and closes idle
// segments beyond the bound.
func (c *fileCache) add(s *segment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.used.Store(true)
	if s.cacheElem == nil {
		// Just behind the hand: the last the sweep reaches.
		if c.hand != nil {
			s.cacheElem = c.ring.InsertBefore(s, c.hand)
		} else {
			s.cacheElem = c.ring.PushBack(s)
		}
	}
	// Two turns of the hand find an idle segment if there is one: the
	// first clears every used bit.
	for steps := 2 * c.ring.Len(); c.ring.Len() > c.limit && steps > 0; steps-- {
		e := c.hand
		if e == nil {
			e = c.ring.Front()
		}
		c.hand = e.Next()
		victim := e.Value.(*segment)
		if victim.used.Swap(false) {
			continue
		}
		if victim.tryCloseIdle() {
			c.removeLocked(victim)
		}
	}
}

func (c *fileCache) removeLocked(s *segment) {
	if s.cacheElem == nil {
		return
	}
	if c.hand == s.cacheElem {
		c.hand = s.cacheElem.Next()
	}
	c.ring.Remove(s.cacheElem)
	s.cacheElem = nil
}

// forget drops s (retired).
func (c *fileCache) forget(s *segment) {
	c.mu.Lock()
	c.removeLocked(s)
	c.mu.Unlock()
}

// openCount is the number of segments the cache tracks as open.
func (c *fileCache) openCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ring.Len()
}
