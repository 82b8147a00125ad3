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
	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/security/quota"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(19, 0, 7, handleCreateTopics) }

func handleCreateTopics(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	if requestedPartitions(req, c.b.cfg.NumPartitions) > maxPartitionsPerRequest {
		// As Kafka (KAFKA-17870): refused whole, before anything else.
		for _, rt := range req.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic = rt.Topic
			st.NumPartitions, st.ReplicationFactor = -1, -1
			st.ErrorCode = kerr.PolicyViolation.Code
			if req.Version >= 1 {
				msg := "Excessively large number of partitions per request."
				st.ErrorMessage = &msg
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
	mq := c.mutationQuota(req.Version, 6)
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		var code int16
		var msg string
		if !c.authorizedCluster(acl.OpCreate) && !c.authorized(acl.OpCreate, acl.ResourceTopic, rt.Topic) {
			code, msg = kerr.TopicAuthorizationFailed.Code, "Authorization failed."
		} else {
			code, msg = c.b.createOne(req, &rt, &st, seen[rt.Topic] > 1, mq)
		}
		setCreateError(req, &st, code, msg)
		resp.Topics = append(resp.Topics, st)
	}
	if !req.ValidateOnly {
		// Answered once the controller has created them (broker/cluster/directory.go).
		for i := range resp.Topics {
			st := &resp.Topics[i]
			if st.ErrorCode == 0 && !c.b.dir.AwaitCreated(req.TimeoutMillis, st.Topic, st.TopicID, int(st.NumPartitions)) {
				setCreateError(req, st, kerr.RequestTimedOut.Code, "the controller has not created the topic yet")
			}
			if st.ErrorCode == 0 && c.b.cluster == nil {
				if code, msg := c.b.undoUnhostedTopic(st.Topic, st.NumPartitions); code != 0 {
					setCreateError(req, st, code, msg)
				}
			}
		}
	}
	return resp, nil
}

func setCreateError(req *kmsg.CreateTopicsRequest, st *kmsg.CreateTopicsResponseTopic, code int16, msg string) {
	if code == 0 {
		return
	}
	st.ErrorCode = code
	if req.Version >= 1 && msg != "" {
		st.ErrorMessage = &msg
	}
	st.Configs = nil
}

// maxPartitionsPerRequest is Kafka's limit on the partitions one
// CreateTopics request may create in all (MAX_PARTITIONS_PER_BATCH).
const maxPartitionsPerRequest = 10000

// requestedPartitions counts the partitions req asks for, as Kafka does:
// the default for -1, the assignments when given.
func requestedPartitions(req *kmsg.CreateTopicsRequest, defaultPartitions int32) int64 {
	var total int64
	for _, rt := range req.Topics {
		switch {
		case len(rt.ReplicaAssignment) > 0:
			total += int64(len(rt.ReplicaAssignment))
		case rt.NumPartitions == -1:
			total += int64(defaultPartitions)
		case rt.NumPartitions > 0:
			total += int64(rt.NumPartitions)
		}
	}
	return total
}

// createOne creates one topic of req, its partitions recorded against mq
// (mutationquota.go).
func (b *Broker) createOne(req *kmsg.CreateTopicsRequest, rt *kmsg.CreateTopicsRequestTopic, st *kmsg.CreateTopicsResponseTopic, dup bool, mq *quota.Mutations) (int16, string) {
	if dup {
		return kerr.InvalidRequest.Code, fmt.Sprintf("topic %s is named more than once in the request", rt.Topic)
	}
	if err := cluster.ValidateTopicName(rt.Topic); err != nil {
		return kerr.InvalidTopicException.Code, err.Error()
	}
	if b.topicExists(rt.Topic) {
		return kerr.TopicAlreadyExists.Code, fmt.Sprintf("topic %s already exists", rt.Topic)
	}
	brokers := int16(b.dir.LiveBrokers())
	partitions, rf := rt.NumPartitions, rt.ReplicationFactor
	var assignments []controller.PartitionAssignment
	if len(rt.ReplicaAssignment) > 0 {
		// Checked by the placement (CheckTopicAssignment), as Kafka checks.
		for _, a := range rt.ReplicaAssignment {
			assignments = append(assignments, controller.PartitionAssignment{Partition: a.Partition, Replicas: a.Replicas})
		}
		if _, err := controller.PlaceTopic(controller.TopicRequest{NumPartitions: partitions, ReplicationFactor: rf, Assignments: assignments}, controller.Defaults{}, nil, nil); err != nil {
			return controller.Code(err), controller.Message(err)
		}
		partitions, rf = int32(len(rt.ReplicaAssignment)), int16(len(rt.ReplicaAssignment[0].Replicas))
	}
	if partitions == -1 {
		partitions = b.cfg.NumPartitions
	}
	if rf == -1 {
		rf = b.cfg.DefaultReplicationFactor
	}
	if partitions < 1 {
		return kerr.InvalidPartitions.Code, "number of partitions must be at least 1"
	}
	if rf < 1 || rf > brokers && assignments == nil {
		return kerr.InvalidReplicationFactor.Code, fmt.Sprintf("replication factor %d: must be between 1 and the number of brokers (%d)", rf, brokers)
	}
	configs := map[string]string{}
	for _, cfg := range rt.Configs {
		v, err := config.ValidateTopicConfig(cfg.Name, cfg.Value)
		if err != nil {
			return kerr.InvalidConfig.Code, err.Error()
		}
		configs[cfg.Name] = v
	}
	if err := config.ValidateTopicConfigs(configs, func(k string) string { return b.cfgs.Layers().TopicValue(k, nil) }); err != nil {
		return kerr.InvalidConfig.Code, err.Error()
	}
	st.NumPartitions, st.ReplicationFactor = partitions, rf
	if req.Version >= 5 {
		for i := range config.TopicKeys {
			k := &config.TopicKeys[i]
			rc := kmsg.NewCreateTopicsResponseTopicConfig()
			var chain []config.SourcedValue
			rc.Name = k.Name
			rc.Value, chain = b.cfgs.Layers().TopicChain(k, configs)
			rc.Source = int8(kmsg.ConfigSourceDefaultConfig)
			if len(chain) > 0 {
				rc.Source = int8(chain[0].Source)
			}
			st.Configs = append(st.Configs, rc)
		}
	}
	if req.ValidateOnly {
		return 0, ""
	}
	if code, msg := recordMutations(mq, int64(partitions)); code != 0 {
		st.NumPartitions, st.ReplicationFactor = -1, -1
		return code, msg
	}
	if len(configs) == 0 {
		configs = nil
	}
	tr := controller.TopicRequest{NumPartitions: partitions, ReplicationFactor: rf, Assignments: assignments}
	if assignments != nil {
		tr.NumPartitions, tr.ReplicationFactor = -1, -1
	}
	id, code, msg := b.dir.CreateTopic(rt.Topic, tr, configs)
	st.TopicID = id
	return code, msg
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
