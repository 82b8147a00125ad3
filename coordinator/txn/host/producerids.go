package host

import (
	"errors"
	"log/slog"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/coordinator"
)

// producerIDBlockSize is how many producer ids a broker takes from the
// metadata backend at a time: Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE.
const producerIDBlockSize = 1000

// ProducerIDs hands out producer ids from blocks the metadata backend
// allocates (Kafka's ZkProducerIdManager): a block is taken when the first
// id is asked for and again whenever the current one is used up. The
// backend records each block durably before returning it, so ids left
// unused when the broker stops are skipped, never handed out again. Its
// mu nests no other lock; it is held while the backend records a new
// block (a small file or znode written, once per 1000 ids), so requests
// wait for that write rather than hand out ids not yet recorded.
type ProducerIDs struct {
	// allocate is coordinator.Coordinator's AllocateProducerIDs.
	allocate func(n int64) (first int64, err error)
	log      *slog.Logger

	mu struct {
		sync.Mutex
		next, end int64 // the current block's unused ids: [next, end)
	}
}

// NewProducerIDs hands out the ids of blocks from allocate.
func NewProducerIDs(allocate func(n int64) (int64, error), log *slog.Logger) *ProducerIDs {
	return &ProducerIDs{allocate: allocate, log: log}
}

// Next returns a producer id never handed out before. A backend error
// (its record could not be written, or ids are exhausted) hands out
// nothing; the next call asks the backend again.
func (p *ProducerIDs) Next() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.next == p.mu.end {
		first, err := p.allocate(producerIDBlockSize)
		if err != nil {
			return -1, err
		}
		p.mu.next, p.mu.end = first, first+producerIDBlockSize
	}
	id := p.mu.next
	p.mu.next++
	return id, nil
}

// ID is Next as InitProducerId answers it: while no block can be recorded
// COORDINATOR_LOAD_IN_PROGRESS, which clients retry; exhausted ids
// UNKNOWN_SERVER_ERROR.
func (p *ProducerIDs) ID() (int64, int16) {
	id, err := p.Next()
	switch {
	case err == nil:
		return id, 0
	case errors.Is(err, coordinator.ErrProducerIDsExhausted):
		p.log.Error("InitProducerId", "err", err)
		return -1, kerr.UnknownServerError.Code
	default:
		p.log.Error("InitProducerId: allocating producer ids", "err", err)
		return -1, kerr.CoordinatorLoadInProgress.Code
	}
}
