package broker

// Hosting: what the controller's LeaderAndIsr and StopReplica do to this
// broker's logs in a cluster (Kafka's ReplicaManager.becomeLeaderOrFollower
// and stopReplicas). A partition this broker is a replica of has its log
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
// listener (replication/host's leadership.go): the group coordinator's
// for __consumer_offsets (leading a partition loads its groups, following
// or stopping unloads them) and the transaction coordinators' for
// __transaction_state, at the partition's leader epoch, so a stale load
// cannot win over a newer change.
//
// Runs under ControlState.mu (one control request at a time) and takes
// Broker.admin around each topic's change, as topic administration and
// configuration changes replace a topicState under it: lock order
// ControlState.mu, Broker.admin, then the Store's and Broker.mu (doc.go).
// The topic's configuration must be in the coordinator's cache already:
// the Store reads it under its own lock (LogOptions), where nothing may
// wait for ZooKeeper, so handleLeaderAndIsr loads it before.

import (
	"fmt"
	"slices"
	"sync"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/replication/host"
)

// hostedState is one partition a LeaderAndIsr made this broker a replica
// of, as the role table now has it.
type hostedState struct {
	partition int32
	role      cluster.Role
}

// host opens the logs of a topic's partitions in states (creating them),
// and makes each leader or follower as its role says (replication/host/owner.go: each under
// its partition's role lock). It returns the partitions whose logs could not
// be opened or lead, with why.
func (b *Broker) host(topic string, states []hostedState) map[int32]error {
	if len(states) == 0 {
		return nil
	}
	ts, failed := b.openHosted(topic, states)
	var opened []hostedPartition
	for _, s := range states {
		if failed[s.partition] == nil && ts != nil && int(s.partition) < len(ts.Partitions) && ts.Partitions[s.partition] != nil {
			opened = append(opened, hostedPartition{s, ts.Partitions[s.partition]})
		}
	}
	leadErrs := b.becomeLeaders(opened)
	for i, h := range opened {
		s, p := h.state, h.p
		lead := s.role.Leads()
		if lead {
			if err := leadErrs[i]; err != nil {
				b.log.Error("recording the leader epoch", "topic", topic, "partition", s.partition, "epoch", s.role.LeaderEpoch, "err", err)
				failed[s.partition] = err
				lead = false
			}
		} else {
			p.BecomeFollower(s.role.Leader, s.role.LeaderEpoch, s.role.ZKVersion, s.role.Replicas)
		}
		// The leadership listeners (the coordinators of the internal
		// topics) are told after the role lock is released: their appends
		// hold their own locks, then it.
		b.replicas.LeadershipChanged(topic, s.partition, lead, s.role.LeaderEpoch)
	}
	return failed
}

// hostedPartition is a state of a LeaderAndIsr with its opened partition.
type hostedPartition struct {
	state hostedState
	p     *host.Partition
}

// leaderEpochWorkers bounds the logs becoming leader at once.
const leaderEpochWorkers = 16

// becomeLeaders makes the partitions of hs that lead now leaders. Each
// records its leader epoch in its log, a durable write of the log's
// leader-epoch-checkpoint; they run side by side, so a LeaderAndIsr making
// this broker lead a thousand partitions (a controlled shutdown elsewhere,
// a failover) is not a thousand writes one after another. It returns each
// one's error, by index in hs.
func (b *Broker) becomeLeaders(hs []hostedPartition) []error {
	errs := make([]error, len(hs))
	live := b.liveIDs()
	var wg sync.WaitGroup
	sem := make(chan struct{}, leaderEpochWorkers)
	for i, h := range hs {
		r := h.state.role
		if !r.Leads() {
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = h.p.BecomeLeader(host.Leadership{Epoch: r.LeaderEpoch, PartitionEpoch: r.ZKVersion, ISR: r.ISR, Replicas: r.Replicas, Live: live})
		}()
	}
	wg.Wait()
	return errs
}

// openHosted opens or creates the logs of states under Broker.admin and
// publishes the topic's new state.
func (b *Broker) openHosted(topic string, states []hostedState) (*host.Topic, map[int32]error) {
	b.admin.Lock()
	defer b.admin.Unlock()
	id := states[0].role.TopicID
	old := b.topic(topic)
	var zero engine.TopicID
	if old != nil && engine.TopicID(id) != zero && old.ID != zero && old.ID != engine.TopicID(id) {
		// An older topic of the same name: its logs go first.
		b.log.Info("deleting the logs of an older topic of the same name", "topic", topic, "old_id", old.ID.String(), "id", engine.TopicID(id).String())
		b.unhostTopic(old)
		old = nil
	}
	failed := map[int32]error{}
	var need []engine.Partition
	for _, s := range states {
		if old != nil && int(s.partition) < len(old.Partitions) && old.Partitions[s.partition] != nil {
			continue
		}
		tp := engine.Partition{Topic: topic, Partition: s.partition}
		if _, onDisk, ok := b.store.Log(tp); ok && onDisk != engine.TopicID(id) {
			b.log.Info("deleting a log of another topic id", "topic", topic, "partition", s.partition, "on_disk", onDisk.String(), "id", engine.TopicID(id).String())
			if err := b.store.DeleteLog(tp); err != nil {
				failed[s.partition] = err
				continue
			}
		}
		need = append(need, tp)
	}
	meta, _ := b.coord.Topic(topic)
	meta.Name, meta.ID = topic, engine.TopicID(id)
	var parts []*host.Partition
	if old != nil {
		parts = slices.Clone(old.Partitions)
	}
	if old == nil {
		// Logs found on disk at start were opened before the topic's
		// configuration was known here.
		b.store.ReloadOptions(topic)
	}
	if len(need) > 0 {
		logs, err := b.store.CreateLogs(meta.ID, need...)
		if err != nil {
			for _, tp := range need {
				failed[tp.Partition] = fmt.Errorf("broker: open the log of %s-%d: %w", topic, tp.Partition, err)
				// The logs the failed batch did create go: none of them is
				// served, and the controller sees them all as offline.
				if derr := b.store.DeleteLog(tp); derr != nil {
					b.log.Warn("removing a log of a failed batch", "topic", topic, "partition", tp.Partition, "err", derr)
				}
			}
			b.log.Error("opening hosted logs", "topic", topic, "err", err)
			need = nil
		}
		for i, tp := range need {
			for int(tp.Partition) >= len(parts) {
				parts = append(parts, nil)
			}
			parts[tp.Partition] = b.newPartition(meta, tp.Partition, logs[i])
		}
	}
	ts := &host.Topic{Name: topic, ID: meta.ID, Configs: meta.Configs, Partitions: parts}
	b.replicas.SetTopic(ts)
	return ts, failed
}

// unhost stops serving a partition and, with remove, deletes its log. Under
// ControlState.mu.
func (b *Broker) unhost(tp engine.Partition, leaderEpoch int32, remove bool) error {
	b.admin.Lock()
	defer b.admin.Unlock()
	ts := b.topic(tp.Topic)
	var p *host.Partition
	if ts != nil && tp.Partition >= 0 && int(tp.Partition) < len(ts.Partitions) {
		p = ts.Partitions[tp.Partition]
	}
	if p != nil {
		p.Stop() // no more fetching, waiting produces fail
		b.replicas.LeadershipChanged(tp.Topic, tp.Partition, false, leaderEpoch)
	}
	if !remove {
		return nil
	}
	if ts != nil && p != nil {
		parts := slices.Clone(ts.Partitions)
		parts[tp.Partition] = nil
		next := *ts
		next.Partitions = parts
		b.replicas.PublishTopic(&next)
	}
	return b.store.DeleteLog(engine.Partition{Topic: tp.Topic, Partition: tp.Partition})
}

// unhostTopic deletes every hosted log of a topic's state. Under
// Broker.admin.
func (b *Broker) unhostTopic(ts *host.Topic) {
	b.replicas.DropTopic(ts)
	for _, p := range ts.Partitions {
		if p == nil {
			continue
		}
		p.Stop()
		if err := b.store.DeleteLog(engine.Partition{Topic: p.Topic, Partition: p.Index}); err != nil {
			b.log.Warn("deleting a log", "topic", p.Topic, "partition", p.Index, "err", err)
		}
	}
}

// newPartition wraps a log opened for t, following t's configuration.
// Configuration changes hold b.admin, as the callers do: the log's options
// and t's configs are current.
func (b *Broker) newPartition(t coordinator.Topic, index int32, l *engine.Log) *host.Partition {
	p := b.replicas.NewPartition(t.Name, index, l, b.cfgs.layers().MinInsyncReplicas(t.Configs), b.metrics.ForTopic(t.Name))
	p.DurableHW.Store(l.Options().FlushMessages == 1)
	p.Compacted.Store(l.Options().Compaction.Policy != engine.PolicyDelete)
	b.refreshThrottles(p, t.Configs)
	return p
}
