package broker

// Topic administration beyond creation: deleting topics, adding
// partitions, and removing at start the logs the metadata no longer names.
// Each change is made durable in the coordinator first, then applied to the
// logs; a crash in between leaves logs the metadata does not name (deleted
// at the next start) or partitions the metadata names without logs (opened,
// hence created, at the next start), never the reverse.

import (
	"fmt"
	"slices"

	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/engine"
)

// deleteTopic removes a topic from the metadata, then deletes its logs.
// Fetches waiting on its partitions are woken and find it gone. The
// committed offsets of the topic are removed last, once Broker.admin is
// released: the group coordinator's lock comes before Broker.admin (doc.go).
func (b *Broker) deleteTopic(name string) error {
	deleted, err := b.deleteTopicLogs(name)
	if deleted {
		if g := b.existingGroups(); g != nil {
			if n := g.DeleteTopicOffsets(name); n > 0 {
				b.log.Info("removed the committed offsets of a deleted topic", "topic", name, "offsets", n)
			}
		}
	}
	return err
}

// deleteTopicLogs is deleteTopic under Broker.admin; deleted says whether
// the topic was removed from the metadata.
func (b *Broker) deleteTopicLogs(name string) (deleted bool, err error) {
	b.admin.Lock()
	defer b.admin.Unlock()
	if err := b.coord.DeleteTopic(name); err != nil {
		return false, err
	}
	b.mu.Lock()
	ts := b.mu.topics[name]
	delete(b.mu.topics, name)
	if ts != nil {
		delete(b.mu.byID, ts.meta.ID)
	}
	b.mu.Unlock()
	if ts == nil {
		return true, nil
	}
	var firstErr error
	for _, p := range ts.partitions {
		if p == nil {
			continue
		}
		if err := b.store.DeleteLog(engine.Partition{Topic: name, Partition: p.index}); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("broker: delete %s-%d: %w", name, p.index, err)
		}
		p.notify()
	}
	b.log.Info("deleted topic", "topic", name, "id", ts.meta.ID.String())
	return true, firstErr
}

// addPartitions grows a topic to n partitions. The topic's state is
// replaced, not changed in place: readers hold it without a lock.
func (b *Broker) addPartitions(name string, n int32) error {
	b.admin.Lock()
	defer b.admin.Unlock()
	t, err := b.coord.SetPartitions(name, n)
	if err != nil {
		return err
	}
	old := b.topic(name)
	if old == nil {
		return fmt.Errorf("broker: topic %s is in the metadata but not open", name)
	}
	ps, err := b.openPartitions(t, int32(len(old.partitions)), t.Partitions)
	if err != nil {
		return err
	}
	next := &topicState{meta: t, partitions: append(slices.Clip(old.partitions), ps...)}
	b.mu.Lock()
	b.mu.topics[name] = next
	b.mu.byID[t.ID] = next
	b.mu.Unlock()
	b.log.Info("added partitions", "topic", name, "partitions", t.Partitions)
	return nil
}

// removeOrphanLogs deletes the logs of topics the metadata does not name
// (deleted, or deleted and created again under a new ID) and of
// partitions past a topic's count: what a crash during a deletion leaves.
func (b *Broker) removeOrphanLogs() error {
	topics := map[string]coordinator.Topic{}
	for _, t := range b.coord.Topics() {
		topics[t.Name] = t
	}
	for _, tp := range b.store.Partitions() {
		_, id, ok := b.store.Log(tp)
		t, known := topics[tp.Topic]
		if !ok || known && t.ID == id && tp.Partition < t.Partitions {
			continue
		}
		b.log.Info("deleting the log of a deleted topic", "topic", tp.Topic, "partition", tp.Partition, "id", id.String())
		if err := b.store.DeleteLog(tp); err != nil {
			return fmt.Errorf("broker: delete orphan log %s-%d: %w", tp.Topic, tp.Partition, err)
		}
	}
	return nil
}
