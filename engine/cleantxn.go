package engine

// Transactions as a cleaning pass meets them, after Kafka 3.9's
// CleanedTransactionMetadata: which data batches belong to aborted
// transactions (the pass drops their records, and the offset map never
// holds them), and which transaction markers no longer guard any record
// (they may go once their delete horizon passes; cleanfilter.go).
//
// A pass reads the log's batches in offset order. It is given the aborted
// transactions overlapping the range it reads (Log.AbortedTxns: producer,
// first offset, abort marker) and walks them by first offset: once the
// pass reaches a transaction's first offset, that producer's transactional
// data batches are the aborted transaction's until its abort marker. Any
// other transactional data batch belongs to a transaction that committed:
// the range a pass reads stops before the log's first unstable offset
// (cleaner.go), so no transaction in it is still open.
//
// A marker is removable when no batch of its transaction was met since
// the producer's previous marker in this pass: an abort marker whose
// aborted batches are all gone, a commit marker whose committed batches are
// all gone (compacted away: a batch whose records all go is dropped, unless
// it is its producer's last, which stays empty and still counts as met).
// Passes read the log from its first segment, so "met in this pass" is
// "still in the log". An empty control batch is removable. A marker of a
// type other than abort and commit is never removable.
//
// The .txnindex of a cleaned segment keeps only the entries of the abort
// markers that are not removable (Kafka's cleanedIndex): an entry without
// aborted records to drop serves no read_committed fetch, and an entry must
// not outlive its marker, whose arrival a read_committed consumer waits
// for to stop dropping the producer's batches. So an aborted transaction's
// entry goes in the first pass that finds its records gone, its marker at
// its delete horizon later.

import (
	"cmp"
	"slices"
)

// cleanTxns is the transaction state of one walk over a log (the offset
// map's, or the cleaning's). Its slices and maps are reused across passes.
type cleanTxns struct {
	aborted []AbortedTxn // the walk's aborted transactions, by first offset
	next    int          // aborted[next:] not yet reached
	// open maps each producer whose aborted transaction the walk has
	// reached, and whose abort marker it has not, to that transaction.
	open map[int64]openAbort
	// committed holds the producers with a transactional data batch met
	// since their last marker that is not aborted.
	committed map[int64]struct{}
	kept      []AbortedTxn // entries of the abort markers kept, by marker offset
}

type openAbort struct {
	txn  AbortedTxn
	seen bool // a batch of it was met
}

// reset starts a walk over the aborted transactions in txns, which it
// sorts and keeps.
func (t *cleanTxns) reset(txns []AbortedTxn) {
	sortByFirstOffset(txns)
	t.aborted, t.next = txns, 0
	if t.open == nil {
		t.open, t.committed = map[int64]openAbort{}, map[int64]struct{}{}
	}
	clear(t.open)
	clear(t.committed)
	t.kept = t.kept[:0]
}

func sortByFirstOffset(txns []AbortedTxn) {
	slices.SortFunc(txns, func(a, b AbortedTxn) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
}

// reach opens the aborted transactions that start at or before offset.
func (t *cleanTxns) reach(offset int64) {
	for ; t.next < len(t.aborted) && t.aborted[t.next].FirstOffset <= offset; t.next++ {
		a := t.aborted[t.next]
		if _, ok := t.open[a.ProducerID]; !ok {
			t.open[a.ProducerID] = openAbort{txn: a}
		}
	}
}

// onData notes the data batch h and reports whether it belongs to an
// aborted transaction.
func (t *cleanTxns) onData(h *BatchHeader) bool {
	t.reach(h.LastOffset())
	if !h.Transactional() || h.ProducerID < 0 {
		return false
	}
	if a, ok := t.openAt(h.ProducerID, h.BaseOffset); ok {
		if !a.seen {
			a.seen = true
			t.open[h.ProducerID] = a
		}
		return true
	}
	t.committed[h.ProducerID] = struct{}{}
	return false
}

// openAt is producer id's aborted transaction open at offset. One whose
// marker offset is behind offset is over, its marker gone although its
// entry was not (a log whose index disagrees with it): it is forgotten, so
// it cannot take the producer's later transactions for aborted ones.
func (t *cleanTxns) openAt(id, offset int64) (openAbort, bool) {
	a, ok := t.open[id]
	if ok && offset > a.txn.LastOffset {
		delete(t.open, id)
		return openAbort{}, false
	}
	return a, ok
}

func (t *cleanTxns) hasCommitted(id int64) bool {
	_, ok := t.committed[id]
	return ok
}

// onControl notes the control batch b with header h and reports whether
// it is removable (see the top of the file). An abort marker that is not
// has its entry added to kept.
func (t *cleanTxns) onControl(h *BatchHeader, b []byte) bool {
	t.reach(h.LastOffset())
	if h.NumRecords == 0 {
		return true // an emptied marker: its transaction is long gone
	}
	typ, parsed := markerType(b, h)
	if !parsed {
		return false // not a marker of a transaction the engine knows
	}
	switch typ {
	case ControlAbort:
		a, ok := t.openAt(h.ProducerID, h.BaseOffset)
		delete(t.open, h.ProducerID)
		if ok && a.seen {
			t.kept = append(t.kept, a.txn)
			return false
		}
		return true
	case ControlCommit:
		seen := t.hasCommitted(h.ProducerID)
		delete(t.committed, h.ProducerID)
		return !seen
	}
	return false
}

// anyMarkerIn reports whether one of the walk's aborted transactions has
// its marker in [from, to).
func (t *cleanTxns) anyMarkerIn(from, to int64) bool {
	for _, a := range t.aborted {
		if a.LastOffset >= from && a.LastOffset < to {
			return true
		}
	}
	return false
}

// markerType is the type of the control batch b (header h) and whether it
// has a record that parses.
func markerType(b []byte, h *BatchHeader) (ControlType, bool) {
	if h.NumRecords == 0 {
		return -1, false
	}
	cr, err := ParseControlBatch(b)
	return cr.Type, err == nil
}
