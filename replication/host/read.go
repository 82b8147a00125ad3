package host

import (
	"bytes"
	"fmt"

	"github.com/sluice-io/sluice/engine"
)

// Reading a partition whole, as a coordinator loads its state from it
// (the groups of __consumer_offsets, the transactions of
// __transaction_state).

// ReadRecords calls fn for every record of the partition's data batches up
// to its log end, with its key and value copied.
func (p *Partition) ReadRecords(fn func(engine.Record) error) error {
	it := engine.NewRecordIterator(nil)
	return p.ReadChunks(func(buf []byte, off int64) error {
		*it = *engine.NewRecordIterator(buf)
		for it.Next() {
			r := it.Record()
			rec := engine.Record{Offset: r.Offset, Timestamp: r.Timestamp, Key: bytes.Clone(r.Key)}
			if r.Value != nil {
				rec.Value = bytes.Clone(r.Value)
			}
			if err := fn(rec); err != nil {
				return err
			}
		}
		if err := it.Err(); err != nil {
			return fmt.Errorf("replication/host: read %s-%d at %d: %w", p.Topic, p.Index, off, err)
		}
		return nil
	})
}

// ReadChunks reads the partition from its log start to its log end (not
// the high watermark: a coordinator loads what its leader wrote, as
// Kafka's loadGroupsAndOffsets and TransactionStateManager read to the log
// end) in chunks of whole batches of
// up to 1 MiB, each copied into a buffer the next reuses, and calls fn
// with each chunk and the offset it starts at.
func (p *Partition) ReadChunks(fn func(buf []byte, off int64) error) error {
	end := p.Log.EndOffset()
	var buf []byte
	for off := p.Log.StartOffset(); off < end; {
		v, err := p.Log.Read(off, 1<<20, end)
		if err != nil {
			return fmt.Errorf("replication/host: read %s-%d at %d: %w", p.Topic, p.Index, off, err)
		}
		if v.Len() == 0 {
			v.Release()
			return nil
		}
		buf, err = v.AppendTo(buf[:0])
		v.Release()
		if err != nil {
			return fmt.Errorf("replication/host: read %s-%d at %d: %w", p.Topic, p.Index, off, err)
		}
		if err := fn(buf, off); err != nil {
			return err
		}
		next := off
		for pos := 0; pos < len(buf); {
			h, err := engine.ParseBatchHeader(buf[pos:])
			if err != nil || h.Size() > int64(len(buf)-pos) || h.LastOffset() < next {
				return fmt.Errorf("replication/host: read %s-%d at %d: %w (%v)", p.Topic, p.Index, next, engine.ErrCorrupt, err)
			}
			next = h.LastOffset() + 1
			pos += int(h.Size())
		}
		off = next
	}
	return nil
}
