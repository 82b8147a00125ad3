package txn

// What the coordinator does on each request and check, after Kafka 3.9's
// TransactionCoordinator (handleInitProducerId, handleAddPartitionsToTransaction,
// endTransaction, abortTimedOutTransactions) and TransactionMetadata's
// prepare* methods. Every decision that changes state becomes a Write;
// its request is answered when the WriteResult comes.

import (
	"maps"
	"slices"

	"github.com/sluice-io/sluice/coordinator/group"
	"github.com/sluice-io/sluice/engine"
	"github.com/twmb/franz-go/pkg/kerr"
)

// OffsetsTopic is the group coordinator's topic, whose partition
// AddOffsetsToTxn adds.
const OffsetsTopic = "__consumer_offsets"

func groupPartition(g string, n int32) int32 { return group.PartitionFor(g, n) }

// answer queues the response to r with code, translating PRODUCER_FENCED
// for versions that predate it (InitProducerId < 4, the others < 2: Kafka's
// KafkaApis answers them INVALID_PRODUCER_EPOCH).
func (c *Coordinator) answer(r *request, code int16, pid int64, epoch int16) {
	if r == nil {
		return
	}
	if code == kerr.ProducerFenced.Code && r.legacy {
		code = kerr.InvalidProducerEpoch.Code
	}
	c.rd.Answers = append(c.rd.Answers, Answer{Req: r.req, Code: code, ProducerID: pid, Epoch: epoch})
}

func (c *Coordinator) fail(r *request, code int16) { c.answer(r, code, -1, -1) }

// write queues the record of s's pending transition.
func (c *Coordinator) write(s *txnState, kind flightKind, r *request, fence bool) {
	c.nextID++
	w := Write{ID: c.nextID, TransactionalID: s.meta.TransactionalID, Key: EncodeKey(s.meta.TransactionalID)}
	if kind != flightDead {
		m := s.meta
		t := s.pending
		m.State, m.ProducerID, m.Epoch, m.TimeoutMs = t.to, t.producerID, t.epoch, t.timeoutMs
		m.Partitions, m.StartMs, m.UpdateMs = t.partitions, t.startMs, t.updateMs
		w.Value = EncodeValue(m, c.opts.ValueVersion)
	}
	c.flights[w.ID] = &flight{kind: kind, id: s.meta.TransactionalID, req: r, fence: fence, write: w}
	c.rd.Writes = append(c.rd.Writes, w)
}

func (c *Coordinator) initProducerID(ev InitProducerID) {
	r := &request{req: ev.Req, legacy: ev.Version < 4}
	switch {
	case ev.TransactionalID == "":
		c.fail(r, kerr.InvalidRequest.Code)
		return
	case ev.TimeoutMs <= 0 || ev.TimeoutMs > c.opts.MaxTimeoutMs:
		c.fail(r, kerr.InvalidTransactionTimeout.Code)
		return
	}
	s, ok := c.txns[ev.TransactionalID]
	if !ok {
		pid, code := c.opts.NewProducerID()
		if code != 0 {
			c.fail(r, code)
			return
		}
		s = &txnState{meta: Metadata{TransactionalID: ev.TransactionalID, ProducerID: pid, Epoch: -1,
			LastProducerID: -1, LastEpoch: -1, TimeoutMs: ev.TimeoutMs, State: Empty, StartMs: -1, UpdateMs: c.nowMs}}
		c.txns[ev.TransactionalID] = s
	}
	m := &s.meta
	expected := ev.ProducerID >= 0
	switch {
	case s.pending != nil:
		c.fail(r, kerr.ConcurrentTransactions.Code)
		return
	case expected && !(m.Epoch == -1 || ev.ProducerID == m.ProducerID ||
		ev.ProducerID == m.LastProducerID && epochExhausted(ev.Epoch)):
		c.fail(r, kerr.ProducerFenced.Code)
		return
	}
	switch m.State {
	case PrepareCommit, PrepareAbort:
		c.fail(r, kerr.ConcurrentTransactions.Code)
	case Ongoing:
		// Abort it first under a bumped epoch, which fences the producer;
		// the client is answered CONCURRENT_TRANSACTIONS and retries,
		// bumping the epoch again (Kafka's prepareFenceProducerEpoch).
		r.success = kerr.ConcurrentTransactions.Code
		c.fenceAndAbort(s, r)
	case Empty, CompleteCommit, CompleteAbort:
		t := m.transit(Empty, c.nowMs)
		t.timeoutMs, t.partitions, t.startMs, t.lastID = ev.TimeoutMs, nil, -1, m.ProducerID
		if epochExhausted(m.Epoch) && (!expected || ev.Epoch == m.Epoch) {
			pid, code := c.opts.NewProducerID()
			if code != 0 {
				c.fail(r, code)
				return
			}
			t.lastEpoch = -1
			if expected {
				t.lastEpoch = m.Epoch
			}
			t.producerID, t.epoch = pid, 0
		} else {
			// prepareIncrementProducerEpoch. An exhausted epoch comes here
			// only with an expected epoch other than the current one, and
			// is never bumped.
			bumped := m.Epoch + 1
			switch {
			case !expected:
				t.epoch, t.lastEpoch = bumped, -1
			case m.Epoch == -1 || ev.Epoch == m.Epoch:
				t.epoch, t.lastEpoch = bumped, m.Epoch
			case ev.Epoch == m.LastEpoch: // a retry of a bump it never heard of
				t.epoch, t.lastEpoch = m.Epoch, m.LastEpoch
			default:
				c.fail(r, kerr.ProducerFenced.Code)
				return
			}
		}
		s.pending = t
		c.write(s, flightInit, r, false)
	default: // Dead, PrepareEpochFence: never left in memory without pending
		panic("txn: InitProducerId of " + ev.TransactionalID + " in state " + m.State.String())
	}
}

// check is the common validation of AddPartitions, AddOffsets and EndTxn
// from a client (Kafka's order): the id, its producer id, its epoch,
// then a transition in flight.
func (c *Coordinator) check(r *request, id string, pid int64, epoch int16) *txnState {
	s, ok := c.txns[id]
	switch {
	case id == "":
		c.fail(r, kerr.InvalidRequest.Code)
	case !ok || s.meta.ProducerID != pid:
		c.fail(r, kerr.InvalidProducerIDMapping.Code)
	case s.meta.Epoch != epoch:
		c.fail(r, kerr.ProducerFenced.Code)
	case s.pending != nil:
		c.fail(r, kerr.ConcurrentTransactions.Code)
	default:
		return s
	}
	return nil
}

func (c *Coordinator) addPartitions(req uint64, version int16, id string, pid int64, epoch int16, ps []engine.Partition) {
	r := &request{req: req, legacy: version < 2}
	s := c.check(r, id, pid, epoch)
	if s == nil {
		return
	}
	m := &s.meta
	switch m.State {
	case PrepareCommit, PrepareAbort:
		c.fail(r, kerr.ConcurrentTransactions.Code)
		return
	case Ongoing:
		if len(union(m.Partitions, ps)) == len(m.Partitions) {
			c.answer(r, 0, -1, -1) // nothing new: nothing to write
			return
		}
	}
	// prepareAddPartitions: a new transaction starts now.
	t := m.transit(Ongoing, c.nowMs)
	if m.State != Ongoing {
		t.startMs, t.partitions = c.nowMs, nil
	}
	t.partitions = union(t.partitions, ps)
	s.pending = t
	c.write(s, flightAdd, r, false)
}

func (c *Coordinator) endTxn(ev EndTxn) {
	r := &request{req: ev.Req, legacy: ev.Version < 2}
	s := c.check(r, ev.TransactionalID, ev.ProducerID, ev.Epoch)
	if s == nil {
		return
	}
	st := s.meta.State
	switch {
	case st == Ongoing:
		to := PrepareAbort
		if ev.Commit {
			to = PrepareCommit
		}
		c.prepare(s, to, r, false)
	case st == CompleteCommit && ev.Commit || st == CompleteAbort && !ev.Commit:
		c.answer(r, 0, -1, -1) // a retry of an ended transaction
	case st == PrepareCommit && ev.Commit || st == PrepareAbort && !ev.Commit:
		c.fail(r, kerr.ConcurrentTransactions.Code)
	default: // Empty, or the other outcome than the one decided
		c.fail(r, kerr.InvalidTxnState.Code)
	}
}

// prepare writes s's move from Ongoing to PrepareCommit or PrepareAbort.
func (c *Coordinator) prepare(s *txnState, to State, r *request, fence bool) {
	t := s.meta.transit(to, c.nowMs)
	s.pending = t
	c.write(s, flightPrepare, r, fence)
}

// fenceAndAbort bumps the epoch of s's ongoing transaction, in memory at
// once (from now on the old epoch is fenced), and writes its abort under
// the new epoch (Kafka: prepareFenceProducerEpoch, then endTransaction
// with isFromClient false, whose PrepareEpochFence becomes PrepareAbort).
// If an earlier fence's record failed the epoch is already bumped.
func (c *Coordinator) fenceAndAbort(s *txnState, r *request) {
	m := &s.meta
	if !s.fenceFailed {
		if m.Epoch == 32767 {
			panic("txn: fencing " + m.TransactionalID + " past the largest epoch")
		}
		m.Epoch++
		m.LastEpoch = -1
	}
	c.prepare(s, PrepareAbort, r, true)
}

func (c *Coordinator) abortTimedOut() {
	for _, id := range slices.Sorted(maps.Keys(c.txns)) {
		s := c.txns[id]
		if s.meta.State == Ongoing && s.pending == nil && s.meta.StartMs+int64(s.meta.TimeoutMs) < c.nowMs {
			c.fenceAndAbort(s, nil)
		}
	}
}

func (c *Coordinator) expireIDs() {
	for _, id := range slices.Sorted(maps.Keys(c.txns)) {
		s := c.txns[id]
		switch s.meta.State {
		case Empty, CompleteCommit, CompleteAbort:
			if s.pending == nil && s.meta.UpdateMs <= c.nowMs-c.opts.ExpirationMs {
				s.pending = s.meta.transit(Dead, c.nowMs)
				c.write(s, flightDead, nil, false)
			}
		}
	}
}

// writeError is the code a request is answered with when its record
// failed (Kafka's appendTransactionToLog).
func writeError(code int16) int16 {
	switch code {
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code,
		kerr.NotEnoughReplicasAfterAppend.Code, kerr.RequestTimedOut.Code:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return kerr.NotCoordinator.Code
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code:
		return kerr.UnknownServerError.Code
	}
	return code
}

func (c *Coordinator) written(ev WriteResult) {
	f, ok := c.flights[ev.ID]
	if !ok {
		return // a duplicate
	}
	s := c.txns[f.id]
	if ev.Code != 0 {
		if f.kind == flightComplete {
			c.unwritten[ev.ID] = struct{}{} // retried until written
			return
		}
		delete(c.flights, ev.ID)
		s.pending = nil
		if f.fence {
			s.fenceFailed = true
		}
		c.fail(f.req, writeError(ev.Code))
		return
	}
	delete(c.flights, ev.ID)
	t := s.pending
	s.pending = nil
	if f.kind == flightDead {
		delete(c.txns, f.id)
		return
	}
	s.apply(t)
	switch f.kind {
	case flightInit:
		c.answer(f.req, 0, t.producerID, t.epoch)
	case flightAdd:
		c.answer(f.req, 0, -1, -1)
	case flightPrepare:
		if f.req != nil {
			c.answer(f.req, f.req.success, -1, -1)
		}
		c.sendMarkers(s)
	}
}

// sendMarkers queues the markers of s, just written in a Prepare state.
func (c *Coordinator) sendMarkers(s *txnState) {
	m := &s.meta
	s.markersLeft = map[engine.Partition]bool{}
	for _, p := range m.Partitions {
		c.nextID++
		mk := Marker{ID: c.nextID, Partition: p, ProducerID: m.ProducerID, Epoch: m.Epoch,
			Commit: m.State == PrepareCommit, CoordinatorEpoch: c.epoch}
		c.markers[mk.ID], c.markerOf[mk.ID] = mk, m.TransactionalID
		s.markersLeft[p] = true
		c.rd.Markers = append(c.rd.Markers, mk)
	}
	c.completeIfDone(s)
}

func (c *Coordinator) markerDone(ev MarkerResult) {
	mk, ok := c.markers[ev.ID]
	if !ok {
		return // a duplicate
	}
	id := c.markerOf[ev.ID]
	s := c.txns[id]
	switch {
	case ev.Code == kerr.InvalidProducerEpoch.Code || ev.Code == kerr.TransactionCoordinatorFenced.Code:
		// The producer or this coordinator was fenced at the leader: stop
		// sending this transaction's markers (Kafka's abortSending). It
		// stays prepared until a newer coordinator loads it.
		for mid, tid := range c.markerOf {
			if tid == id {
				delete(c.markers, mid)
				delete(c.markerOf, mid)
			}
		}
		s.markersLeft = nil
		return
	case ev.Code != 0 && !ev.Gone:
		c.retry = append(c.retry, ev.ID)
		return
	}
	delete(c.markers, ev.ID)
	delete(c.markerOf, ev.ID)
	delete(s.markersLeft, mk.Partition)
	c.completeIfDone(s)
}

// completeIfDone writes CompleteCommit or CompleteAbort once every marker
// of s is written.
func (c *Coordinator) completeIfDone(s *txnState) {
	if len(s.markersLeft) > 0 {
		return
	}
	to := CompleteAbort
	if s.meta.State == PrepareCommit {
		to = CompleteCommit
	}
	t := s.meta.transit(to, c.nowMs)
	t.partitions = nil
	s.pending = t
	c.write(s, flightComplete, nil, false)
}
