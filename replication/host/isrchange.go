package host

// ISR changes a leader asks the controller for (Kafka's
// AlterPartitionManager): the core's Ready.AlterPartition, one in flight
// per partition, sent as AlterPartition v3 (topic ids, ISR members with
// their broker epochs, KIP-903) to the controller the metadata names: by a
// call when this broker is the controller, else over its listener. The
// answer, or ErrUnreachable after a failure, is stepped back into the
// partition's core, an error after a pause: the core sends the same
// proposal again after any error but those that wait for a LeaderAndIsr
// (replication's alterPartitionResult, as Kafka's
// handleAlterPartitionError), handing it out at each Tick and follower
// fetch until it is answered; replicaDriver.mu.alterInFlight keeps one
// request in flight. Only ZooKeeper mode changes ISRs: the single node
// has no followers.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/replication"
)

// alterPartitionRetry is the pause before an unanswered ISR change is
// reported unanswered (Kafka's AlterPartitionManager retries after 50 ms
// and more).
const alterPartitionRetry = 200 * time.Millisecond

// proposeISR sends the core's ISR change for p, in its own goroutine.
func (p *Partition) proposeISR(ap replication.AlterPartition) {
	o := p.m.o
	o.Logger.Info("asking the controller to change the ISR", "topic", p.Topic, "partition", p.Index,
		"leader_epoch", ap.LeaderEpoch, "partition_epoch", ap.PartitionEpoch, "isr", ap.ISR)
	go func() {
		res := p.alterPartition(ap)
		switch {
		case res.Err == nil:
			o.Logger.Info("ISR changed", "topic", p.Topic, "partition", p.Index, "isr", res.ISR, "partition_epoch", res.PartitionEpoch)
			if o.Metrics != nil { // the core has the ISR before the change: one change is in flight at a time
				p.rep.mu.Lock()
				before := len(p.rep.mu.r.ISR())
				p.rep.mu.Unlock()
				o.Metrics.ISRChanged(before, len(res.ISR))
			}
		case res.Err != replication.ErrUnreachable:
			o.Logger.Info("ISR change refused", "topic", p.Topic, "partition", p.Index, "isr", ap.ISR, "err", res.Err)
		}
		if res.Err != nil {
			// Unreachable or a retriable error: asked again; refused (an
			// ineligible replica, a stale epoch): not at once, so a
			// follower the controller will not take does not make the
			// leader ask at every fetch.
			select {
			case <-time.After(alterPartitionRetry):
			case <-o.Closing:
				return
			}
		}
		p.rep.mu.Lock()
		defer p.rep.mu.Unlock()
		if p.rep.mu.alterInFlight == ap.Seq {
			p.rep.mu.alterInFlight = 0
		}
		p.stepLocked(res)
	}()
}

// alterPartition asks the controller for ap and returns its answer as the
// core takes it.
func (p *Partition) alterPartition(ap replication.AlterPartition) replication.AlterPartitionResult {
	res := replication.AlterPartitionResult{Request: ap, Err: replication.ErrUnreachable}
	o := p.m.o
	id, hosted := p.m.topicID(p.Topic)
	if o.Controller == nil || !hosted {
		return res
	}
	req := kmsg.NewPtrAlterPartitionRequest()
	req.SetVersion(3)
	req.BrokerID, req.BrokerEpoch = o.Self, o.Controller.BrokerEpoch()
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.TopicID = id
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = p.Index, ap.LeaderEpoch, ap.PartitionEpoch
	for i, id := range ap.ISR {
		m := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		m.BrokerID = id
		if i < len(ap.BrokerEpochs) {
			m.BrokerEpoch = ap.BrokerEpochs[i]
		}
		rp.NewEpochISR = append(rp.NewEpochISR, m)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)

	ctx, cancel := p.m.closingContext(RequestTimeout)
	defer cancel()
	resp, err := o.Controller.AlterPartition(ctx, req)
	if err != nil {
		o.Logger.Debug("asking the controller for an ISR change", "topic", p.Topic, "partition", p.Index, "err", err)
		return res
	}
	if resp.ErrorCode != 0 {
		res.Err = kerr.ErrorForCode(resp.ErrorCode)
		return res
	}
	for _, t := range resp.Topics {
		for _, part := range t.Partitions {
			if part.Partition != p.Index {
				continue
			}
			if part.ErrorCode != 0 {
				res.Err = kerr.ErrorForCode(part.ErrorCode)
				return res
			}
			res.Err, res.ISR, res.LeaderEpoch, res.PartitionEpoch = nil, part.ISR, part.LeaderEpoch, part.PartitionEpoch
			return res
		}
	}
	return res
}
