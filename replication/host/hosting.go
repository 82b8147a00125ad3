package host

// Hosting: what the controller's LeaderAndIsr and StopReplica do to this
// broker's logs (Kafka's ReplicaManager.becomeLeaderOrFollower and
// stopReplicas). A partition this broker is a replica of has its log
// opened (created when new) at the first LeaderAndIsr naming it; as leader
// it serves produce and fetch at the request's leader epoch, which the log
// stamps into the batches it appends; as follower (or stopped) it answers
// NOT_LEADER_OR_FOLLOWER. StopReplica with deletion deletes the log.
//
// Topic ids: a log on disk whose partition.metadata names another topic id
// than the controller's is the log of an older topic of the same name
// (deleted, perhaps re-created, while this broker was away): it is deleted
// before the new one is created, as Kafka does at a LeaderAndIsr with an
// inconsistent id on a log nobody leads.
//
// Every change of leadership is reported to the topic's leadership
// listener (leadership.go) at the partition's leader epoch, after the
// partition's role lock is released, so a stale load cannot win over a
// newer change.
//
// The caller runs one control request at a time (the broker's
// ControlState.mu); Host and Unhost take Options.Admin around each
// topic's change, as topic administration and configuration changes
// replace a Topic under it. The topic's configuration must be readable
// without waiting (Options.TopicConfigs: the metadata backend's cache):
// the Store reads it under its own lock.

import (
	"fmt"
	"slices"
	"sync"

	"github.com/sluice-io/sluice/engine"
)

// Logs are the logs a Manager opens, creates and deletes (*engine.Store;
// a seam for tests and the whole-cluster simulation).
type Logs interface {
	// Log is an open log and the topic id its partition.metadata records.
	Log(tp engine.Partition) (*engine.Log, engine.TopicID, bool)
	CreateLogs(id engine.TopicID, tps ...engine.Partition) ([]*engine.Log, error)
	DeleteLog(tp engine.Partition) error
	// ReloadOptions re-reads a topic's configuration into its open logs.
	ReloadOptions(topic string)
}

// Hosted is one partition a LeaderAndIsr makes this broker a replica of,
// in the role the controller gives it.
type Hosted struct {
	Partition int32
	TopicID   engine.TopicID // zero when the controller sent none
	Leads     bool           // this broker leads it
	Leader    int32
	Leadership
}

// Host opens the logs of a topic's partitions in states (creating them),
// and makes each leader or follower as its role says (owner.go: each under
// its partition's role lock). It returns the partitions whose logs could
// not be opened or lead, with why.
func (m *Manager) Host(topic string, states []Hosted) map[int32]error {
	if len(states) == 0 {
		return nil
	}
	ts, failed := m.openHosted(topic, states)
	type opened struct {
		state Hosted
		p     *Partition
	}
	var hs []opened
	for _, s := range states {
		if failed[s.Partition] == nil && ts != nil && int(s.Partition) < len(ts.Partitions) && ts.Partitions[s.Partition] != nil {
			hs = append(hs, opened{s, ts.Partitions[s.Partition]})
		}
	}
	leaders := make([]*Partition, len(hs))
	roles := make([]Leadership, len(hs))
	for i, h := range hs {
		if h.state.Leads {
			leaders[i], roles[i] = h.p, h.state.Leadership
		}
	}
	leadErrs := m.becomeLeaders(leaders, roles)
	for i, h := range hs {
		s, p := h.state, h.p
		lead := s.Leads
		if lead {
			if err := leadErrs[i]; err != nil {
				m.o.Logger.Error("recording the leader epoch", "topic", topic, "partition", s.Partition, "epoch", s.Epoch, "err", err)
				failed[s.Partition] = err
				lead = false
			}
		} else {
			p.BecomeFollower(s.Leader, s.Epoch, s.PartitionEpoch, s.Replicas)
		}
		// The leadership listeners (the coordinators of the internal
		// topics) are told after the role lock is released: their appends
		// hold their own locks, then it.
		m.LeadershipChanged(topic, s.Partition, lead, s.Epoch)
	}
	return failed
}

// leaderEpochWorkers bounds the logs becoming leader at once.
const leaderEpochWorkers = 16

// becomeLeaders makes the non-nil partitions of ps leaders in their
// roles. Each records its leader epoch in its log, a durable write of the
// log's leader-epoch-checkpoint; they run side by side, so a LeaderAndIsr
// making this broker lead a thousand partitions (a controlled shutdown
// elsewhere, a failover) is not a thousand writes one after another. It
// returns each one's error, by index in ps.
func (m *Manager) becomeLeaders(ps []*Partition, roles []Leadership) []error {
	errs := make([]error, len(ps))
	live := m.o.LiveBrokers()
	var wg sync.WaitGroup
	sem := make(chan struct{}, leaderEpochWorkers)
	for i, p := range ps {
		if p == nil {
			continue
		}
		l := roles[i]
		l.Live = live
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = p.BecomeLeader(l)
		}()
	}
	wg.Wait()
	return errs
}

// openHosted opens or creates the logs of states under Options.Admin and
// publishes the topic's new state.
func (m *Manager) openHosted(topic string, states []Hosted) (*Topic, map[int32]error) {
	m.o.Admin.Lock()
	defer m.o.Admin.Unlock()
	id := states[0].TopicID
	old := m.Topic(topic)
	var zero engine.TopicID
	if old != nil && id != zero && old.ID != zero && old.ID != id {
		// An older topic of the same name: its logs go first.
		m.o.Logger.Info("deleting the logs of an older topic of the same name", "topic", topic, "old_id", old.ID.String(), "id", id.String())
		m.UnhostTopic(old)
		old = nil
	}
	failed := map[int32]error{}
	var need []engine.Partition
	for _, s := range states {
		if old != nil && int(s.Partition) < len(old.Partitions) && old.Partitions[s.Partition] != nil {
			continue
		}
		tp := engine.Partition{Topic: topic, Partition: s.Partition}
		if _, onDisk, ok := m.o.Logs.Log(tp); ok && onDisk != id {
			m.o.Logger.Info("deleting a log of another topic id", "topic", topic, "partition", s.Partition, "on_disk", onDisk.String(), "id", id.String())
			if err := m.o.Logs.DeleteLog(tp); err != nil {
				failed[s.Partition] = err
				continue
			}
		}
		need = append(need, tp)
	}
	configs := m.o.TopicConfigs(topic)
	var parts []*Partition
	if old != nil {
		parts = slices.Clone(old.Partitions)
	} else {
		// Logs found on disk at start were opened before the topic's
		// configuration was known here.
		m.o.Logs.ReloadOptions(topic)
	}
	if len(need) > 0 {
		logs, err := m.o.Logs.CreateLogs(id, need...)
		if err != nil {
			for _, tp := range need {
				failed[tp.Partition] = fmt.Errorf("broker: open the log of %s-%d: %w", topic, tp.Partition, err)
				// The logs the failed batch did create go: none of them is
				// served, and the controller sees them all as offline.
				if derr := m.o.Logs.DeleteLog(tp); derr != nil {
					m.o.Logger.Warn("removing a log of a failed batch", "topic", topic, "partition", tp.Partition, "err", derr)
				}
			}
			m.o.Logger.Error("opening hosted logs", "topic", topic, "err", err)
			need = nil
		}
		for i, tp := range need {
			for int(tp.Partition) >= len(parts) {
				parts = append(parts, nil)
			}
			parts[tp.Partition] = m.o.MakePartition(topic, tp.Partition, logs[i], configs)
		}
	}
	ts := &Topic{Name: topic, ID: id, Configs: configs, Partitions: parts}
	m.SetTopic(ts)
	return ts, failed
}

// Unhost stops serving a partition and, with remove, deletes its log. The
// caller runs one control request at a time; Options.Admin is taken.
func (m *Manager) Unhost(tp engine.Partition, leaderEpoch int32, remove bool) error {
	m.o.Admin.Lock()
	defer m.o.Admin.Unlock()
	ts := m.Topic(tp.Topic)
	var p *Partition
	if ts != nil && tp.Partition >= 0 && int(tp.Partition) < len(ts.Partitions) {
		p = ts.Partitions[tp.Partition]
	}
	if p != nil {
		p.Stop() // no more fetching, waiting produces fail
		m.LeadershipChanged(tp.Topic, tp.Partition, false, leaderEpoch)
	}
	if !remove {
		return nil
	}
	if ts != nil && p != nil {
		parts := slices.Clone(ts.Partitions)
		parts[tp.Partition] = nil
		next := *ts
		next.Partitions = parts
		m.PublishTopic(&next)
	}
	return m.o.Logs.DeleteLog(tp)
}

// UnhostTopic deletes every hosted log of a topic's state. Under
// Options.Admin.
func (m *Manager) UnhostTopic(ts *Topic) {
	m.DropTopic(ts)
	for _, p := range ts.Partitions {
		if p == nil {
			continue
		}
		p.Stop()
		if err := m.o.Logs.DeleteLog(engine.Partition{Topic: p.Topic, Partition: p.Index}); err != nil {
			m.o.Logger.Warn("deleting a log", "topic", p.Topic, "partition", p.Index, "err", err)
		}
	}
}
