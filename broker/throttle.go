package broker

// Replication throttles (Kafka's replication quotas, KIP-73), which bound
// the bytes/s a partition move copies so that clients keep their latency:
//
//   - The rates are dynamic broker configs, leader.replication.throttled.rate
//     and follower.replication.throttled.rate (bytes/s; default
//     Long.MAX_VALUE, no bound), for one broker (resource "<id>") or as the
//     cluster-wide default (resource ""); a change applies at once
//     (refreshAllLocked, after a local or a ZooKeeper change). Deliberate
//     difference: Kafka's brokers accept the cluster-wide default of these
//     two keys but apply only their own entity's (KAFKA-10190); sluice
//     applies the default, as it does for every other dynamic key. As in
//     Kafka they are dynamic only: the configuration file does not set
//     them.
//   - Which replicas they apply to are the topic configs
//     leader.replication.throttled.replicas and
//     follower.replication.throttled.replicas: "*" (every replica) or
//     partition:broker entries, of which each broker takes those naming it
//     (Kafka's TopicConfigHandler.parseThrottledPartitions). They become
//     two flags of the partition (refreshThrottles), read on the fetch paths
//     without a lock.
//   - Leader side (01_fetch.go, Kafka's ReplicaManager.shouldLeaderThrottle):
//     a follower's fetch of a leader-throttled partition gets no records
//     while the follower is outside the ISR and the leader quota is
//     exceeded; the fetch waits (long poll) until the quota allows again or
//     its MaxWaitMs passes. Follower side (replication/host/fetcher.go,
//     ReplicaFetcherThread.shouldFollowerThrottle): a follower-throttled
//     partition not in sync (its last fetch did not reach the leader's high
//     watermark) is left out of the fetch while the follower quota is
//     exceeded. In-sync replicas are never held back, but their bytes
//     count: every byte of a throttled partition is recorded, in sync or
//     not, as Kafka records them, so the quota bounds the replication
//     traffic of those partitions as a whole.
//   - The rate is measured as Kafka's SimpleRate (security/quota's
//     Replication); the quota is exceeded while it is above the bound.
//
// A throttle check is an atomic load per partition, and a quota's mutex
// once per fetch when a throttled partition is in it; nothing allocates.

import (
	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/replication/host"
	"github.com/sluice-io/sluice/security/quota"
)

// replicationQuotas are a broker's two quotas.
type replicationQuotas struct {
	leader, follower *quota.Replication
}

func (r *replicationQuotas) init(c config.ClusterConfig) {
	n, size := c.QuotaWindows()
	r.leader, r.follower = quota.NewReplication(n, size), quota.NewReplication(n, size)
}

// applyReplicationRates sets the quotas' bounds from the broker's layers
// (config.Layers.ReplicationRates), logging a change.
func (b *Broker) applyReplicationRates() {
	leader, follower := b.cfgs.Layers().ReplicationRates()
	for i, q := range [2]*quota.Replication{b.quotas.repl.leader, b.quotas.repl.follower} {
		rate := [2]int64{leader, follower}[i]
		if old := q.SetBound(rate); old != rate {
			b.log.Info("replication throttle", "key", config.ReplicationRateKeys[i], "bytes_per_second", rate)
		}
	}
}

// refreshThrottles sets p's throttle flags from its topic's configs.
func (b *Broker) refreshThrottles(p *host.Partition, topicConfigs map[string]string) {
	leader, follower := config.ThrottledReplicas(topicConfigs, p.Index, b.cfg.ID)
	p.LeaderThrottled.Store(leader)
	p.FollowerThrottled.Store(follower)
}
