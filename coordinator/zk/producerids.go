package zk

// Producer-id blocks from /latest_producer_id_block (doc.go), as Kafka's
// ZkProducerIdManager.getNewProducerIdBlock takes them: read the last block
// handed out and the znode's version, write the block after it with a
// Set conditional on that version, and start again from the read when
// another broker wrote first (BadVersion). Two brokers therefore never get
// overlapping blocks, and a broker hands out no id of a block before the
// write that makes it its own has succeeded.

import (
	"errors"
	"fmt"
	"math"

	gozk "github.com/go-zookeeper/zk"

	"github.com/sluice-io/sluice/coordinator"
)

// AllocateProducerIDBlock takes the next block of size producer ids for
// broker and returns its first id: the block is [first, first+size-1].
// The first block of a cluster starts at 0 (the znode missing or empty, as
// Kafka creates it). Once a block would pass the largest int64 the error
// wraps coordinator.ErrProducerIDsExhausted. size is at most
// math.MaxInt32, the largest block Kafka reads back (ProducerIDBlockSize
// is Kafka's).
func (c *Client) AllocateProducerIDBlock(broker int32, size int64) (first int64, err error) {
	if size <= 0 || size > math.MaxInt32 {
		return 0, fmt.Errorf("zk: a producer-id block of %d ids", size)
	}
	const path = ProducerIDBlockPath
	p := c.abs(path)
	for {
		data, stat, err := c.conn.Get(p)
		missing := errors.Is(err, gozk.ErrNoNode)
		if err != nil && !missing {
			return 0, fmt.Errorf("zk: read %s: %w", path, err)
		}
		first = 0
		if !missing {
			last, ok, err := DecodeProducerIDBlock(data)
			if err != nil {
				return 0, err
			}
			if ok {
				if last.Last == math.MaxInt64 {
					return 0, fmt.Errorf("%w: the last block of %s ends at %d", coordinator.ErrProducerIDsExhausted, path, last.Last)
				}
				first = last.Last + 1
			}
		}
		if size-1 > math.MaxInt64-first {
			return 0, fmt.Errorf("%w: a block of %d from %d passes the largest id", coordinator.ErrProducerIDsExhausted, size, first)
		}
		block := EncodeProducerIDBlock(ProducerIDBlock{Broker: broker, First: first, Last: first + size - 1})
		if missing { // at the chroot's top: no parent to create
			_, err = c.conn.Create(p, block, 0, openACL)
		} else {
			_, err = c.conn.Set(p, block, stat.Version)
		}
		switch {
		case err == nil:
			return first, nil
		case errors.Is(err, gozk.ErrBadVersion), errors.Is(err, gozk.ErrNodeExists):
			continue // another broker took a block first: read its
		default:
			return 0, fmt.Errorf("zk: write %s: %w", path, err)
		}
	}
}
