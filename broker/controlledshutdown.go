package broker

// The broker's side of a controlled shutdown (Kafka's
// KafkaServer.controlledShutdown): before it stops serving, a broker in a
// cluster asks the controller to move the leadership of its partitions to
// other in-sync replicas, so that clients see NOT_LEADER_OR_FOLLOWER and a
// new leader instead of a dead one for the session timeout. It asks again
// after controlled.shutdown.retry.backoff.ms while the controller is
// unknown or unreachable, answers an error, or names replicated
// partitions the broker still leads, up to controlled.shutdown.max.retries
// times; then it stops anyway (as Kafka's, logging what remained).
//
// Difference from Kafka: remaining partitions none of whose other in-sync
// replicas is live (in the metadata the controller sent) cannot move, so
// they are not waited for: the last broker of a cluster stops at once
// instead of after its retries.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// controlledShutdown asks the controller to move this broker's leadership
// away; it returns once the controller has, or the retries are spent.
func (b *Broker) controlledShutdown() {
	cl := b.cluster
	cfg := b.cfg.Cluster.Shutdown()
	if cl == nil || !cfg.Enabled || !cl.shutdownAsked.CompareAndSwap(false, true) {
		return
	}
	start := time.Now()
	for attempt := 0; ; attempt++ {
		asked := b.ctl.cache.Load().ControllerID
		remaining, err := b.askControlledShutdown()
		if err == nil && b.movable(remaining) == 0 {
			b.log.Info("controlled shutdown done", "took", time.Since(start))
			return
		}
		if err == nil {
			err = fmt.Errorf("%d partitions still led here", len(remaining))
		}
		if attempt >= cfg.MaxRetries {
			b.log.Warn("controlled shutdown failed; stopping anyway", "attempts", attempt+1, "err", err)
			return
		}
		b.log.Info("controlled shutdown incomplete; retrying", "attempt", attempt+1, "err", err, "backoff", cfg.Backoff)
		b.awaitNewController(asked, cfg.Backoff)
	}
}

// awaitNewController waits for d, or less if the controller the metadata
// names changes from asked (the one just asked is gone, or lost the
// role): the next attempt asks the new one at once. It polls the cache:
// the broker is stopping, nothing else runs on this goroutine.
func (b *Broker) awaitNewController(asked int32, d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if id := b.ctl.cache.Load().ControllerID; id >= 0 && id != asked {
			return
		}
	}
}

// askControlledShutdown sends one ControlledShutdown to the controller
// and returns the partitions the answer says remain.
func (b *Broker) askControlledShutdown() ([]kmsg.ControlledShutdownResponsePartitionsRemaining, error) {
	cl := b.cluster
	req := kmsg.NewPtrControlledShutdownRequest()
	req.SetVersion(3)
	req.BrokerID, req.BrokerEpoch = b.cfg.ID, cl.BrokerEpoch()
	// An attempt waits at most a session timeout (Kafka:
	// controller.socket.timeout.ms, 30 s): a controller silent that long
	// has lost its session if it is gone, and the next attempt asks the
	// one after it.
	wait := alterPartitionTimeout
	if st := b.cfg.Cluster.SessionTimeout; st > 0 && st < wait {
		wait = st
	} else if st <= 0 {
		wait = 18 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var resp *kmsg.ControlledShutdownResponse
	switch controller := b.ctl.cache.Load().ControllerID; {
	case controller < 0:
		return nil, errors.New("no controller known")
	case controller == b.cfg.ID:
		loop := cl.loop.Load()
		if loop == nil {
			return nil, errors.New("no controller known")
		}
		var err error
		if resp, err = loop.ControlledShutdown(ctx, req); err != nil {
			return nil, err
		}
	default:
		raw, err := cl.isrSend.Send(ctx, controller, req)
		if err != nil {
			return nil, err
		}
		resp = raw.(*kmsg.ControlledShutdownResponse)
	}
	if resp.ErrorCode != 0 {
		return nil, kerr.ErrorForCode(resp.ErrorCode)
	}
	return resp.PartitionsRemaining, nil
}

// movable counts the remaining partitions another live in-sync replica
// could still take, as the metadata cache has them.
func (b *Broker) movable(remaining []kmsg.ControlledShutdownResponsePartitionsRemaining) int {
	snap := b.ctl.cache.Load()
	live := map[int32]bool{}
	for _, br := range snap.Brokers {
		live[br.ID] = true
	}
	n := 0
	for _, r := range remaining {
		t := snap.Topics[r.Topic]
		if t == nil {
			continue
		}
		p, ok := t.Partitions[r.Partition]
		if ok && slices.ContainsFunc(p.ISR, func(id int32) bool { return id != b.cfg.ID && live[id] }) {
			n++
		}
	}
	return n
}
