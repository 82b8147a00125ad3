package broker

import (
	"slices"
	"sync"
	"time"

	"github.com/sluice-io/sluice/replication/host"
	"github.com/sluice-io/sluice/wire/interbroker"
)

// The broker's side of its partitions' replication clocks and membership
// (the drivers are replication/host's): the ISR-expiration tick, and the
// live brokers stepped into every hosted partition when they change.

// newReplicas is the manager of the partitions this broker hosts, with
// its collaborators: in a cluster the followers' connections to the
// leaders, the controller that takes ISR changes, the follower quota.
func (b *Broker) newReplicas() *host.Manager {
	o := host.Options{Self: b.cfg.ID, LagTimeMax: b.cfg.Cluster.LagTimeMax(), Logger: b.log, Metrics: b.metrics, Closing: b.closing}
	if cl := b.cluster; cl != nil {
		o.Fetch = b.cfg.Cluster.Fetch
		o.Dial = func(io interbroker.Options) interbroker.Sender { return b.openInterBroker(cl.zk, io) }
		o.Controller = isrController{cl}
		o.FollowerQuota = b.repl.follower
		o.LogDirChanged = cl.logDirChanged
	}
	return host.New(o)
}

// tickReplicas steps the clock into every hosted partition's core: ISR
// shrinks of followers that stopped fetching. Every lag/2, as Kafka's
// isr-expiration task.
func (b *Broker) tickReplicas(lag time.Duration) {
	t := time.NewTicker(lag / 2)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-b.closing:
			return
		}
		for _, p := range b.replicas.Hosted() {
			if p.Leads() {
				p.Tick()
			}
		}
	}
}

// liveBrokers is the set of live brokers (from the metadata cache) the
// partitions' cores were last told, so that only a change is stepped into
// every partition. Lock order: mu before Broker.mu and the partitions'
// replica locks.
type liveBrokers struct {
	mu  sync.Mutex
	ids []int32
}

// liveIDs is the metadata cache's live brokers, sorted.
func (b *Broker) liveIDs() []int32 {
	snap := b.ctl.Cache.Load()
	ids := make([]int32, 0, len(snap.Brokers))
	for _, br := range snap.Brokers {
		ids = append(ids, br.ID)
	}
	slices.Sort(ids)
	return ids
}

// liveBrokersChanged tells every hosted partition's core the live brokers
// when they changed (replication.LiveBrokers: a dead broker's caught-up
// replica outside the ISR no longer holds the high watermark back).
func (b *Broker) liveBrokersChanged() {
	ids := b.liveIDs()
	b.live.mu.Lock()
	defer b.live.mu.Unlock()
	if len(ids) == 0 || slices.Equal(ids, b.live.ids) {
		return
	}
	b.live.ids = ids
	for _, p := range b.replicas.Hosted() {
		p.SetLiveBrokers(ids)
	}
}
