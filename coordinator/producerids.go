package coordinator

// Producer-id blocks of the embedded backend, as Kafka allocates them in
// ZooKeeper mode (ZkProducerIdManager.getNewProducerIdBlock): the last block
// handed out is recorded durably, and each new block starts after it. The
// record is written (fsync'd, atomically replaced) before any id of the new
// block is handed out, so a crash or restart can skip ids but never hand one
// out twice.
//
// The record is <data>/producer-id-block, JSON of the same fields as
// Kafka's /latest_producer_id_block znode, the ids as decimal strings (a
// JSON number loses int64 precision in many readers):
//
//	{"version": 1, "broker": 0, "block_start": "1000", "block_end": "1999"}
//
// block_start and block_end are the first and last id of the last block
// handed out, inclusive, as in Kafka; broker is the node that took it. A
// missing file means no block was ever handed out: the first starts at 0,
// as Kafka's does. These fields are part of the file format and must not
// change without a new version.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/sluice-io/sluice/engine"
)

const producerIDBlockFile = "producer-id-block"

// ErrProducerIDsExhausted is returned by AllocateProducerIDs when the next
// block would pass the largest int64 (Kafka: "Have exhausted all
// producerIds").
var ErrProducerIDsExhausted = errors.New("coordinator: producer ids exhausted")

type producerIDBlock struct {
	Version    int   `json:"version"`
	Broker     int32 `json:"broker"`
	BlockStart int64 `json:"block_start,string"`
	BlockEnd   int64 `json:"block_end,string"`
}

// AllocateProducerIDs implements Coordinator: it reads the last block
// handed out, records [first, first+n) as the new last block durably, and
// only then returns first.
func (e *Embedded) AllocateProducerIDs(n int64) (int64, error) {
	if n <= 0 {
		return 0, fmt.Errorf("coordinator: allocating %d producer ids", n)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.closed {
		return 0, ErrClosed
	}
	path := filepath.Join(filepath.Dir(e.path), producerIDBlockFile)
	first, err := nextProducerIDBlock(path)
	if err != nil {
		return 0, err
	}
	if n-1 > math.MaxInt64-first {
		return 0, fmt.Errorf("%w: the next block would start at %d", ErrProducerIDsExhausted, first)
	}
	rec := producerIDBlock{Version: 1, Broker: e.self.ID, BlockStart: first, BlockEnd: first + n - 1}
	data, err := json.Marshal(rec)
	if err != nil {
		return 0, fmt.Errorf("coordinator: %w", err)
	}
	if err := engine.WriteFileAtomic(path, append(data, '\n')); err != nil {
		return 0, fmt.Errorf("coordinator: recording producer-id block [%d, %d]: %w", rec.BlockStart, rec.BlockEnd, err)
	}
	return first, nil
}

// nextProducerIDBlock is where the block after the one recorded in path
// starts: 0 without the file. A file that does not parse, or records an
// impossible block, is an error wrapping engine.ErrCorrupt rather than a
// reason to start again at 0 (which would reuse ids).
func nextProducerIDBlock(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("coordinator: read %s: %w", path, err)
	}
	var rec producerIDBlock
	if err := json.Unmarshal(data, &rec); err != nil {
		pos := int64(0)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			pos = se.Offset
		}
		return 0, fmt.Errorf("%w: %s at position %d: %v", engine.ErrCorrupt, path, pos, err)
	}
	if rec.Version != 1 {
		return 0, fmt.Errorf("%w: %s: unknown version %d", engine.ErrCorrupt, path, rec.Version)
	}
	if rec.BlockStart < 0 || rec.BlockEnd < rec.BlockStart {
		return 0, fmt.Errorf("%w: %s: block [%d, %d]", engine.ErrCorrupt, path, rec.BlockStart, rec.BlockEnd)
	}
	if rec.BlockEnd == math.MaxInt64 {
		return 0, fmt.Errorf("%w: the last block ends at %d", ErrProducerIDsExhausted, rec.BlockEnd)
	}
	return rec.BlockEnd + 1, nil
}
