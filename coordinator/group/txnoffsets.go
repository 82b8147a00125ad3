package group

// Offsets committed in a transaction: TxnOffsetCommit and the end of the
// transaction (Kafka 3.9's GroupCoordinator.handleTxnCommitOffsets,
// GroupMetadataManager.storeOffsets and handleTxnCompletion,
// GroupMetadata's pendingTransactionalOffsetCommits).
//
// A transactional commit is validated as Kafka does (the group's status,
// then validateOffsetCommit with isTransactional: an unknown group is
// created Empty whatever the generation; a v3+ request naming a member or
// generation is checked as OffsetCommit's; a non-empty group accepts a
// commit without member id, which v0-2 cannot send), written to the
// group's partition as one transactional batch of the request's producer
// id and epoch (Store.AppendTxn), and kept pending under the producer id.
// Before the member is validated the broker verifies with the transaction
// coordinator that the group's partition is in the transaction (KIP-890,
// Store.VerifyTxn: the producer's AddOffsetsToTxn added it); a failure
// answers every valid partition with txnVerifyError's code and writes
// nothing.
// Pending offsets are invisible to OffsetFetch (which answers
// UNSTABLE_OFFSET_COMMIT for them when it requires stable offsets) until
// CompleteTxn reports the producer's COMMIT marker on that partition: each
// then becomes the committed offset unless a commit written after it
// already replaced it (Kafka's CommitRecordMetadataAndOffset.olderThan).
// An ABORT drops them. Loading a partition replays the same rules from
// the log (store.go).

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	// ErrInvalidProducerEpoch is what Store.AppendTxn wraps when the
	// partition refused the producer's epoch (INVALID_PRODUCER_EPOCH).
	ErrInvalidProducerEpoch = errors.New("group: producer epoch fenced at the __consumer_offsets partition")
	// ErrInvalidTxnState is what Store.AppendTxn wraps when the partition
	// refused the offsets as not verified in the producer's transaction
	// (INVALID_TXN_STATE): a marker ended it since the verification.
	ErrInvalidTxnState = errors.New("group: offsets not part of an ongoing transaction at the __consumer_offsets partition")
)

// TxnOffsetCommit answers a TxnOffsetCommit request (v0-3).
func (c *Coordinator) TxnOffsetCommit(req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	now := c.now().UnixMilli()
	type entry struct {
		ti, pi int
		tp     topicPartition
		o      committed
	}
	var valid []entry
	status := errInvalidGroupID // Kafka's isValidGroupId: TxnOffsetCommit needs a group id
	if req.Group != "" {
		status = c.status(req.Group)
	}
	for ti, rt := range req.Topics {
		st := kmsg.NewTxnOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		for pi, rp := range rt.Partitions {
			sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			sp.Partition = rp.Partition
			switch {
			case !c.knownPartition(rt.Topic, rp.Partition):
				sp.ErrorCode = errUnknownTopicOrPartition
			case status != 0:
				sp.ErrorCode = status
			case rp.Metadata != nil && len(*rp.Metadata) > c.cfg.MaxMetadataBytes:
				sp.ErrorCode = errOffsetMetadataTooLarge
			default:
				o := committed{offset: rp.Offset, leaderEpoch: -1, commitTime: now, expireTime: -1}
				if rp.Metadata != nil {
					o.metadata = *rp.Metadata
				}
				if req.Version >= 2 {
					o.leaderEpoch = rp.LeaderEpoch
				}
				valid = append(valid, entry{ti, pi, topicPartition{rt.Topic, rp.Partition}, o})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(valid) == 0 {
		return resp
	}
	setAll := func(code int16) {
		for _, e := range valid {
			resp.Topics[e.ti].Partitions[e.pi].ErrorCode = code
		}
	}
	g, code := c.getGroup(req.Group, true)
	if g == nil && code == 0 {
		code = errCoordinatorNotAvailable // closed
	}
	if code != 0 {
		setAll(code)
		return resp
	}
	// Kafka verifies before it validates the member (the group's lock is
	// not held across the wait for the transaction coordinator).
	guard, code := c.store.VerifyTxn(g.partition, req.TransactionalID, req.ProducerID, req.ProducerEpoch)
	if code != 0 {
		setAll(txnVerifyError(code))
		return resp
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if code := c.validateTxnCommit(g, req); code != 0 {
		setAll(code)
		return resp
	}
	records := make([]Record, len(valid))
	for i, e := range valid {
		records[i] = Record{Key: offsetKey(g.id, e.tp.topic, e.tp.partition), Value: offsetValueFor(e.o)}
	}
	if err := c.store.AppendTxn(g.partition, req.ProducerID, req.ProducerEpoch, guard, records); err != nil {
		c.log.Warn("storing transactional offsets", "group", g.id, "producer_id", req.ProducerID, "err", err)
		code := appendError(err)
		switch {
		case errors.Is(err, ErrInvalidProducerEpoch):
			code = kerr.InvalidProducerEpoch.Code
		case errors.Is(err, ErrInvalidTxnState):
			code = kerr.InvalidTxnState.Code
		}
		setAll(code)
		return resp
	}
	pend := g.pendingTxn[req.ProducerID]
	if pend == nil {
		pend = map[topicPartition]committed{}
		g.pendingTxn[req.ProducerID] = pend
	}
	for _, e := range valid {
		e.o.order = c.order.Add(1)
		pend[e.tp] = e.o
	}
	c.addTxnGroup(req.ProducerID, g.id)
	return resp
}

// txnVerifyError is the code TxnOffsetCommit answers for a failed
// verification of the group's partition (Kafka's
// GroupMetadataManager.maybeConvertOffsetCommitError): NETWORK_EXCEPTION,
// which older clients do not retry, is COORDINATOR_LOAD_IN_PROGRESS
// (retried without a coordinator lookup); UNKNOWN_TOPIC_OR_PARTITION,
// NOT_ENOUGH_REPLICAS(_AFTER_APPEND) COORDINATOR_NOT_AVAILABLE;
// NOT_LEADER_OR_FOLLOWER and KAFKA_STORAGE_ERROR NOT_COORDINATOR;
// MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE and INVALID_FETCH_SIZE
// INVALID_COMMIT_OFFSET_SIZE; others (INVALID_TXN_STATE,
// INVALID_PRODUCER_EPOCH, CONCURRENT_TRANSACTIONS, ...) as they are.
func txnVerifyError(code int16) int16 {
	switch code {
	case kerr.NetworkException.Code:
		return errLoadInProgress
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code, kerr.NotEnoughReplicasAfterAppend.Code:
		return errCoordinatorNotAvailable
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return errNotCoordinator
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code, kerr.InvalidFetchSize.Code:
		return kerr.InvalidCommitOffsetSize.Code
	}
	return code
}

// validateTxnCommit is Kafka's validateOffsetCommit with isTransactional.
func (c *Coordinator) validateTxnCommit(g *group, req *kmsg.TxnOffsetCommitRequest) int16 {
	switch {
	case g.state == dead:
		return errCoordinatorNotAvailable
	case req.Generation < 0 && g.state == empty:
		return 0
	case req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil:
		if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
			return code
		}
		if req.Generation != g.generation {
			return errIllegalGeneration
		}
	}
	return 0
}

// addTxnGroup records that producer id has offsets pending in group id.
// The group's lock may be held.
func (c *Coordinator) addTxnGroup(id int64, groupID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gs := c.mu.txnGroups[id]
	if gs == nil {
		gs = map[string]struct{}{}
		c.mu.txnGroups[id] = gs
	}
	gs[groupID] = struct{}{}
}

// CompleteTxn ends producer id's transaction for the groups of partition
// of __consumer_offsets: the broker calls it once the producer's marker
// (commit or abort) is written there (WriteTxnMarkers), as Kafka's
// handleTxnCompletion. With commit, each of the producer's pending offsets
// in those groups becomes the committed one unless an offset written
// after it replaced it; without, they are dropped. Groups of other
// partitions keep theirs (the transaction's marker there completes them).
// A partition still loading applies it once its groups are installed.
func (c *Coordinator) CompleteTxn(partition int32, producerID int64, commit bool) {
	c.mu.Lock()
	if c.mu.closed || partition < 0 || partition >= c.cfg.Partitions {
		c.mu.Unlock()
		return
	}
	if p := &c.mu.parts[partition]; p.state == loading {
		p.ended = append(p.ended, txnEnd{producerID, commit})
		c.mu.Unlock()
		return
	}
	var groups []*group
	for id := range c.mu.txnGroups[producerID] {
		if g := c.mu.groups[id]; g != nil && g.partition == partition {
			groups = append(groups, g)
		} else if g == nil && c.partitionFor(id) == partition {
			delete(c.mu.txnGroups[producerID], id) // unloaded or deleted since
		}
	}
	c.mu.Unlock()
	for _, g := range groups {
		g.mu.Lock()
		if g.state != dead {
			g.completeTxn(producerID, commit)
		}
		g.mu.Unlock()
		c.mu.Lock()
		if gs := c.mu.txnGroups[producerID]; gs != nil {
			delete(gs, g.id)
			if len(gs) == 0 {
				delete(c.mu.txnGroups, producerID)
			}
		}
		c.mu.Unlock()
	}
}

// completeTxn applies the end of producer id's transaction to the group's
// offsets (Kafka's GroupMetadata.completePendingTxnOffsetCommit); g.mu is
// held.
func (g *group) completeTxn(id int64, commit bool) {
	pend := g.pendingTxn[id]
	delete(g.pendingTxn, id)
	if commit {
		applyTxn(g.offsets, pend)
	}
}

// applyTxn makes the pending offsets committed where they were written
// after the committed ones (Kafka's olderThan).
func applyTxn(offsets, pend map[topicPartition]committed) {
	for tp, o := range pend {
		if cur, ok := offsets[tp]; !ok || cur.order < o.order {
			offsets[tp] = o
		}
	}
}
