package broker

// CreateTopics (key 19), versions 0-7.
//
// Behavior:
//   - NumPartitions and ReplicationFactor -1 (v4+) take the broker defaults
//     (num.partitions, default.replication.factor).
//   - Errors as Kafka: INVALID_TOPIC_EXCEPTION for a bad name,
//     TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS for a count below 1,
//     INVALID_REPLICATION_FACTOR for a factor below 1 or above the number of
//     brokers (1 until cluster mode), INVALID_REPLICA_ASSIGNMENT for a manual
//     assignment that is not this broker alone for partitions 0..n-1,
//     INVALID_CONFIG for unknown keys, bad values or settings sluice cannot
//     honour yet, INVALID_REQUEST for a topic named twice.
//   - A request for more than 10,000 partitions in all is refused whole
//     with POLICY_VIOLATION, as Kafka does (KAFKA-17870), before anything
//     is created (each partition costs a directory, files and fsyncs).
//   - validate_only (v1+) checks everything and creates nothing.
//
// Version notes: v5+ returns the partitions, factor and every topic config
// with its effective value and source (as DescribeConfigs); v7+ the topic
// ID.

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator"
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
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		code, msg := c.b.createOne(req, &rt, &st, seen[rt.Topic] > 1)
		if code != 0 {
			st.ErrorCode = code
			if req.Version >= 1 && msg != "" {
				st.ErrorMessage = &msg
			}
			st.Configs = nil
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
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

func (b *Broker) createOne(req *kmsg.CreateTopicsRequest, rt *kmsg.CreateTopicsRequestTopic, st *kmsg.CreateTopicsResponseTopic, dup bool) (int16, string) {
	if dup {
		return kerr.InvalidRequest.Code, fmt.Sprintf("topic %s is named more than once in the request", rt.Topic)
	}
	if err := validateTopicName(rt.Topic); err != nil {
		return kerr.InvalidTopicException.Code, err.Error()
	}
	if b.topic(rt.Topic) != nil {
		return kerr.TopicAlreadyExists.Code, fmt.Sprintf("topic %s already exists", rt.Topic)
	}
	brokers := int16(len(b.coord.Brokers()))
	partitions, rf := rt.NumPartitions, rt.ReplicationFactor
	if len(rt.ReplicaAssignment) > 0 {
		if partitions != -1 || rf != -1 {
			return kerr.InvalidRequest.Code, "both a replica assignment and a partition count or replication factor were given"
		}
		self := b.self().ID
		for i, a := range rt.ReplicaAssignment {
			if a.Partition != int32(i) || len(a.Replicas) != 1 || a.Replicas[0] != self {
				return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("partition %d: assignments must name partitions 0..n-1 in order, each on broker %d alone", a.Partition, self)
			}
		}
		partitions, rf = int32(len(rt.ReplicaAssignment)), 1
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
	if rf < 1 || rf > brokers {
		return kerr.InvalidReplicationFactor.Code, fmt.Sprintf("replication factor %d: must be between 1 and the number of brokers (%d)", rf, brokers)
	}
	configs := map[string]string{}
	for _, cfg := range rt.Configs {
		v, err := validateTopicConfig(cfg.Name, cfg.Value)
		if err != nil {
			return kerr.InvalidConfig.Code, err.Error()
		}
		configs[cfg.Name] = v
	}
	if err := validateTopicConfigs(configs, func(k string) string { return b.topicValue(k, nil) }); err != nil {
		return kerr.InvalidConfig.Code, err.Error()
	}
	st.NumPartitions, st.ReplicationFactor = partitions, rf
	if req.Version >= 5 {
		for i := range topicKeys {
			k := &topicKeys[i]
			rc := kmsg.NewCreateTopicsResponseTopicConfig()
			var chain []sourcedValue
			rc.Name = k.name
			rc.Value, chain = b.topicChain(k, configs)
			rc.Source = int8(kmsg.ConfigSourceDefaultConfig)
			if len(chain) > 0 {
				rc.Source = int8(chain[0].source)
			}
			st.Configs = append(st.Configs, rc)
		}
	}
	if req.ValidateOnly {
		return 0, ""
	}
	if len(configs) == 0 {
		configs = nil
	}
	ts, err := b.createTopic(rt.Topic, partitions, rf, configs)
	if errors.Is(err, coordinator.ErrTopicExists) {
		return kerr.TopicAlreadyExists.Code, err.Error()
	}
	if err != nil {
		b.log.Error("creating topic", "topic", rt.Topic, "err", err)
		return kerr.UnknownServerError.Code, err.Error()
	}
	st.TopicID = ts.meta.ID
	return 0, ""
}
