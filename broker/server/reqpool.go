package server

// The request pool: the memory of requests being read or waiting to be
// handled, bounded by queued.max.request.bytes (P).
//
// Requests up to 64 KiB are read in the connection's 64 KiB read buffer,
// which it has anyway, and draw nothing. A larger request is read into the
// connection's region (region.go), and its bytes there are claimed from the
// pool as they arrive: the first claim waits for the request's first body
// byte, and each next one is made when the bytes claimed so far have all
// arrived, doubling the claim (at least 64 KiB, at most the request's size).
// A declared size reserves nothing: a request holds at most about twice
// what it has sent. A claim the pool cannot give waits on a channel, and
// the connection is not read meanwhile (Kafka mutes the channel): its
// sender is held back by TCP.
//
// Pages a finished request leaves in its region stay resident for the
// connection's next request (a producer sending multi-megabyte requests back
// to back reuses them: no allocation, no page fault, no copy) and stay
// counted; when a claim needs pages and the pool is full they are given
// back to the kernel, least recently used first. So the resident bytes of
// all regions never exceed P.
//
// Areas. P is cut in two, each with a lane:
//
//	small  P/8: requests up to 1 MiB; its lane is 1 MiB
//	big    the rest: larger requests; its lane is socket.request.max.bytes
//
// so ordinary clients, whose requests are small, go on being served while
// big requests wait, and big requests cannot take what small ones are
// kept. In an area, claims outside the lane may take the area's size less
// the lane. The lane belongs to one request at a time, its holder, which
// may also claim from the lane. A request that cannot claim outside the
// lane waits in the area's queue, first come first served; the head of the
// queue becomes the holder when there is none. The holder gives the lane up
// once its whole size is claimed (its bytes stay claimed until the request
// is handled), and the lane passes to the next in the queue.
//
// Deadlock. Requests that wait hold what they have claimed, and what they
// hold cannot be given back (those bytes were read from the socket), so
// requests that each hold part of an area and wait for more could wait for
// ever. The lane is what prevents it:
//   - The holder needs at most its size, and the lane is as large as the
//     area's largest request, so it waits only until the lane's earlier
//     claims are released. Those belong to earlier holders, which gave the
//     lane up with their whole size claimed: each is read whole or ends at
//     its receive bound (socket.request.receive.timeout.ms), then is handled,
//     and handling a request never waits for the pool. So the holder's wait
//     ends, and its own request is then read whole or ends at its bound.
//   - Every other waiter is in a first-come queue whose head becomes the
//     next holder; so each waiter in turn holds the lane, and none waits for
//     ever, however the others behave.
//   - The two areas are disjoint, so no wait in one depends on the other.
//
// (A handler that parks, JoinGroup and SyncGroup, holds its request's bytes
// until it answers; its wait is bounded by the group's rebalance timeout.)
//
// Lock order: requestPool.mu nests no other lock. Regions are given back to
// the kernel under it (madvise), which keeps the count exact.

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluice-io/sluice/config"
)

// growMin is the least claim a request waits for.
const growMin = 64 << 10

// errPoolClosed is the wait of a request cut short by the broker closing.
var errPoolClosed = errors.New("broker: closing")

// errPoolTimeout is a wait for request memory that reached the request's
// receive deadline.
var errPoolTimeout = errors.New("broker: request memory not granted before the request's receive deadline")

// area is a share of the pool (see the package note above).
type area struct {
	shared int64 // claims outside the lane may reach this
	lane   int64 // the lane: at least the area's largest request

	// Guarded by requestPool.mu:
	used       int64     // claimed outside the lane
	laneUsed   int64     // claimed in the lane
	holder     *region   // the lane's holder, nil if none
	holderWait *waiter   // the holder's claim, while it waits
	waiters    []*waiter // claims waiting for room outside the lane, first come first
}

// waiter is a claim waiting for memory.
type waiter struct {
	r       *region
	lo, hi  int64         // the claim: at least lo bytes, up to hi
	ready   chan struct{} // closed when granted
	granted bool
}

// requestPool is the pool of one broker.
type requestPool struct {
	limit      int64 // P; math.MaxInt64 / 4 for none
	maxRequest int64 // the largest request, rounded up to pages: a region's size
	small, big area

	mu struct {
		sync.Mutex
		resident   int64   // resident bytes of every region (page-rounded claims and cached pages)
		head, tail *region // regions with cached pages (resident > claim), least recently used first
		free       []*region
		closed     bool
	}
}

// newRequestPool makes the pool of a broker whose queued.max.request.bytes
// is limit (<= 0: no bound) and whose largest request is maxRequest.
func newRequestPool(limit int64, maxRequest int32) (*requestPool, error) {
	if limit <= 0 {
		limit = config.UnboundedPool
	}
	if need := config.MinRequestPool(maxRequest); limit < need {
		return nil, fmt.Errorf("broker: queued.max.request.bytes=%d is too small for socket.request.max.bytes=%d: an eighth of it is kept for requests up to 1 MiB and the rest must hold the largest request; it must be at least %d", limit, maxRequest, need)
	}
	p := &requestPool{limit: limit, maxRequest: config.PageUp(int64(maxRequest))}
	small := limit / 8
	p.small.lane = config.PageUp(min(config.SmallRequest, int64(maxRequest)))
	p.small.shared = small - p.small.lane
	p.big.lane = p.maxRequest
	p.big.shared = limit - small - p.big.lane
	return p, nil
}

// region returns a region for a connection, reserving one if none is free.
func (p *requestPool) region() (*region, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.mu.free); n > 0 {
		r := p.mu.free[n-1]
		p.mu.free = p.mu.free[:n-1]
		return r, nil
	}
	return mapRegion(p.maxRequest)
}

// putRegion takes back a connection's region when it closes, with its
// pages given back to the kernel.
func (p *requestPool) putRegion(r *region) {
	p.end(r)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.uncacheLocked(r)
	p.mu.resident -= r.resident
	r.release(0)
	if p.mu.closed {
		r.unmap()
		return
	}
	p.mu.free = append(p.mu.free, r)
}

// close unmaps the free regions; every connection must have ended.
func (p *requestPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.closed = true
	for _, r := range p.mu.free {
		r.unmap()
	}
	p.mu.free = nil
}

// begin starts a request of n bytes (more than fit the read buffer) in r.
func (p *requestPool) begin(r *region, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r.need = config.PageUp(n)
	r.area = &p.big
	if n <= config.SmallRequest {
		r.area = &p.small
	}
}

// grow extends the claim of r's request, all of whose claimed bytes have
// arrived: to twice the claim (at least growMin, at most the request's
// size) if the pool has it, else to as much as it has if that is at least
// growMin (or the rest of the request); otherwise it waits, until deadline
// (none if zero) or closing.
func (p *requestPool) grow(r *region, deadline time.Time, closing <-chan struct{}) error {
	p.mu.Lock()
	a := r.area
	hi := min(r.need, max(2*r.claim, growMin)) - r.claim
	lo := min(hi, growMin)
	if a.holder == r || len(a.waiters) == 0 { // no overtaking those who wait
		if p.tryLocked(r, lo, hi) > 0 {
			p.laneDoneLocked(r)
			p.mu.Unlock()
			return nil
		}
	}
	w := &waiter{r: r, lo: lo, hi: hi, ready: make(chan struct{})}
	if a.holder == r {
		a.holderWait = w
	} else {
		a.waiters = append(a.waiters, w)
	}
	p.wakeLocked(a)
	p.mu.Unlock()

	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	err := errPoolTimeout
	select {
	case <-w.ready:
		return nil
	case <-timeout:
	case <-closing:
		err = errPoolClosed
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if w.granted {
		return nil
	}
	if a.holderWait == w {
		a.holderWait = nil
	}
	for i, x := range a.waiters {
		if x == w {
			a.waiters = append(a.waiters[:i], a.waiters[i+1:]...)
			break
		}
	}
	return err
}

// end releases what r's request claimed (the request was handled, or it
// failed); its pages stay resident, cached for the connection's next
// request. It does nothing between requests.
func (p *requestPool) end(r *region) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a := r.area
	if a == nil {
		return
	}
	a.used -= r.claim - r.lane
	a.laneUsed -= r.lane
	if a.holder == r {
		a.holder = nil
	}
	r.claim, r.lane, r.need, r.area = 0, 0, 0, nil
	p.uncacheLocked(r)
	p.cacheLocked(r)
	p.wakeLocked(a)
}

// tryLocked claims for r between lo and hi bytes from its area, outside the
// lane if there is room, else, for the lane's holder, in the lane. It
// returns the bytes claimed, or 0.
func (p *requestPool) tryLocked(r *region, lo, hi int64) int64 {
	a := r.area
	var g int64
	if free := a.shared - a.used; free >= lo {
		g = min(hi, free)
		a.used += g
	} else if free := a.lane - a.laneUsed; a.holder == r && free >= lo {
		g = min(hi, free)
		a.laneUsed += g
		r.lane += g
	} else {
		return 0
	}
	r.claim += g
	p.uncacheLocked(r)
	if r.claim > r.resident {
		p.reserveLocked(r.claim - r.resident)
		r.resident = r.claim
	}
	p.cacheLocked(r)
	return g
}

// laneDoneLocked gives up the lane of r's area if r holds it and has
// claimed its whole request.
func (p *requestPool) laneDoneLocked(r *region) {
	if a := r.area; a.holder == r && r.claim >= r.need {
		a.holder = nil
		p.wakeLocked(a)
	}
}

// wakeLocked grants what waiting claims of a it can, the holder's first,
// then the queue's in order, and passes the lane to the head of the queue
// when it is free.
func (p *requestPool) wakeLocked(a *area) {
	for {
		if w := a.holderWait; w != nil && p.tryLocked(w.r, w.lo, w.hi) > 0 {
			a.holderWait = nil
			p.grantedLocked(w)
			continue
		}
		if len(a.waiters) == 0 {
			return
		}
		w := a.waiters[0]
		if p.tryLocked(w.r, w.lo, w.hi) > 0 {
			a.waiters = a.waiters[1:]
			p.grantedLocked(w)
			continue
		}
		if a.holder != nil {
			return
		}
		a.waiters = a.waiters[1:]
		a.holder, a.holderWait = w.r, w
	}
}

// grantedLocked wakes a granted waiter; a holder that has now claimed its
// whole request gives up the lane (the caller's loop passes it on).
func (p *requestPool) grantedLocked(w *waiter) {
	w.granted = true
	close(w.ready)
	if a := w.r.area; a.holder == w.r && w.r.claim >= w.r.need {
		a.holder = nil
	}
}

// reserveLocked makes room for n more resident bytes, giving back cached
// pages, least recently used first, while the regions would exceed the
// limit.
func (p *requestPool) reserveLocked(n int64) {
	for p.mu.resident+n > p.limit && p.mu.head != nil {
		v := p.mu.head
		p.uncacheLocked(v)
		p.mu.resident -= v.resident - v.claim
		v.release(v.claim)
	}
	p.mu.resident += n
}

// cacheLocked puts r at the end of the cached list if it has cached pages.
func (p *requestPool) cacheLocked(r *region) {
	if r.resident <= r.claim || r.cached {
		return
	}
	r.cached = true
	r.prev, r.next = p.mu.tail, nil
	if p.mu.tail != nil {
		p.mu.tail.next = r
	} else {
		p.mu.head = r
	}
	p.mu.tail = r
}

// uncacheLocked takes r off the cached list.
func (p *requestPool) uncacheLocked(r *region) {
	if !r.cached {
		return
	}
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		p.mu.head = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	} else {
		p.mu.tail = r.prev
	}
	r.prev, r.next, r.cached = nil, nil, false
}

// residentBytes is the resident memory of all regions, as counted.
func (p *requestPool) residentBytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.resident
}
