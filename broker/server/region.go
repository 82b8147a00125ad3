package server

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// A region is the memory a connection reads its requests above 64 KiB
// into: an anonymous private mapping as large as the largest request the
// broker accepts, made once per connection that sends such a request and
// reused by its later requests and, once it closes, by other connections.
//
// The mapping is made with MAP_NORESERVE and reserves address space only:
// a page becomes resident when a request's bytes are first written to it,
// so a region costs what its requests have sent, never what they declared.
// The request pool (reqpool.go) counts those pages and hands them back to
// the kernel (MADV_DONTNEED: the next write finds a zeroed page) when other
// requests need the memory. Transparent huge pages are turned off for the
// mapping (MADV_NOHUGEPAGE): with them, a few bytes written could make 2
// MiB resident and the pool's count would be wrong.
//
// Regions are outside the Go heap: the garbage collector neither scans nor
// counts them, and GOGC adds nothing to what they hold. They are unmapped
// when the broker closes, after every connection has ended.
type region struct {
	mem []byte // the mapping, len a multiple of the page size

	// Guarded by requestPool.mu:
	claim    int64 // [0, claim) may be written by the request in hand; a multiple of the page size
	resident int64 // [0, resident) may be resident; >= claim while a request is in hand
	need     int64 // the request in hand's size, rounded up to the page size; 0 between requests
	lane     int64 // of claim, the bytes held in its area's lane
	area     *area // the area the request in hand draws on; nil between requests
	cached   bool  // on requestPool.mu.cached: resident > claim
	prev     *region
	next     *region // requestPool.mu.cached, least recently used first
}

// mapRegion reserves a region of size bytes (a multiple of the page size).
func mapRegion(size int64) (*region, error) {
	mem, err := unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("broker: mapping %d bytes of request memory: %w", size, err)
	}
	if err := unix.Madvise(mem, unix.MADV_NOHUGEPAGE); err != nil {
		unix.Munmap(mem)
		return nil, fmt.Errorf("broker: madvise(MADV_NOHUGEPAGE) on request memory: %w", err)
	}
	return &region{mem: mem}, nil
}

// release gives the pages of [from, resident) back to the kernel.
func (r *region) release(from int64) {
	if from >= r.resident {
		return
	}
	if err := unix.Madvise(r.mem[from:r.resident], unix.MADV_DONTNEED); err != nil {
		// Only a bad range fails, which is a broken invariant.
		panic(fmt.Sprintf("broker: madvise(MADV_DONTNEED) on request memory [%d, %d): %v", from, r.resident, err))
	}
	r.resident = from
}

// unmap ends the mapping; the region must not be used after.
func (r *region) unmap() {
	unix.Munmap(r.mem)
	r.mem = nil
}
