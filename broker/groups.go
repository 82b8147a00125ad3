package broker

// The group coordinator's place in the broker: coordinator/group/host's
// Groups over the partitions of __consumer_offsets this broker leads,
// created on first use as Kafka creates it (on the first FindCoordinator),
// with Kafka's internal topic configs (config.OffsetsTopicConfigs).

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator/group"
	grouphost "github.com/sluice-io/sluice/coordinator/group/host"
	"github.com/sluice-io/sluice/wire/interbroker"
)

// offsetsTopic is Kafka's internal topic of committed offsets and group
// metadata.
const offsetsTopic = grouphost.OffsetsTopic

// newGroups makes the group coordinator: it owns no partition of
// __consumer_offsets until the controller makes this broker the leader
// of one (its Move, a leadership listener: replication/host/hosting.go).
func (b *Broker) newGroups() *grouphost.Groups {
	gc := b.cfg.Groups.WithDefaults()
	n := gc.OffsetsPartitions
	if t, ok := b.coord.Topic(offsetsTopic); ok && t.Partitions > 0 {
		n = t.Partitions // as it was created
	}
	opts := grouphost.GroupsOptions{
		Config: b.cfg.Groups, Logger: b.log, Partitions: n,
		Topics: func(topic string) (int32, bool) {
			_, n, ok := b.plane.dir.Topic(topic)
			return n, ok
		},
		Store: grouphost.Options{Leader: b.leaderPartition, Closing: b.life.closing,
			VerifyTxn: b.coords.verifier.VerifyPartition},
		Lag: grouphost.LagOptions{HighWatermark: b.leaderHighWatermark, Leader: b.otherLeader,
			ClientID: "broker-" + strconv.Itoa(int(b.cfg.ID)) + "-lag"},
	}
	if b.plane.zk == nil {
		opts.CreateTopic, opts.CreateWait = b.createOffsetsTopic, cluster.AutoCreateWait
	} else {
		opts.Lag.Dial = func(o interbroker.Options) interbroker.Sender { return b.openInterBroker(b.plane.zk.Client(), o) }
	}
	return grouphost.NewGroups(opts)
}

// groupCoordinator returns the group coordinator for a group request.
func (b *Broker) groupCoordinator() (*group.Coordinator, error) {
	return b.coords.groups.Coordinator()
}

// createOffsetsTopic creates __consumer_offsets on the single node if it
// does not exist, as the first FindCoordinator would.
func (b *Broker) createOffsetsTopic() (bool, error) {
	if b.topicExists(offsetsTopic) {
		return false, nil
	}
	if _, _, _, code, msg := b.clusterCoordinator("", b.selfListener()); code != 0 {
		return false, fmt.Errorf("broker: %s (%v)", msg, kerr.ErrorForCode(code))
	}
	return true, nil
}

// clusterCoordinator finds a group's coordinator: the leader of its
// partition of __consumer_offsets.
func (b *Broker) clusterCoordinator(key, listener string) (id int32, host string, port int32, code int16, msg string) {
	gc := b.cfg.Groups.WithDefaults()
	g := b.coords.groups.Existing()
	return b.plane.dir.Coordinator(cluster.InternalTopic{Name: offsetsTopic, Partitions: g.Partitions(),
		Replication: gc.OffsetsReplication, ReplicationKey: "offsets.topic.replication.factor",
		Configs: config.OffsetsTopicConfigs(gc), What: "group"}, key, listener,
		func(ctx context.Context, p int32) { _ = g.WaitLoaded(ctx, p) })
}

// leaderHighWatermark is the high watermark of a partition this broker
// leads.
func (b *Broker) leaderHighWatermark(topic string, partition int32) (int64, bool) {
	if p := b.partition(topic, partition); p != nil && p.Leads() {
		return p.HighWatermark(), true
	}
	return 0, false
}

// otherLeader is the leader of a partition another broker leads, by the
// metadata cache.
func (b *Broker) otherLeader(topic string, partition int32) (int32, bool) {
	t := b.plane.state.Cache.Load().Topics[topic]
	if t == nil {
		return -1, false
	}
	cp, ok := t.Partitions[partition]
	if !ok || cp.Leader < 0 || cp.Leader == b.cfg.ID {
		return -1, false
	}
	return cp.Leader, true
}

// migrateOffsetsTopic switches a __consumer_offsets created before
// compaction existed to the compacted configs
// (config.MigratedOffsetsTopicConfigs).
func (b *Broker) migrateOffsetsTopic(configs map[string]string) error {
	next, ok := config.MigratedOffsetsTopicConfigs(configs, b.cfg.Groups.WithDefaults())
	if !ok {
		return nil
	}
	b.admin.Lock()
	defer b.admin.Unlock()
	if code, msg := b.cfgs.SetTopicConfigsLocked(offsetsTopic, next, false); code != 0 {
		return fmt.Errorf("broker: migrate %s to cleanup.policy=compact: %s (%v)", offsetsTopic, msg, kerr.ErrorForCode(code))
	}
	b.log.Info("migrated "+offsetsTopic+" to cleanup.policy=compact", "from", configs, "to", next)
	return nil
}

// GroupLag returns the lag of every group this broker coordinates, by
// group, topic and partition (grouphost's Groups.Lag).
func (b *Broker) GroupLag(ctx context.Context) []grouphost.Lag { return b.coords.groups.Lag(ctx) }

// clientHost is the connection's peer as Kafka reports it: "/" and the IP.
func (c *conn) clientHost() string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return "/" + a.IP.String()
	}
	return "/" + c.RemoteAddr().String()
}
