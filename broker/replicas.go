package broker

import (
	"slices"

	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/replication/host"
	"github.com/sluice-io/sluice/wire/interbroker"
)

// newReplicas is the manager of the partitions this broker hosts
// (replication/host), with its collaborators: the logs of the Store, the
// administration lock, the topics' configurations from the coordinator's
// cache, and in a cluster the followers' connections to the leaders, the
// controller that takes ISR changes, the follower quota.
func (b *Broker) newReplicas() *host.Manager {
	o := host.Options{Self: b.cfg.ID, LagTimeMax: b.cfg.Cluster.LagTimeMax(), Logger: b.log, Metrics: b.metrics.reg, Closing: b.life.closing,
		Logs: b.store, Admin: &b.admin, LiveBrokers: b.liveIDs, MakePartition: b.newPartition,
		TopicConfigs: func(topic string) map[string]string {
			t, _ := b.coord.Topic(topic)
			return t.Configs
		}}
	if cl := b.plane.zk; cl != nil {
		o.Fetch = b.cfg.Cluster.Fetch
		o.Dial = func(io interbroker.Options) interbroker.Sender { return b.openInterBroker(cl.Client(), io) }
		o.Controller = cl
		o.FollowerQuota = b.quotas.repl.follower
		o.LogDirChanged = cl.LogDirChanged
	}
	return host.New(o)
}

// newPartition wraps a log opened for a topic, following its
// configuration. Configuration changes hold b.admin, as hosting does: the
// log's options and the configs are current.
func (b *Broker) newPartition(topic string, index int32, l *engine.Log, configs map[string]string) *host.Partition {
	p := b.replicas.NewPartition(topic, index, l, b.cfgs.Layers().MinInsyncReplicas(configs), b.metrics.reg.ForTopic(topic))
	p.DurableHW.Store(l.Options().FlushMessages == 1)
	p.Compacted.Store(l.Options().Compaction.Policy != engine.PolicyDelete)
	b.refreshThrottles(p, configs)
	return p
}

// liveIDs is the metadata cache's live brokers, sorted.
func (b *Broker) liveIDs() []int32 {
	snap := b.plane.state.Cache.Load()
	ids := make([]int32, 0, len(snap.Brokers))
	for _, br := range snap.Brokers {
		ids = append(ids, br.ID)
	}
	slices.Sort(ids)
	return ids
}
