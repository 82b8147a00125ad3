package broker

import (
	"sync"

	"github.com/sluice-io/sluice/coordinator"
)

// producerIDBlockSize is how many producer ids the broker takes from the
// coordinator at a time: Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE.
const producerIDBlockSize = 1000

// producerIDs hands out producer ids from blocks the coordinator allocates
// (Kafka's ZkProducerIdManager): a block is taken when the first id is
// asked for and again whenever the current one is used up. The coordinator
// records each block durably before returning it, so ids left unused when
// the broker stops are skipped, never handed out again.
type producerIDs struct {
	coord coordinator.Coordinator

	mu struct {
		sync.Mutex
		next, end int64 // the current block's unused ids: [next, end)
	}
}

// next returns a producer id never handed out before. A coordinator error
// (its record could not be written, or ids are exhausted) hands out
// nothing; the next call asks the coordinator again.
func (p *producerIDs) next() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.next == p.mu.end {
		first, err := p.coord.AllocateProducerIDs(producerIDBlockSize)
		if err != nil {
			return -1, err
		}
		p.mu.next, p.mu.end = first, first+producerIDBlockSize
	}
	id := p.mu.next
	p.mu.next++
	return id, nil
}
