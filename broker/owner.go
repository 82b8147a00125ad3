package broker

// The owner of a replicated partition's log and role (Kafka's Partition and
// its leaderIsrUpdateLock): every event that changes the log or the role
// holds partition.role, so that the log and the replication core never
// disagree about who may write.
//
//   - Writers (a client's produce, transaction markers, the transaction
//     coordinator's and the group coordinator's records, DeleteRecords)
//     hold it for reading: they check that this broker leads under it,
//     append, and tell the core (Appended) before they release it. A role
//     change cannot fall between the check and the append, so no record is
//     written as leader into a log that has become a follower's.
//   - A follower's fetch answers (fetcher.go) hold it for reading too: the
//     answer is stepped, and its truncation and append performed, under
//     it. The core is told the log's outcome of the append (FetchAppended)
//     before the lock is released.
//   - Role changes (hosting.go: becoming leader, becoming follower,
//     stopping) hold it for writing: the log's epoch (engine.Log.BecomeLeader)
//     and the core's role change at once, so an old leader's answer in
//     flight is either appended before (as the follower's, which it still
//     is) or refused after (the core leads, and takes no fetch answer).
//
// Lock order: controlState.mu, Broker.admin (role changes run under them),
// coordinator/group's locks and txnDriver.mu (their appends run under
// them), then partition.role, then replicaDriver.mu, the engine Log's lock,
// partition.mu. A role change holding partition.role calls no coordinator
// (the group and transaction coordinators move after it is released), and
// no goroutine takes partition.role twice: a writer waiting for it would
// block the second read.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/replication"
)

// appendHow says how appendAsLeader writes a batch.
type appendHow struct {
	// coordinator: Kafka's AppendOrigin.COORDINATOR (markers, the group
	// coordinator's transactional offsets): no sequence check.
	coordinator bool
	// guard is a transactional batch's verification (txnverify.go), 0
	// for most batches.
	guard engine.VerificationGuard
	// acksAll refuses the append below min.insync.replicas
	// (NOT_ENOUGH_REPLICAS), checked under the lock as Kafka's
	// appendRecordsToLeader does.
	acksAll bool
}

// appendAsLeader appends a batch while this broker leads the partition and
// tells the core, or refuses it with NOT_LEADER_OR_FOLLOWER.
func (p *partition) appendAsLeader(batch []byte, how appendHow) (engine.AppendResult, error) {
	p.role.RLock()
	defer p.role.RUnlock()
	if !p.leader.Load() {
		return engine.AppendResult{}, fmt.Errorf("%w: %s-%d", kerr.NotLeaderForPartition, p.topic, p.index)
	}
	if how.acksAll {
		if err := p.checkAcksAll(); err != nil {
			return engine.AppendResult{}, err
		}
	}
	var res engine.AppendResult
	var err error
	if how.coordinator {
		res, err = p.log.AppendCoordinatorVerifiedNoWait(batch, how.guard)
	} else {
		res, err = p.log.AppendVerifiedNoWait(batch, how.guard)
	}
	if err == nil {
		p.appended()
	}
	return res, err
}

// deleteRecordsAsLeader moves the log start to offset while this broker
// leads (DeleteRecords).
func (p *partition) deleteRecordsAsLeader(offset int64) (int64, error) {
	p.role.RLock()
	defer p.role.RUnlock()
	if !p.leader.Load() {
		return 0, fmt.Errorf("%w: %s-%d", kerr.NotLeaderForPartition, p.topic, p.index)
	}
	return p.log.DeleteRecordsBefore(offset)
}

// leadership is a LeaderAndIsr's making this broker the leader.
type leadership struct {
	epoch, partitionEpoch int32
	isr, replicas, live   []int32
}

// becomeLeader makes p the leader: the log records the epoch at its end
// (durably: OffsetForLeaderEpoch answers followers before the first
// append, as Kafka's makeLeader), then the core leads, under p.role. If the
// log cannot record it (a failed log), p stops: it leads nothing.
func (p *partition) becomeLeader(l leadership) error {
	p.rep.log.Log(context.Background(), p.roleLogLevel(), "leading", "topic", p.topic, "partition", p.index, "leader_epoch", l.epoch, "isr", l.isr,
		"log_end", p.log.EndOffset(), "high_watermark", p.log.HighWatermark())
	p.role.Lock()
	defer p.role.Unlock()
	p.epoch.Store(l.epoch)
	if err := p.log.BecomeLeader(l.epoch); err != nil {
		p.stopLocked()
		return err
	}
	p.epochStart.Store(epochStartOffset(p.log, l.epoch))
	p.rep.mu.Lock()
	if len(l.live) > 0 { // none before the first UpdateMetadata: all are then
		p.stepLocked(replication.LiveBrokers{IDs: l.live})
	}
	p.stepLocked(replication.BecomeLeader{Epoch: l.epoch, PartitionEpoch: l.partitionEpoch, ISR: l.isr, Replicas: l.replicas,
		Log: logState(p.log), Now: now()})
	p.rep.mu.Unlock()
	p.leader.Store(true)
	return nil
}

// becomeFollower makes p a follower of leader at epoch, under p.role.
func (p *partition) becomeFollower(leader, epoch, partitionEpoch int32, replicas []int32) {
	p.rep.log.Log(context.Background(), p.roleLogLevel(), "following", "topic", p.topic, "partition", p.index, "leader", leader, "leader_epoch", epoch,
		"log_end", p.log.EndOffset(), "high_watermark", p.log.HighWatermark())
	p.role.Lock()
	defer p.role.Unlock()
	p.epoch.Store(epoch)
	p.epochStart.Store(-1)
	wasLeader := p.leader.Swap(false)
	p.rep.mu.Lock()
	p.rep.mu.inSync = false
	p.stepLocked(replication.BecomeFollower{Leader: leader, Epoch: epoch, PartitionEpoch: partitionEpoch, Replicas: replicas,
		Log: logState(p.log)})
	p.rep.mu.Unlock()
	if wasLeader {
		p.notify() // waiting fetches answer NOT_LEADER_OR_FOLLOWER now
	}
}

// stop makes p neither leader nor follower (StopReplica, or a log that
// cannot lead): waiting produces fail, nothing is fetched.
func (p *partition) stop() {
	p.role.Lock()
	defer p.role.Unlock()
	p.stopLocked()
}

func (p *partition) stopLocked() {
	p.leader.Store(false)
	p.epochStart.Store(-1)
	p.step(replication.Stop{})
	p.notify()
}

// stepFetchAnswer steps a follower's fetch answer (or its failure) into the
// core and performs what it decides, under p.role: truncations and appends
// of the log as follower happen only while it is one.
func (p *partition) stepFetchAnswer(ev replication.FetchResult) {
	p.role.RLock()
	defer p.role.RUnlock()
	p.step(ev)
}

// produceError maps an engine append error to Kafka's code.
func produceError(b *Broker, p *partition, err error) (int16, string) {
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		// The owner's refusals (owner.go): NOT_LEADER_OR_FOLLOWER, and
		// NOT_ENOUGH_REPLICAS checked again under its lock.
		return ke.Code, err.Error()
	case errors.Is(err, engine.ErrBatchTooLarge):
		return kerr.MessageTooLarge.Code, err.Error()
	case errors.Is(err, engine.ErrCorrupt):
		return kerr.CorruptMessage.Code, err.Error()
	case errors.Is(err, engine.ErrInvalidBatch):
		return kerr.InvalidRecord.Code, err.Error()
	case errors.Is(err, engine.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code, err.Error()
	case errors.Is(err, engine.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code, err.Error()
	case errors.Is(err, engine.ErrInvalidTxnState):
		return kerr.InvalidTxnState.Code, err.Error()
	case errors.Is(err, engine.ErrCoordinatorFenced):
		return kerr.TransactionCoordinatorFenced.Code, err.Error()
	case errors.Is(err, engine.ErrClosed):
		return kerr.NotLeaderForPartition.Code, ""
	default:
		b.log.Error("append failed", "topic", p.topic, "partition", p.index, "err", err)
		return kerr.KafkaStorageError.Code, ""
	}
}
