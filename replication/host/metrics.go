package host

import "github.com/sluice-io/sluice/metrics"

// PartitionStates is every hosted partition's state for a metrics scrape
// (metrics.State's Partitions). The table's lock is released before each
// partition's replica lock is taken (Health).
func (m *Manager) PartitionStates() []metrics.PartitionState {
	parts := m.Hosted()
	out := make([]metrics.PartitionState, 0, len(parts))
	for _, p := range parts {
		ps := metrics.PartitionState{Topic: p.Topic, Partition: p.Index, Leader: p.Leads(), Failed: p.Failed(),
			Size: p.Log.Size(), StartOffset: p.Log.StartOffset(), EndOffset: p.Log.EndOffset(), Segments: len(p.Log.SegmentBases())}
		ps.UnderReplicated, ps.UnderMinISR = p.Health()
		out = append(out, ps)
	}
	return out
}
