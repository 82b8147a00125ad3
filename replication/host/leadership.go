package host

// Leadership listeners (Kafka's ReplicaManager onLeadershipChange, through
// which the group and transaction coordinators learn which partitions of
// their internal topics this broker leads): the broker registers one per
// topic before it hosts any partition, and whoever changes a partition's
// role reports the change (LeadershipChanged) once the partition's role
// lock is released, because the listeners' appends take their own locks,
// then the partition's.

// LeadershipListener is told that this broker now leads (lead) or no
// longer leads a partition of its topic, at the partition's leader epoch.
type LeadershipListener func(partition int32, lead bool, leaderEpoch int32)

// OnLeadership registers f for the partitions of topic. Called before the
// broker hosts any partition.
func (m *Manager) OnLeadership(topic string, f LeadershipListener) {
	m.listeners[topic] = f
}

// LeadershipChanged tells topic's listener, if any, that this broker leads
// (lead) or no longer leads partition at leaderEpoch. Called with no
// partition lock held.
func (m *Manager) LeadershipChanged(topic string, partition int32, lead bool, leaderEpoch int32) {
	if f := m.listeners[topic]; f != nil {
		f(partition, lead, leaderEpoch)
	}
}
