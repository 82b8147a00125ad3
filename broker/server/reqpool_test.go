package server

import (
	"errors"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/sluice-io/sluice/config"
	"golang.org/x/sys/unix"
)

// testPool is a pool whose regions are unmapped at the end of the test.
func testPool(t *testing.T, limit int64, maxRequest int32) *requestPool {
	t.Helper()
	p, err := newRequestPool(limit, maxRequest)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	return p
}

// take gets a region for a request of n bytes.
func take(t *testing.T, p *requestPool, n int64) *region {
	t.Helper()
	r, err := p.region()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.putRegion(r) })
	p.begin(r, n)
	return r
}

// growNow grows r's claim if the pool has the memory now.
func growNow(t *testing.T, p *requestPool, r *region) error {
	t.Helper()
	return p.grow(r, time.Now(), nil)
}

// residentPages counts r's resident pages as the kernel sees them.
func residentPages(t *testing.T, r *region) int64 {
	t.Helper()
	vec := make([]byte, len(r.mem)/int(config.PageSize))
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&r.mem[0])), uintptr(len(r.mem)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	var n int64
	for _, v := range vec {
		n += int64(v & 1)
	}
	return n
}

func TestRequestPoolSizes(t *testing.T) {
	if _, err := newRequestPool(64<<20, 100<<20); err == nil {
		t.Error("a pool smaller than the largest request was accepted")
	}
	min := config.MinRequestPool(100 << 20)
	if min-min/8 < 100<<20 || (min-1)-(min-1)/8 >= 100<<20 {
		t.Errorf("minRequestPool(100 MiB) = %d, not the least pool whose big area holds 100 MiB", min)
	}
	if _, err := newRequestPool(min, 100<<20); err != nil {
		t.Errorf("the least pool refused: %v", err)
	}
	if d := config.DefaultRequestPool(100 << 20); d < min || d < config.AvailableMemory()/8 || d%(1<<20) != 0 {
		t.Errorf("default pool %d: want at least %d and an eighth of %d, in MiB", d, min, config.AvailableMemory())
	}
	p := testPool(t, 64<<20, 8<<20)
	if p.small.shared+p.small.lane != 8<<20 || p.small.lane != 1<<20 || p.big.lane != 8<<20 || p.big.shared != 48<<20 {
		t.Errorf("areas: small %d+%d, big %d+%d", p.small.shared, p.small.lane, p.big.shared, p.big.lane)
	}
}

// A request's claim doubles as its bytes arrive, from 64 KiB to its size,
// and only claimed pages become resident; the next request of the
// connection reuses them.
func TestRequestPoolGrowsWithArrival(t *testing.T) {
	p := testPool(t, 64<<20, 8<<20)
	const n = 5<<20 + 100
	r := take(t, p, n)
	var claims []int64
	for r.claim < r.need {
		if err := growNow(t, p, r); err != nil {
			t.Fatal(err)
		}
		clear(r.mem[:r.claim]) // the bytes arrive
		claims = append(claims, r.claim)
		if got := residentPages(t, r) * config.PageSize; got > r.claim {
			t.Fatalf("%d bytes resident with %d claimed", got, r.claim)
		}
	}
	want := []int64{64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20, config.PageUp(n)}
	if len(claims) != len(want) {
		t.Fatalf("claims %v, want %v", claims, want)
	}
	for i := range want {
		if claims[i] != want[i] {
			t.Fatalf("claims %v, want %v", claims, want)
		}
	}
	p.end(r)
	if p.residentBytes() != config.PageUp(n) || p.big.used != 0 {
		t.Fatalf("after the request: %d resident, %d claimed; want its pages cached", p.residentBytes(), p.big.used)
	}
	p.begin(r, n)
	for r.claim < r.need {
		if err := growNow(t, p, r); err != nil {
			t.Fatal(err)
		}
	}
	if p.residentBytes() != config.PageUp(n) {
		t.Errorf("the second request made %d resident, want its own cached %d reused", p.residentBytes(), config.PageUp(n))
	}
}

// The regions' resident pages never pass the limit: cached pages are given
// back, least recently used first, when claims need them.
func TestRequestPoolReclaimsCachedPages(t *testing.T) {
	p := testPool(t, 32<<20, 4<<20) // big area 28 MiB: 24 outside the lane
	var rs []*region
	for range 8 { // 8 requests of 4 MiB, one after another: 32 MiB cached
		r := take(t, p, 4<<20)
		for r.claim < r.need {
			if err := growNow(t, p, r); err != nil {
				t.Fatal(err)
			}
			clear(r.mem[:r.claim])
		}
		p.end(r)
		rs = append(rs, r)
	}
	if got := p.residentBytes(); got != 32<<20 {
		t.Fatalf("%d resident, want 32 MiB cached", got)
	}
	// Medium requests (small area, 4 MiB) must take 4 MiB of the cache:
	// the oldest region's.
	for range 4 {
		r := take(t, p, 1<<20)
		for r.claim < r.need {
			if err := growNow(t, p, r); err != nil {
				t.Fatal(err)
			}
			clear(r.mem[:r.claim])
		}
	}
	if got := p.residentBytes(); got > 32<<20 {
		t.Errorf("%d resident, over the 32 MiB limit", got)
	}
	if residentPages(t, rs[0]) != 0 || rs[0].resident != 0 {
		t.Errorf("the least recently used region keeps %d pages (%d counted)", residentPages(t, rs[0]), rs[0].resident)
	}
	if got := residentPages(t, rs[7]) * config.PageSize; got != 4<<20 {
		t.Errorf("the most recently used region has %d bytes resident, want its 4 MiB kept", got)
	}
}

// Big requests cannot take the small area: with the big area full of
// stalled big requests, a medium request still gets memory at once.
func TestRequestPoolKeepsSmallShare(t *testing.T) {
	p := testPool(t, 32<<20, 4<<20)
	for range 7 { // 7 x 4 MiB fill the 28 MiB big area, lane included
		r := take(t, p, 4<<20)
		for r.claim < r.need && p.grow(r, time.Now(), nil) == nil {
		}
	}
	big := take(t, p, 4<<20)
	if err := p.grow(big, time.Now(), nil); !errors.Is(err, errPoolTimeout) {
		t.Fatalf("a big request got memory from a full big area: %v", err)
	}
	medium := take(t, p, 1<<20)
	for medium.claim < medium.need {
		if err := p.grow(medium, time.Now(), nil); err != nil {
			t.Fatalf("a medium request was refused while the small area is free: %v", err)
		}
	}
}

// Many big requests that each hold part of the big area and wait for more
// cannot deadlock: the lane lets them finish one after another. Each
// request grows until it is whole, then is handled (ended); every one must
// finish. Without the lane, 12 requests holding 2 MiB each of a 24 MiB
// area and each needing 4 MiB would all wait for ever.
func TestRequestPoolLaneAvoidsDeadlock(t *testing.T) {
	p := testPool(t, 32<<20, 4<<20) // big area: 24 MiB outside the lane, 4 MiB lane
	const requests = 12
	rs := make([]*region, requests)
	for i := range rs {
		rs[i] = take(t, p, 4<<20)
	}
	// Each takes its first 2 MiB (64 KiB, 128, 256, 512, 1 MiB, 2 MiB): the
	// area outside the lane is then full.
	for _, r := range rs {
		for r.claim < 2<<20 {
			if err := growNow(t, p, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if free := p.big.shared - p.big.used; free != 0 {
		t.Fatalf("%d bytes still free outside the lane", free)
	}
	deadline := time.Now().Add(20 * time.Second)
	closing := make(chan struct{})
	defer close(closing)
	var wg sync.WaitGroup
	errs := make(chan error, requests)
	for _, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r.claim < r.need {
				if err := p.grow(r, deadline, closing); err != nil {
					errs <- err
					return
				}
			}
			p.end(r) // read whole, handled
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a request did not get its memory: %v", err)
	}
	if p.big.used != 0 || p.big.laneUsed != 0 || p.big.holder != nil || len(p.big.waiters) != 0 {
		t.Errorf("after every request: used %d, lane %d, holder %v, %d waiting", p.big.used, p.big.laneUsed, p.big.holder, len(p.big.waiters))
	}
}

// A wait ends at the deadline, or when the broker closes, and leaves
// nothing behind.
func TestRequestPoolWaitEnds(t *testing.T) {
	p := testPool(t, 32<<20, 4<<20)
	for range 7 {
		r := take(t, p, 4<<20)
		for r.claim < r.need && p.grow(r, time.Now(), nil) == nil {
		}
	}
	r := take(t, p, 4<<20)
	if err := p.grow(r, time.Now().Add(50*time.Millisecond), nil); !errors.Is(err, errPoolTimeout) {
		t.Errorf("wait past its deadline: %v", err)
	}
	closing := make(chan struct{})
	done := make(chan error)
	go func() { done <- p.grow(r, time.Time{}, closing) }()
	close(closing)
	select {
	case err := <-done:
		if !errors.Is(err, errPoolClosed) {
			t.Errorf("wait when closing: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a wait did not end when the broker closed")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.big.waiters) != 0 || p.big.holderWait != nil {
		t.Errorf("waiters left: %d, holder's %v", len(p.big.waiters), p.big.holderWait)
	}
}
