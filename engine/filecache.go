package engine

import (
	"container/list"
	"sync"
)

// fileCache bounds how many inactive segments keep their files open, so a
// log of many segments works under a file-descriptor limit: inactive
// segments open lazily on first read and the least recently read are closed
// once the bound is passed (unless a reader holds them). Active segments are
// pinned and never counted. One cache serves a whole Store.
//
// Lock order: cache.mu before segment.mu; segment.mu is never held while
// taking cache.mu.
type fileCache struct {
	mu    sync.Mutex
	limit int
	lru   list.List // of *segment, most recently used at the front
}

func newFileCache(limit int) *fileCache {
	return &fileCache{limit: limit}
}

// touch records a read of s and closes idle segments beyond the bound.
func (c *fileCache) touch(s *segment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.cacheElem != nil {
		c.lru.MoveToFront(s.cacheElem)
		return
	}
	s.cacheElem = c.lru.PushFront(s)
	for e := c.lru.Back(); e != nil && c.lru.Len() > c.limit; {
		prev := e.Prev()
		victim := e.Value.(*segment)
		if victim.tryCloseIdle() {
			c.lru.Remove(e)
			victim.cacheElem = nil
		}
		e = prev
	}
}

// forget drops s (retired, or becoming active).
func (c *fileCache) forget(s *segment) {
	c.mu.Lock()
	if s.cacheElem != nil {
		c.lru.Remove(s.cacheElem)
		s.cacheElem = nil
	}
	c.mu.Unlock()
}

// openCount is the number of segments the cache tracks as open.
func (c *fileCache) openCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
