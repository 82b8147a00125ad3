package host

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
//   - Role changes (the broker's hosting: becoming leader, becoming follower,
//     stopping) hold it for writing: the log's epoch (engine.Log.BecomeLeader)
//     and the core's role change at once, so an old leader's answer in
//     flight is either appended before (as the follower's, which it still
//     is) or refused after (the core leads, and takes no fetch answer).
//
// Lock order: doc.go. A role change holding partition.role calls nothing
// outside the package (the broker moves the group and transaction
// coordinators after it is released), and no goroutine takes
// partition.role twice: a writer waiting for it would block the second
// read.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/replication"
)

// AppendHow says how appendAsLeader writes a batch.
type AppendHow struct {
	// Coordinator: Kafka's AppendOrigin.COORDINATOR (markers, the group
	// Coordinator's transactional offsets): no sequence check.
	Coordinator bool
	// Guard is a transactional batch's verification (txnverify.go), 0
	// for most batches.
	Guard engine.VerificationGuard
	// AcksAll refuses the append below min.insync.replicas
	// (NOT_ENOUGH_REPLICAS), checked under the lock as Kafka's
	// appendRecordsToLeader does.
	AcksAll bool
}

// AppendAsLeader appends a batch while this broker leads the partition and
// tells the core, or refuses it with NOT_LEADER_OR_FOLLOWER.
func (p *Partition) AppendAsLeader(batch []byte, how AppendHow) (engine.AppendResult, error) {
	p.role.RLock()
	defer p.role.RUnlock()
	if !p.leader.Load() {
		return engine.AppendResult{}, fmt.Errorf("%w: %s-%d", kerr.NotLeaderForPartition, p.Topic, p.Index)
	}
	if how.AcksAll {
		if err := p.CheckAcksAll(); err != nil {
			return engine.AppendResult{}, err
		}
	}
	var res engine.AppendResult
	var err error
	if how.Coordinator {
		res, err = p.Log.AppendCoordinatorVerifiedNoWait(batch, how.Guard)
	} else {
		res, err = p.Log.AppendVerifiedNoWait(batch, how.Guard)
	}
	if err == nil {
		p.appended()
	}
	return res, err
}

// DeleteRecordsAsLeader moves the log start to offset while this broker
// leads (DeleteRecords).
func (p *Partition) DeleteRecordsAsLeader(offset int64) (int64, error) {
	p.role.RLock()
	defer p.role.RUnlock()
	if !p.leader.Load() {
		return 0, fmt.Errorf("%w: %s-%d", kerr.NotLeaderForPartition, p.Topic, p.Index)
	}
	return p.Log.DeleteRecordsBefore(offset)
}

// Leadership is a LeaderAndIsr's making this broker the leader.
type Leadership struct {
	Epoch, PartitionEpoch int32
	ISR, Replicas, Live   []int32
}

// BecomeLeader makes p the leader: the log records the epoch at its end
// (durably: OffsetForLeaderEpoch answers followers before the first
// append, as Kafka's makeLeader), then the core leads, under p.role. If the
// log cannot record it (a failed log), p stops: it leads nothing.
func (p *Partition) BecomeLeader(l Leadership) error {
	p.m.o.Logger.Log(context.Background(), p.roleLogLevel(), "leading", "topic", p.Topic, "partition", p.Index, "leader_epoch", l.Epoch, "isr", l.ISR,
		"log_end", p.Log.EndOffset(), "high_watermark", p.Log.HighWatermark())
	p.role.Lock()
	defer p.role.Unlock()
	p.epoch.Store(l.Epoch)
	if err := p.Log.BecomeLeader(l.Epoch); err != nil {
		p.stopLocked()
		return err
	}
	p.epochStart.Store(epochStartOffset(p.Log, l.Epoch))
	p.rep.mu.Lock()
	if len(l.Live) > 0 { // none before the first UpdateMetadata: all are then
		p.stepLocked(replication.LiveBrokers{IDs: l.Live})
	}
	p.stepLocked(replication.BecomeLeader{Epoch: l.Epoch, PartitionEpoch: l.PartitionEpoch, ISR: l.ISR, Replicas: l.Replicas,
		Log: logState(p.Log), Now: now()})
	p.rep.mu.Unlock()
	p.leader.Store(true)
	return nil
}

// BecomeFollower makes p a follower of leader at epoch, under p.role.
func (p *Partition) BecomeFollower(leader, epoch, partitionEpoch int32, replicas []int32) {
	p.m.o.Logger.Log(context.Background(), p.roleLogLevel(), "following", "topic", p.Topic, "partition", p.Index, "leader", leader, "leader_epoch", epoch,
		"log_end", p.Log.EndOffset(), "high_watermark", p.Log.HighWatermark())
	p.role.Lock()
	defer p.role.Unlock()
	p.epoch.Store(epoch)
	p.epochStart.Store(-1)
	wasLeader := p.leader.Swap(false)
	p.rep.mu.Lock()
	p.rep.mu.inSync = false
	p.stepLocked(replication.BecomeFollower{Leader: leader, Epoch: epoch, PartitionEpoch: partitionEpoch, Replicas: replicas,
		Log: logState(p.Log)})
	p.rep.mu.Unlock()
	if wasLeader {
		p.Notify() // waiting fetches answer NOT_LEADER_OR_FOLLOWER now
	}
}

// Stop makes p neither leader nor follower (StopReplica, or a log that
// cannot lead): waiting produces fail, nothing is fetched.
func (p *Partition) Stop() {
	p.role.Lock()
	defer p.role.Unlock()
	p.stopLocked()
}

func (p *Partition) stopLocked() {
	p.leader.Store(false)
	p.epochStart.Store(-1)
	p.step(replication.Stop{})
	p.Notify()
}

// stepFetchAnswer steps a follower's fetch answer (or its failure) into the
// core and performs what it decides, under p.role: truncations and appends
// of the log as follower happen only while it is one.
func (p *Partition) stepFetchAnswer(ev replication.FetchResult) {
	p.role.RLock()
	defer p.role.RUnlock()
	p.step(ev)
}
