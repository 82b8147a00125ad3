package txn

import (
	"maps"
	"slices"
)

// Load applies one record read from the partition, in log order, before
// Loaded is stepped: the last record of a transactional id is its state,
// a tombstone removes it. A record that does not parse is returned as an
// ErrCorrupt error and changes nothing; the caller names its offset.
func (c *Coordinator) Load(key, value []byte) error {
	m, tombstone, err := DecodeRecord(key, value)
	if err != nil {
		return err
	}
	if tombstone {
		delete(c.txns, m.TransactionalID)
		return nil
	}
	if s, ok := c.txns[m.TransactionalID]; ok {
		m.LastProducerID, m.LastEpoch = s.meta.LastProducerID, s.meta.LastEpoch
	}
	c.txns[m.TransactionalID] = &txnState{meta: m}
	return nil
}

func (c *Coordinator) loaded() {
	for _, id := range slices.Sorted(maps.Keys(c.txns)) {
		s := c.txns[id]
		switch s.meta.State {
		case PrepareCommit, PrepareAbort:
			c.sendMarkers(s)
		case Dead, PrepareEpochFence: // never written by Kafka or sluice
			delete(c.txns, id)
		}
	}
}
