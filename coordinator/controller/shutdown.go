package controller

// ControlledShutdown (key 7): a broker about to stop asks the controller to
// move its leadership away first, so that clients see a leader change
// instead of a dead leader (Kafka 3.9's KafkaController.
// processControlledShutdown in ZooKeeper mode).
//
//   - The broker must be registered (BROKER_NOT_AVAILABLE otherwise) at
//     the request's broker epoch or an older one (v2+; -1 skips the check):
//     an epoch older than the registration's is STALE_BROKER_EPOCH.
//   - From then on, until its registration goes or changes, the broker is
//     shutting down: no leader candidate and no ISR member (an
//     AlterPartition naming it gets INELIGIBLE_REPLICA, alter.go), though
//     live for requests and metadata.
//   - Every partition it leads goes to the first other replica in
//     assignment order that is live and in the ISR (Kafka's
//     ControlledShutdownPartitionLeaderElectionStrategy), and every
//     partition it follows loses it from the ISR: writes decided by the
//     election rule, which sees the broker as dead (partitions.go), told to
//     the other replicas as any state change. The broker itself gets no
//     more LeaderAndIsr (its fetches keep its old leader epochs, which the
//     new leaders refuse). A partition it leads with no other live ISR
//     member keeps it as leader until it is gone (the election would take
//     the partition offline at once).
//   - The answer waits until no state write of its partitions is decided
//     or in flight; it lists the partitions with more than one replica the
//     broker still leads (PartitionsRemaining, Kafka's
//     replicatedPartitionsBrokerLeads: a replication factor 1 partition
//     cannot move and does not hold the shutdown up), and the broker gets
//     StopReplica, without deletion, for every partition it hosts and does
//     not lead, so it neither leads nor fetches them (Kafka's
//     OfflineReplica transition). The broker asks again while partitions
//     remain (controlled.shutdown.max.retries).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ControlledShutdown is a broker's ControlledShutdown request as it reached
// the controller: an event of Step, answered by exactly one
// ShutdownAnswer in a later Ready.
type ControlledShutdown struct {
	// ID names the request in its answer: the driver's own numbering.
	ID      uint64
	Request *kmsg.ControlledShutdownRequest
}

func (ControlledShutdown) event() {}

// ShutdownAnswer is the response to the ControlledShutdown of ID, in the
// request's version, to send back to the broker.
type ShutdownAnswer struct {
	ID       uint64
	Response *kmsg.ControlledShutdownResponse
}

// shutdownCall is a request whose partitions are being moved.
type shutdownCall struct {
	id      uint64
	broker  int32
	version int16
}

// controlledShutdown takes a request: checked, the broker marked shutting
// down and its partitions decided again; answered once they are quiet.
func (c *Controller) controlledShutdown(ev ControlledShutdown) {
	req := ev.Request
	resp := &kmsg.ControlledShutdownResponse{Version: req.Version}
	b := c.brokers[req.BrokerID]
	switch {
	case b == nil:
		resp.ErrorCode = kerr.BrokerNotAvailable.Code
	case req.Version >= 2 && req.BrokerEpoch != -1 && req.BrokerEpoch < b.Epoch:
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
	}
	if resp.ErrorCode != 0 {
		c.shutdownAnswers = append(c.shutdownAnswers, ShutdownAnswer{ev.ID, resp})
		return
	}
	id := req.BrokerID
	c.shutting[id] = true
	c.shutdowns = append(c.shutdowns, &shutdownCall{id: ev.ID, broker: id, version: req.Version})
	for _, t := range c.sortedTopics() {
		if t.deletion != nil {
			continue
		}
		for _, p := range t.parts {
			if slices.Contains(p.replicas, id) {
				c.reconcile(t, p)
			}
		}
	}
}

// shuttingDown reports whether broker b asked for a controlled shutdown
// and is still registered as it was.
func (c *Controller) shuttingDown(b int32) bool { return c.shutting[b] }

// brokerGone ends a shutdown when the broker's registration goes or
// changes: a restarted broker is a candidate again.
func (c *Controller) brokerGone(id int32) { delete(c.shutting, id) }

// answerShutdowns answers the requests whose partitions are quiet: no
// state write decided or in flight. It queues the brokers' StopReplica
// for the partitions they follow; called from Ready, before the requests
// are built.
func (c *Controller) answerShutdowns() {
	kept := c.shutdowns[:0]
	for _, call := range c.shutdowns {
		if !c.shutting[call.broker] {
			// Gone meanwhile: nothing left to move.
			c.shutdownAnswers = append(c.shutdownAnswers, ShutdownAnswer{call.id, &kmsg.ControlledShutdownResponse{Version: call.version}})
			continue
		}
		resp, quiet := c.shutdownState(call)
		if !quiet {
			kept = append(kept, call)
			continue
		}
		c.shutdownAnswers = append(c.shutdownAnswers, ShutdownAnswer{call.id, resp})
	}
	c.shutdowns = kept
}

// shutdownState is the answer to call if its broker's partitions are
// quiet, queueing its StopReplica.
func (c *Controller) shutdownState(call *shutdownCall) (*kmsg.ControlledShutdownResponse, bool) {
	resp := &kmsg.ControlledShutdownResponse{Version: call.version}
	var follows []*partition
	for _, t := range c.sortedTopics() {
		if t.deletion != nil {
			continue
		}
		for _, p := range t.parts {
			if !slices.Contains(p.replicas, call.broker) {
				continue
			}
			if c.pending[p.tp] != nil || c.inflight[writeKey{p.tp, false}] != nil {
				return nil, false
			}
			if p.state == nil {
				continue // new: no replica hosts it yet
			}
			if p.state.Leader == call.broker {
				if len(p.replicas) == 1 {
					continue
				}
				resp.PartitionsRemaining = append(resp.PartitionsRemaining, kmsg.ControlledShutdownResponsePartitionsRemaining{
					Topic: p.tp.Topic, Partition: p.tp.Partition,
				})
				continue
			}
			follows = append(follows, p)
		}
	}
	for _, p := range follows {
		c.batch.addStopReplica(call.broker, p.tp, false)
	}
	return resp, true
}

// notControllerShutdowns answers every outstanding request NOT_CONTROLLER,
// as a controller that resigns does.
func (c *Controller) notControllerShutdowns() {
	for _, call := range c.shutdowns {
		c.shutdownAnswers = append(c.shutdownAnswers, ShutdownAnswer{call.id, &kmsg.ControlledShutdownResponse{Version: call.version, ErrorCode: kerr.NotController.Code}})
	}
	c.shutdowns = nil
}
