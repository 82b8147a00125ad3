package controller

// Topic deletion, Kafka's TopicDeletionManager: a topic named under
// /admin/delete_topics is dropped from every broker's metadata at once
// (UpdateMetadata with leader LeaderDuringDelete for its partitions), then
// each replica is deleted with StopReplica (delete=true) on its broker.
// A replica whose broker is dead, or that its broker failed to delete, is
// ineligible, and halts the topic's deletion until a broker hosting one of
// its replicas registers again (Kafka keeps the deletion pending, it does
// not retry on a timer). Once every replica is deleted the topic's znodes
// go (a DeleteTopic write) and it leaves the controller's view; brokers
// dropped it from their metadata when the deletion started, and brokers
// starting later never get it, so no further UpdateMetadata is needed.
//
// Differences from Kafka: Kafka also moves each replica to OfflineReplica
// first, which shrinks the partition's ISR in ZooKeeper (leader -1) and
// sends a StopReplica without delete; here the state znodes are left as
// they are (they are about to be deleted) and the one StopReplica per
// replica carries delete=true, as Kafka's batch merges the two into. And
// LeaderAndIsr is never sent for a partition of a topic being deleted
// (Kafka sends it at controller failover and broker startup, which makes
// the broker open a log that StopReplica then deletes).

import (
	"slices"

	"github.com/sluice-io/sluice/engine"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// replicaDeletion is a replica's deletion state (Kafka's replica states
// OfflineReplica, ReplicaDeletionStarted, ReplicaDeletionSuccessful,
// ReplicaDeletionIneligible, for a topic being deleted).
type replicaDeletion int8

const (
	deletionNone replicaDeletion = iota
	deletionStarted
	deletionSuccessful
	deletionIneligible
)

type replicaKey struct {
	partition int32
	broker    int32
}

// deletion is a topic's deletion in progress.
type deletion struct {
	replicas map[replicaKey]replicaDeletion
	// ineligible halts the deletion until a broker hosting a replica of
	// the topic registers (Kafka's topicsIneligibleForDeletion).
	ineligible bool
	// tearingDown says the DeleteTopic write is queued or in flight.
	tearingDown bool
}

func newDeletion(t *topic) *deletion {
	d := &deletion{replicas: map[replicaKey]replicaDeletion{}}
	for _, p := range t.parts {
		for _, r := range p.replicas {
			d.replicas[replicaKey{p.tp.Partition, r}] = deletionNone
		}
	}
	return d
}

// fail makes the replicas on the given brokers ineligible, unless already
// deleted.
func (d *deletion) fail(brokers []int32) {
	for k, s := range d.replicas {
		if s != deletionSuccessful && slices.Contains(brokers, k.broker) {
			d.replicas[k] = deletionIneligible
			d.ineligible = true
		}
	}
}

// deleteTopics queues the named topics for deletion. Markers naming no
// topic, or all markers when deletion is disabled, are removed (Kafka's
// processTopicDeletion).
func (c *Controller) deleteTopics(names []string) {
	names = slices.Sorted(slices.Values(names))
	for _, name := range slices.Compact(names) {
		t := c.topics[name]
		switch {
		case t == nil || c.opts.DisableTopicDeletion:
			c.removeMarker(name)
		case t.deletion == nil:
			c.startDeletion(t)
		}
	}
}

// removeMarker queues the removal of /admin/delete_topics/<name> unless it
// is already queued or in flight.
func (c *Controller) removeMarker(name string) {
	w := Write{Op: RemoveDeleteMarker, Topic: name}
	if f := c.inflight[w.key()]; f != nil && f.w.Op == RemoveDeleteMarker {
		return
	}
	if slices.ContainsFunc(c.topicWrites[name], func(q Write) bool { return q.Op == RemoveDeleteMarker }) {
		return
	}
	c.queueTopicWrite(w)
}

// startDeletion is Kafka's enqueueTopicsForDeletion and onTopicDeletion:
// the topic's partitions stop changing, brokers drop them from their
// metadata, and the replicas' deletion starts.
func (c *Controller) startDeletion(t *topic) {
	c.dropReassignments(t)
	t.deletion = newDeletion(t)
	for _, p := range t.parts {
		c.dropPending(p.tp)
		c.batch.addUpdateMetadata(p.tp)
		c.serveAlters(t, p)
		c.serveElections(t, p)
	}
	c.resumeDeletion(t)
}

// resumeDeletion is Kafka's resumeDeletions for one topic: tear it down
// once every replica is deleted; otherwise, unless the deletion is halted
// or replicas are being deleted, send StopReplica to every live replica not
// yet deleted and halt the deletion if some are on dead brokers.
func (c *Controller) resumeDeletion(t *topic) {
	d := t.deletion
	if d.tearingDown {
		return
	}
	all, started := true, false
	for _, s := range d.replicas {
		all = all && s == deletionSuccessful
		started = started || s == deletionStarted
	}
	if all {
		for _, p := range t.parts {
			if c.inflight[writeKey{p.tp, false}] != nil {
				return // its result resumes the deletion
			}
		}
		d.tearingDown = true
		c.queueTopicWrite(Write{Op: DeleteTopic, Topic: t.name})
		return
	}
	if d.ineligible || started {
		return
	}
	for k, s := range d.replicas {
		if s == deletionSuccessful {
			continue
		}
		tp := engine.Partition{Topic: t.name, Partition: k.partition}
		if c.online(k.broker, tp) {
			d.replicas[k] = deletionStarted
			c.batch.addStopReplica(k.broker, tp, true)
		} else {
			d.replicas[k] = deletionIneligible
			d.ineligible = true
		}
	}
}

// stopReplicaResponse marks the replicas the broker deleted as such, and
// those it failed to (a partition error, or an error for the whole
// request) as ineligible, then resumes their topics' deletion.
// Only the partitions the request deleted count: a StopReplica without
// deletion (a controlled shutdown's) sent before the topic's deletion began
// deleted nothing.
func (c *Controller) stopReplicaResponse(b int32, req *kmsg.StopReplicaRequest, resp *kmsg.StopReplicaResponse) {
	deleted := map[engine.Partition]bool{}
	for _, rt := range req.Topics {
		for _, rp := range rt.PartitionStates {
			if rp.Delete {
				deleted[engine.Partition{Topic: rt.Topic, Partition: rp.Partition}] = true
			}
		}
	}
	codes := map[engine.Partition]int16{}
	if resp.ErrorCode != 0 {
		for tp := range deleted {
			codes[tp] = resp.ErrorCode
		}
	} else {
		for _, rp := range resp.Partitions {
			if tp := (engine.Partition{Topic: rp.Topic, Partition: rp.Partition}); deleted[tp] {
				codes[tp] = rp.ErrorCode
			}
		}
	}
	c.strayDeleted(b, codes)
	var touched []*topic
	for tp, code := range codes {
		t := c.topics[tp.Topic]
		if t == nil || t.deletion == nil {
			continue
		}
		k := replicaKey{tp.Partition, b}
		if t.deletion.replicas[k] != deletionStarted {
			continue
		}
		if code == 0 {
			t.deletion.replicas[k] = deletionSuccessful
		} else {
			t.deletion.replicas[k] = deletionIneligible
			t.deletion.ineligible = true
		}
		if !slices.Contains(touched, t) {
			touched = append(touched, t)
		}
	}
	slices.SortFunc(touched, func(a, b *topic) int { return cmpString(a.name, b.name) })
	for _, t := range touched {
		c.resumeDeletion(t)
	}
}

// tornDown removes a topic whose znodes are deleted, and takes the topic
// re-created under its name meanwhile, if any.
func (c *Controller) tornDown(name string) {
	t := c.topics[name]
	if t == nil {
		return
	}
	c.removeTopic(t)
	for _, p := range t.parts {
		c.batch.drop(p.tp)
		for b, m := range c.strays {
			delete(m, p.tp)
			if len(m) == 0 {
				delete(c.strays, b)
			}
		}
	}
	c.topicWrites[name] = slices.DeleteFunc(c.topicWrites[name], func(w Write) bool { return w.Op == SetAssignment })
	if len(c.topicWrites[name]) == 0 {
		delete(c.topicWrites, name)
	}
	if t.recreated != nil {
		c.topicChanged(*t.recreated)
	}
}
