package broker

// CreateTopics (key 19), versions 0-7.
//
// Behavior:
//   - NumPartitions and ReplicationFactor -1 (v4+) take the broker defaults
//     (num.partitions, default.replication.factor).
//   - Errors as Kafka: INVALID_TOPIC_EXCEPTION for a bad name,
//     TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS for a count below 1,
//     INVALID_REPLICATION_FACTOR for a factor below 1 or above the number of
//     live brokers, INVALID_REPLICA_ASSIGNMENT for a manual assignment
//     Kafka refuses (the single node: one naming another broker),
//     INVALID_CONFIG for unknown keys, bad values or settings sluice cannot
//     honour yet, INVALID_REQUEST for a topic named twice.
//   - A request for more than 10,000 partitions in all is refused whole
//     with POLICY_VIOLATION, as Kafka does (KAFKA-17870), before anything
//     is created (each partition costs a directory, files and fsyncs).
//   - validate_only (v1+) checks everything and creates nothing.
//   - controller_mutation_rate: each topic's partitions, strict from v6
//     (THROTTLING_QUOTA_EXCEEDED; mutationquota.go).
//
// Version notes: v5+ returns the partitions, factor and every topic config
// with its effective value and source (as DescribeConfigs); v7+ the topic
// ID.

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(19, 0, 7, handleCreateTopics) }

// handleCreateTopics: broker/cluster/topicadmin.go checks, creates and
// waits.
func handleCreateTopics(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.CreateTopicsRequest)
	a := cluster.Admin{
		Allowed: func(topic string) bool {
			return c.authorizedCluster(acl.OpCreate) || c.authorized(acl.OpCreate, acl.ResourceTopic, topic)
		},
		Record: c.mutationRecorder(req.Version, 6),
	}
	if c.b.plane.zk == nil {
		a.Unhosted = c.b.undoUnhostedTopic
	}
	return c.b.plane.dir.CreateTopics(req, a), nil
}

// undoUnhostedTopic deletes a topic the single node created but could not
// open every log of (a directory it cannot make): neither this broker nor
// its next start holds a topic with partitions no broker can serve. It
// returns KAFKA_STORAGE_ERROR then. In a cluster, a replica that fails so
// is the controller's to handle (the failover issue), not the creation's.
func (b *Broker) undoUnhostedTopic(name string, partitions int32) (int16, string) {
	ts := b.topic(name)
	missing := int32(-1)
	for i := range partitions {
		if ts == nil || int(i) >= len(ts.Partitions) || ts.Partitions[i] == nil {
			missing = i
			break
		}
	}
	if missing < 0 {
		return 0, ""
	}
	b.log.Error("created topic has a partition whose log could not be opened: deleting it", "topic", name, "partition", missing)
	// Its partitions are offline (their logs failed), so the controller
	// finishes the deletion when the broker next starts; the topic is out
	// of the metadata at once.
	if err := b.coord.DeleteTopic(name); err != nil {
		b.log.Warn("deleting a topic that could not be opened", "topic", name, "err", err)
	}
	if emb, ok := b.coord.(*coordinator.Embedded); ok {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := emb.WaitIdle(ctx); err != nil {
			b.log.Warn("deleting a topic that could not be opened", "topic", name, "err", err)
		}
	}
	return kerr.KafkaStorageError.Code, fmt.Sprintf("the log of %s-%d could not be created", name, missing)
}
