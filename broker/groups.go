package broker

// The group coordinator's place in the broker: __consumer_offsets, created
// on first use as Kafka creates it (on the first FindCoordinator), and the
// coordinator/group.Coordinator loaded from it. The coordinator reads and
// appends through offsetsStore, a partition interface: it knows nothing of
// the engine, so replication will cover offsets without changing it.
//
// __consumer_offsets is compacted, with Kafka's internal topic configs
// (GroupCoordinatorService.groupMetadataTopicConfigs): cleanup.policy=compact,
// compression.type=producer, segment.bytes=offsets.topic.segment.bytes. The
// cleaner keeps each group's latest offset per partition and its latest
// metadata, and drops what tombstones deleted once delete.retention.ms has
// passed, so loading reads a bounded log and no retention by time loses the
// offsets of a quiet group. Brokers from before compaction created the topic
// with retention.ms=-1 and retention.bytes=-1 (keep everything) instead; at
// start such a topic is switched to the compacted configs
// (migrateOffsetsTopicLocked).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator/group"
	grouphost "github.com/sluice-io/sluice/coordinator/group/host"
)

// offsetsTopic is Kafka's internal topic of committed offsets and group
// metadata.
const offsetsTopic = grouphost.OffsetsTopic

// groupsState holds the group coordinator once it exists. Lock order:
// Broker.admin before groupsState.mu (unhost's moveGroups reads the
// coordinator under admin), groupsState.mu before coordinator/group's own
// locks (the coordinator is made and closed under it); __consumer_offsets
// is created after it is released.
type groupsState struct {
	mu     sync.Mutex
	c      *group.Coordinator
	closed bool
}

// groupCoordinator returns the group coordinator (startClusterGroups made
// it at New). On the single node the first group request creates
// __consumer_offsets, as the first FindCoordinator does: a client that
// knows its coordinator is the only broker may skip FindCoordinator.
func (b *Broker) groupCoordinator() (*group.Coordinator, error) {
	b.groups.mu.Lock()
	closed, g := b.groups.closed, b.groups.c
	b.groups.mu.Unlock()
	if closed {
		return nil, errors.New("broker: closing")
	}
	if b.cluster == nil && !b.topicExists(offsetsTopic) {
		if _, _, _, code, msg := b.clusterCoordinator("", b.selfListener()); code != 0 {
			return nil, fmt.Errorf("broker: %s (%v)", msg, kerr.ErrorForCode(code))
		}
		ctx, cancel := context.WithTimeout(context.Background(), autoCreateWaitMs*time.Millisecond)
		defer cancel()
		for p := range g.Partitions() {
			if err := g.WaitLoaded(ctx, p); err != nil {
				return nil, fmt.Errorf("broker: loading %s-%d: %w", offsetsTopic, p, err)
			}
		}
	}
	return g, nil
}

// startClusterGroups starts the group coordinator: it owns no partition
// of __consumer_offsets until the controller makes this broker the leader
// of one (hosting.go's moveGroups).
func (b *Broker) startClusterGroups() {
	b.groups.mu.Lock()
	defer b.groups.mu.Unlock()
	n := b.cfg.Groups.WithDefaults().OffsetsPartitions
	if t, ok := b.coord.Topic(offsetsTopic); ok && t.Partitions > 0 {
		n = t.Partitions // the single node's, as it was created
	}
	b.groups.c = group.NewPartitioned(b.groupConfig(n), b.offsetsStore())
}

// groupConfig is the group coordinator's configuration over partitions
// partitions of __consumer_offsets.
func (b *Broker) groupConfig(partitions int32) group.Config {
	gc := b.cfg.Groups.WithDefaults()
	cfg := group.Config{
		Partitions:            partitions,
		MinSessionTimeout:     gc.MinSessionTimeout,
		MaxSessionTimeout:     gc.MaxSessionTimeout,
		MaxGroupSize:          gc.MaxSize,
		OffsetsRetention:      gc.OffsetsRetention,
		OffsetsRetentionCheck: gc.OffsetsRetentionCheck,
		MaxMetadataBytes:      gc.OffsetMetadataMax,
		Logger:                b.log,
		Topics:                b.topicPartitions,
	}
	if d := gc.InitialRebalanceDelay; d != nil {
		cfg.InitialRebalanceDelay, cfg.NoInitialDelay = *d, *d == 0
	}
	return cfg
}

// topicPartitions is a topic's partition count in the controller's
// metadata.
func (b *Broker) topicPartitions(topic string) (int32, bool) {
	_, n, ok := b.clusterTopic(topic)
	return n, ok
}

// offsetsTopicConfigs are the configs __consumer_offsets is created with,
// Kafka's.
func offsetsTopicConfigs(gc config.GroupConfig) map[string]string {
	return map[string]string{
		"cleanup.policy":   "compact",
		"compression.type": "producer",
		"segment.bytes":    strconv.FormatInt(gc.OffsetsSegmentBytes, 10),
	}
}

// migrateOffsetsTopic switches a __consumer_offsets created before
// compaction existed (retention.ms=-1 and no cleanup.policy) to the
// compacted configs: the interim retention keys go, Kafka's internal topic
// configs come, other overrides stay.
func (b *Broker) migrateOffsetsTopic(configs map[string]string, gc config.GroupConfig) error {
	if _, ok := configs["cleanup.policy"]; ok || configs["retention.ms"] != "-1" {
		return nil
	}
	next := maps.Clone(configs)
	delete(next, "retention.ms")
	if next["retention.bytes"] == "-1" {
		delete(next, "retention.bytes")
	}
	maps.Copy(next, offsetsTopicConfigs(gc))
	if s, ok := configs["segment.bytes"]; ok {
		next["segment.bytes"] = s // as created: offsets.topic.segment.bytes applies to new topics only, as in Kafka
	}
	b.admin.Lock()
	defer b.admin.Unlock()
	if code, msg := b.setTopicConfigsLocked(offsetsTopic, next, false); code != 0 {
		return fmt.Errorf("broker: migrate %s to cleanup.policy=compact: %s (%v)", offsetsTopic, msg, kerr.ErrorForCode(code))
	}
	b.log.Info("migrated "+offsetsTopic+" to cleanup.policy=compact", "from", configs, "to", next)
	return nil
}

// offsetsStore is the group coordinator's store: the partitions of
// __consumer_offsets this broker leads.
func (b *Broker) offsetsStore() *grouphost.Store {
	return grouphost.NewStore(grouphost.Options{
		Leader: b.leaderPartition, Closing: b.closing,
		VerifyTxn: b.verifyOffsets, // txnverify.go
	})
}

// existingGroups is the group coordinator if it exists already.
func (b *Broker) existingGroups() *group.Coordinator {
	b.groups.mu.Lock()
	defer b.groups.mu.Unlock()
	return b.groups.c
}

// closeGroups stops the group coordinator: parked joins and syncs are
// answered (NOT_COORDINATOR) so that connections can finish.
func (b *Broker) closeGroups() {
	b.groups.mu.Lock()
	defer b.groups.mu.Unlock()
	b.groups.closed = true
	if b.groups.c != nil {
		b.groups.c.Close()
	}
}

// clientHost is the connection's peer as Kafka reports it: "/" and the IP.
func (c *conn) clientHost() string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return "/" + a.IP.String()
	}
	return "/" + c.RemoteAddr().String()
}
