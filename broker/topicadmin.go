package broker

// Removing at start the logs the single node's metadata no longer names:
// what a crash during a deletion leaves (the controller deletes topics,
// broker/cluster/directory.go and replication/host/hosting.go).

import (
	"fmt"

	"github.com/sluice-io/sluice/coordinator"
)

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
