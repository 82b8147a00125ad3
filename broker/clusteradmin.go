package broker

// Topic administration in ZooKeeper mode, from any broker, as Kafka's
// ZkAdminManager: CreateTopics, DeleteTopics and CreatePartitions write
// ZooKeeper (coordinator/zk's admin.go: the assignment, a deletion
// marker) and the controller does the rest. The request is answered once
// this broker's metadata cache shows the change done (the controller's
// UpdateMetadata reached it), or at the request's timeout with
// REQUEST_TIMED_OUT, as Kafka's delayed operations answer; a timeout of 0
// or less answers at once, the change under way.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/coordinator/zk"
	"github.com/sluice-io/sluice/engine"
)

// liveBrokers is the number of live brokers the cluster's metadata lists.
func (b *Broker) liveBrokers() int { return len(b.ctl.Cache.Load().Brokers) }

// createClusterTopic writes a new topic; it returns its id, or the code
// and message refusing it.
func (b *Broker) createClusterTopic(name string, req controller.TopicRequest, configs map[string]string) (engine.TopicID, int16, string) {
	a, err := b.coord.CreateTopic(name, req, configs)
	switch {
	case errors.Is(err, coordinator.ErrTopicExists):
		return engine.TopicID{}, kerr.TopicAlreadyExists.Code, zk.Message(err)
	case errors.Is(err, zk.ErrTopicCollision):
		return engine.TopicID{}, kerr.InvalidTopicException.Code, zk.Message(err)
	case err != nil && controller.Code(err) != kerr.UnknownServerError.Code:
		return engine.TopicID{}, controller.Code(err), controller.Message(err)
	case err != nil:
		b.log.Error("creating topic", "topic", name, "err", err)
		return engine.TopicID{}, kerr.UnknownServerError.Code, err.Error()
	}
	b.log.Info("created topic", "topic", name, "partitions", len(a.Replicas), "id", a.ID.String())
	return a.ID, 0, ""
}

// awaitMetadata waits, until timeoutMs has passed, for cond to hold of the
// metadata cache; false when it did not.
func (b *Broker) awaitMetadata(timeoutMs int32, cond func(*cluster.Snapshot) bool) bool {
	if timeoutMs <= 0 {
		return true
	}
	ctx, cancel := b.closingContext(time.Duration(timeoutMs) * time.Millisecond)
	defer cancel()
	return b.ctl.Cache.Wait(ctx, cond)
}

// topicCreated is the condition of a created topic: the cache has it, at
// its id, with all its partitions.
func topicCreated(name string, id engine.TopicID, partitions int) func(*cluster.Snapshot) bool {
	return func(s *cluster.Snapshot) bool {
		t := s.Topics[name]
		return t != nil && t.ID == id && len(t.Partitions) >= partitions
	}
}

// topicGone is the condition of a deleted topic.
func topicGone(name string, id engine.TopicID) func(*cluster.Snapshot) bool {
	return func(s *cluster.Snapshot) bool {
		t := s.Topics[name]
		return t == nil || t.ID != id
	}
}

// deleteClusterTopic marks a topic for deletion and waits for it to go.
func (b *Broker) deleteClusterTopic(name string, id engine.TopicID, timeoutMs int32) (int16, string) {
	err := b.coord.DeleteTopic(name)
	switch {
	case errors.Is(err, coordinator.ErrUnknownTopic):
		return kerr.UnknownTopicOrPartition.Code, zk.Message(err)
	case err != nil:
		b.log.Error("deleting topic", "topic", name, "err", err)
		return kerr.UnknownServerError.Code, err.Error()
	}
	b.log.Info("marked topic for deletion", "topic", name, "id", id.String())
	if !b.awaitMetadata(timeoutMs, topicGone(name, id)) {
		return kerr.RequestTimedOut.Code, "the controller has not deleted the topic yet"
	}
	if timeoutMs > 0 {
		// On the single node, until the name can be taken again.
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(timeoutMs)*time.Millisecond)
		defer cancel()
		if err := b.coord.AwaitDeleted(ctx, name); err != nil {
			return kerr.RequestTimedOut.Code, "the controller has not deleted the topic yet"
		}
	}
	return 0, ""
}

// growClusterTopic adds partitions (placed, or as assignments gives them)
// and waits for the controller to create them.
func (b *Broker) growClusterTopic(name string, count int32, assignments [][]int32, timeoutMs int32) (int16, string) {
	a, err := b.coord.AddPartitions(name, count, assignments)
	switch {
	case errors.Is(err, coordinator.ErrUnknownTopic):
		return kerr.UnknownTopicOrPartition.Code, zk.Message(err)
	case errors.Is(err, coordinator.ErrTopicDeleting):
		return kerr.InvalidTopicException.Code, zk.Message(err)
	case err != nil && controller.Code(err) != kerr.UnknownServerError.Code:
		return controller.Code(err), controller.Message(err)
	case err != nil:
		b.log.Error("adding partitions", "topic", name, "err", err)
		return kerr.UnknownServerError.Code, err.Error()
	}
	b.log.Info("added partitions", "topic", name, "partitions", count)
	if !b.awaitMetadata(timeoutMs, topicCreated(name, a.ID, len(a.Replicas))) {
		return kerr.RequestTimedOut.Code, "the controller has not created the partitions yet"
	}
	return 0, ""
}

// closingContext is a context that ends after d or when the broker starts
// closing, whichever comes first.
func (b *Broker) closingContext(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	go func() {
		select {
		case <-b.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// controllerEntry returns one of the controller's entry points: the
// cluster's controller loop's (fromLoop), or the single node's controller's
// (fromLocal); nil when neither runs here.
func controllerEntry[F any](b *Broker, fromLoop func(*zk.ControllerLoop) F, fromLocal func(*coordinator.Embedded) F) F {
	var none F
	if b.cluster != nil {
		if l := b.cluster.loop.Load(); l != nil {
			return fromLoop(l)
		}
		return none
	}
	if e, ok := b.coord.(*coordinator.Embedded); ok {
		return fromLocal(e)
	}
	return none
}

// listReassignmentsDriver is reassignDriver's for the ongoing ones.
func (b *Broker) listReassignmentsDriver() func(context.Context) ([]controller.Reassignment, bool, error) {
	type list = func(context.Context) ([]controller.Reassignment, bool, error)
	return controllerEntry(b, func(l *zk.ControllerLoop) list { return l.ListReassignments }, func(e *coordinator.Embedded) list { return e.ListReassignments })
}

// reassignTimeout is the least the broker waits for the controller.
const reassignTimeout = 30 * time.Second
