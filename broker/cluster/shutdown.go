package cluster

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
	"log/slog"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
)

// ShutdownOptions are a broker's collaborators for its controlled
// shutdown.
type ShutdownOptions struct {
	Self   int32
	Config config.ShutdownConfig
	// Wait bounds one attempt.
	Wait  time.Duration
	Cache *Cache
	// BrokerEpoch is this broker's registration epoch (KIP-380).
	BrokerEpoch func() int64
	// Send carries a ControlledShutdown to the controller, this broker
	// itself included.
	Send   func(ctx context.Context, controller int32, req *kmsg.ControlledShutdownRequest) (*kmsg.ControlledShutdownResponse, error)
	Logger *slog.Logger
}

// ControlledShutdown asks the controller to move this broker's leadership
// away; it returns once the controller has, or the retries are spent.
func ControlledShutdown(o ShutdownOptions) {
	cfg := o.Config
	start := time.Now()
	for attempt := 0; ; attempt++ {
		asked := o.Cache.Load().ControllerID
		remaining, err := o.ask()
		if err == nil && o.movable(remaining) == 0 {
			o.Logger.Info("controlled shutdown done", "took", time.Since(start))
			return
		}
		if err == nil {
			err = fmt.Errorf("%d partitions still led here", len(remaining))
		}
		if attempt >= cfg.MaxRetries {
			o.Logger.Warn("controlled shutdown failed; stopping anyway", "attempts", attempt+1, "err", err)
			return
		}
		o.Logger.Info("controlled shutdown incomplete; retrying", "attempt", attempt+1, "err", err, "backoff", cfg.Backoff)
		o.awaitNewController(asked, cfg.Backoff)
	}
}

// awaitNewController waits for d, or less if the controller the metadata
// names changes from asked (the one just asked is gone, or lost the
// role): the next attempt asks the new one at once. It polls the cache:
// the broker is stopping, nothing else runs on this goroutine.
func (o ShutdownOptions) awaitNewController(asked int32, d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if id := o.Cache.Load().ControllerID; id >= 0 && id != asked {
			return
		}
	}
}

// ask sends one ControlledShutdown to the controller and returns the
// partitions the answer says remain.
func (o ShutdownOptions) ask() ([]kmsg.ControlledShutdownResponsePartitionsRemaining, error) {
	req := kmsg.NewPtrControlledShutdownRequest()
	req.SetVersion(3)
	req.BrokerID, req.BrokerEpoch = o.Self, o.BrokerEpoch()
	controller := o.Cache.Load().ControllerID
	if controller < 0 {
		return nil, errors.New("no controller known")
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.Wait)
	defer cancel()
	resp, err := o.Send(ctx, controller, req)
	if err != nil {
		return nil, err
	}
	if resp.ErrorCode != 0 {
		return nil, kerr.ErrorForCode(resp.ErrorCode)
	}
	return resp.PartitionsRemaining, nil
}

// movable counts the remaining partitions another live in-sync replica
// could still take, as the metadata cache has them.
func (o ShutdownOptions) movable(remaining []kmsg.ControlledShutdownResponsePartitionsRemaining) int {
	snap := o.Cache.Load()
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
		if ok && slices.ContainsFunc(p.ISR, func(id int32) bool { return id != o.Self && live[id] }) {
			n++
		}
	}
	return n
}
