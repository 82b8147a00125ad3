package broker

import (
	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/replication/host"
)

// topicState is a topic's metadata and its partitions.
type topicState struct {
	meta       coordinator.Topic
	partitions []*host.Partition
}

// hostedLocked lists the hosted partitions; Broker.mu is held (read or
// write).
func (b *Broker) hostedLocked() []*host.Partition {
	var parts []*host.Partition
	for _, ts := range b.mu.topics {
		for _, p := range ts.partitions {
			if p != nil {
				parts = append(parts, p)
			}
		}
	}
	return parts
}
