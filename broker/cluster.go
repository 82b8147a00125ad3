package broker

// ZooKeeper mode (broker/cluster/zookeeper.go: the session, the
// registration, the controller driver, the requests to the controller):
// what the broker gives it, its own side of a session expiry and the
// controller driver's election options.

import (
	"strconv"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/coordinator/zk"
	"github.com/sluice-io/sluice/replication/host"
	"github.com/sluice-io/sluice/wire/interbroker"
)

// startCluster registers the broker in ZooKeeper, once it listens, and
// starts its controller driver.
func (b *Broker) startCluster() {
	zc := b.plane.zk
	zc.Start(cluster.Start{Self: b.self(), Endpoints: b.registeredEndpoints(),
		Dial: func(o interbroker.Options) interbroker.Sender { return b.openInterBroker(zc.Client(), o) },
		ControllerRequests: interbroker.Options{RequestTimeout: host.RequestTimeout,
			ClientID: "broker-" + strconv.Itoa(int(b.cfg.ID)) + "-alter-partition"},
		Loop: b.electionLoopOptions(zk.LoopOptions{}), StopLeading: b.stopLeading})
}

// stopLeading makes every hosted partition a non-leader, and unloads the
// groups, until the controller's next LeaderAndIsr: after a session expiry
// this broker may have been replaced as leader already.
func (b *Broker) stopLeading() {
	b.plane.state.Locked(b.stopLeadingLocked)
}

// stopLeadingLocked is stopLeading under the control lock.
func (b *Broker) stopLeadingLocked() {
	tab := b.plane.state.Roles.Edit()
	for tp, r := range tab.Roles {
		if r.IsLeader {
			r.IsLeader = false
			tab.Roles[tp] = r
			if err := b.replicas.Unhost(tp, r.LeaderEpoch, false); err != nil {
				b.log.Warn("stopping a partition", "topic", tp.Topic, "partition", tp.Partition, "err", err)
			}
		}
	}
	b.plane.state.Roles.Publish(tab)
}

// electionLoopOptions are o with the controller driver's election options: the
// rebalance's settings, and each topic's effective unclean election
// setting from the broker's layers (the static default, then the dynamic
// ones, then the topic's override, as DescribeConfigs reports it); and, with
// metrics, the elections counted (metrics.go).
func (b *Broker) electionLoopOptions(o zk.LoopOptions) zk.LoopOptions {
	c := b.cfg.Cluster.Election
	o.AutoLeaderRebalance = c.AutoLeaderRebalance
	o.ImbalanceCheckInterval = c.ImbalanceCheckInterval
	o.ImbalancePercentage = c.ImbalancePercentage
	o.Unclean = func(topicConfigs map[string]string) bool {
		return b.cfgs.Layers().UncleanLeaderElection(topicConfigs)
	}
	if m := b.metrics.reg; m != nil {
		o.Elected = func(e zk.LeaderElection) { m.Elected(e.Took, e.Unclean) }
	}
	return o
}
