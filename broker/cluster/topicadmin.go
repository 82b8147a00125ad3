package cluster

// Topic administration's requests, as Kafka's ZkAdminManager answers them:
// CreateTopics, DeleteTopics and CreatePartitions, each topic checked,
// authorized, counted against the controller mutation quota, written
// through the metadata backend (directory.go) and waited for until the
// controller has carried it out or the request's timeout passes. The
// rules each answers by are written in its handler's file, which only
// decodes the request and calls here (broker/19_create_topics.go,
// broker/20_delete_topics.go, broker/37_create_partitions.go).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator/controller"
	"github.com/sluice-io/sluice/engine"
)

// MaxPartitionsPerRequest is Kafka's limit on the partitions one
// CreateTopics or CreatePartitions request may create in all
// (MAX_PARTITIONS_PER_BATCH).
const MaxPartitionsPerRequest = 10000

// The internal topics administration refuses to delete or grow.
const (
	offsetsTopic  = "__consumer_offsets"
	txnStateTopic = "__transaction_state"
)

// Admin is what topic administration needs of the client asking.
type Admin struct {
	// Allowed reports whether the client may make the request's change to
	// a topic (Create on the cluster or the topic, Delete, Alter).
	Allowed func(topic string) bool
	// Record counts partitions created or deleted against the client's
	// controller mutation quota; a code other than 0 refuses the topic.
	Record func(partitions int64) (int16, string)
	// Unhosted, if set, is called for each topic created: a code other
	// than 0 means this broker could not open its logs (the single node
	// deletes such a topic) and answers the topic.
	Unhosted func(topic string, partitions int32) (int16, string)
}

// CreateTopics answers a CreateTopics request.
func (d *Directory) CreateTopics(req *kmsg.CreateTopicsRequest, a Admin) *kmsg.CreateTopicsResponse {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	tooMany := requestedPartitions(req, d.o.NumPartitions) > MaxPartitionsPerRequest
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		var code int16
		var msg string
		switch {
		case tooMany:
			// As Kafka (KAFKA-17870): refused whole, before anything else.
			code, msg = kerr.PolicyViolation.Code, "Excessively large number of partitions per request."
		case !a.Allowed(rt.Topic):
			code, msg = kerr.TopicAuthorizationFailed.Code, "Authorization failed."
		default:
			code, msg = d.createOne(req, &rt, &st, seen[rt.Topic] > 1, a.Record)
		}
		setCreateError(req, &st, code, msg)
		resp.Topics = append(resp.Topics, st)
	}
	if req.ValidateOnly || tooMany {
		return resp
	}
	// Answered once the controller has created them.
	for i := range resp.Topics {
		st := &resp.Topics[i]
		if st.ErrorCode == 0 && !d.AwaitCreated(req.TimeoutMillis, st.Topic, st.TopicID, int(st.NumPartitions)) {
			setCreateError(req, st, kerr.RequestTimedOut.Code, "the controller has not created the topic yet")
		}
		if st.ErrorCode == 0 && a.Unhosted != nil {
			if code, msg := a.Unhosted(st.Topic, st.NumPartitions); code != 0 {
				setCreateError(req, st, code, msg)
			}
		}
	}
	return resp
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

// createOne creates one topic of req, its partitions recorded by record.
func (d *Directory) createOne(req *kmsg.CreateTopicsRequest, rt *kmsg.CreateTopicsRequestTopic, st *kmsg.CreateTopicsResponseTopic, dup bool, record func(int64) (int16, string)) (int16, string) {
	if dup {
		return kerr.InvalidRequest.Code, fmt.Sprintf("topic %s is named more than once in the request", rt.Topic)
	}
	if err := ValidateTopicName(rt.Topic); err != nil {
		return kerr.InvalidTopicException.Code, err.Error()
	}
	if _, _, ok := d.Topic(rt.Topic); ok {
		return kerr.TopicAlreadyExists.Code, fmt.Sprintf("topic %s already exists", rt.Topic)
	}
	brokers := int16(d.LiveBrokers())
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
		partitions = d.o.NumPartitions
	}
	if rf == -1 {
		rf = d.o.ReplicationFactor
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
	layers := d.o.Layers()
	if err := config.ValidateTopicConfigs(configs, func(k string) string { return layers.TopicValue(k, nil) }); err != nil {
		return kerr.InvalidConfig.Code, err.Error()
	}
	st.NumPartitions, st.ReplicationFactor = partitions, rf
	if req.Version >= 5 {
		for i := range config.TopicKeys {
			k := &config.TopicKeys[i]
			rc := kmsg.NewCreateTopicsResponseTopicConfig()
			var chain []config.SourcedValue
			rc.Name = k.Name
			rc.Value, chain = layers.TopicChain(k, configs)
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
	if code, msg := record(int64(partitions)); code != 0 {
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
	id, code, msg := d.CreateTopic(rt.Topic, tr, configs)
	st.TopicID = id
	return code, msg
}

// DeleteTopics answers a DeleteTopics request.
func (d *Directory) DeleteTopics(req *kmsg.DeleteTopicsRequest, a Admin) *kmsg.DeleteTopicsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	topics := req.Topics
	if req.Version < 6 {
		topics = nil
		for _, name := range req.TopicNames {
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.Topic = &name
			topics = append(topics, rt)
		}
	}
	names := map[string]int{}
	ids := map[[16]byte]int{}
	for _, rt := range topics {
		if rt.Topic != nil {
			names[*rt.Topic]++
		} else {
			ids[rt.TopicID]++
		}
	}
	for _, rt := range topics {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var code int16
		var msg string
		if name, ok := d.topicNameOf(rt.Topic, rt.TopicID); ok && !a.Allowed(name) {
			code, msg = kerr.TopicAuthorizationFailed.Code, "Authorization failed."
		} else {
			code, msg = d.deleteOne(&rt, &st, names, ids, req.TimeoutMillis, a.Record)
		}
		st.ErrorCode = code
		if code != 0 && req.Version >= 5 && msg != "" {
			st.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// topicNameOf is the name a request gives a topic, or the name of the
// topic of its id; false when neither is known.
func (d *Directory) topicNameOf(name *string, id [16]byte) (string, bool) {
	if name != nil {
		return *name, true
	}
	for n, t := range d.o.Cache.Load().Topics {
		if t.ID == id {
			return n, true
		}
	}
	return "", false
}

// deleteOne deletes one topic of the request, its partitions recorded by
// record.
func (d *Directory) deleteOne(rt *kmsg.DeleteTopicsRequestTopic, st *kmsg.DeleteTopicsResponseTopic, names map[string]int, ids map[[16]byte]int, timeoutMs int32, record func(int64) (int16, string)) (int16, string) {
	snap := d.o.Cache.Load()
	var name string
	var id engine.TopicID
	if code, msg := checkDeleteNaming(rt, names, ids); code != 0 {
		return code, msg
	}
	switch {
	case rt.Topic != nil:
		t := snap.Topics[*rt.Topic]
		if t == nil {
			return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("topic %s does not exist", *rt.Topic)
		}
		name, id = *rt.Topic, engine.TopicID(t.ID)
	default:
		for n, t := range snap.Topics {
			if t.ID == rt.TopicID {
				name, id = n, engine.TopicID(t.ID)
			}
		}
		if name == "" {
			return kerr.UnknownTopicID.Code, fmt.Sprintf("topic ID %s does not exist", engine.TopicID(rt.TopicID))
		}
	}
	st.Topic, st.TopicID = &name, id
	if name == offsetsTopic {
		return kerr.InvalidRequest.Code, "the internal topic " + offsetsTopic + " holds the groups' offsets and cannot be deleted"
	}
	if name == txnStateTopic {
		return kerr.InvalidRequest.Code, "the internal topic " + txnStateTopic + " holds the transactions' states and cannot be deleted"
	}
	if code, msg := record(int64(len(snap.Topics[name].Partitions))); code != 0 {
		return code, msg
	}
	return d.DeleteTopic(name, id, timeoutMs)
}

// checkDeleteNaming refuses a topic named both ways, or more than once.
func checkDeleteNaming(rt *kmsg.DeleteTopicsRequestTopic, names map[string]int, ids map[[16]byte]int) (int16, string) {
	switch {
	case rt.Topic != nil && rt.TopicID != [16]byte{}:
		return kerr.InvalidRequest.Code, "give a topic's name or its ID, not both"
	case rt.Topic != nil && names[*rt.Topic] > 1:
		return kerr.InvalidRequest.Code, fmt.Sprintf("topic %s is named more than once in the request", *rt.Topic)
	case rt.Topic == nil && ids[rt.TopicID] > 1:
		return kerr.InvalidRequest.Code, fmt.Sprintf("topic ID %s is given more than once in the request", engine.TopicID(rt.TopicID))
	}
	return 0, ""
}

// CreatePartitions answers a CreatePartitions request.
func (d *Directory) CreatePartitions(req *kmsg.CreatePartitionsRequest, a Admin) *kmsg.CreatePartitionsResponse {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	seen := map[string]int{}
	var added int64
	for _, rt := range req.Topics {
		seen[rt.Topic]++
		if _, n, ok := d.Topic(rt.Topic); ok && rt.Count > n {
			added += int64(rt.Count) - int64(n)
		}
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		var code int16
		var msg string
		if added > MaxPartitionsPerRequest {
			code, msg = kerr.PolicyViolation.Code, "Excessively large number of partitions per request."
		} else if seen[rt.Topic] == 1 && !a.Allowed(rt.Topic) {
			code, msg = kerr.TopicAuthorizationFailed.Code, "The topic authorization is failed."
		} else {
			code, msg = d.growOne(&rt, seen[rt.Topic] > 1, req.ValidateOnly, req.TimeoutMillis, a.Record)
		}
		st.ErrorCode = code
		if code != 0 && msg != "" {
			st.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// growOne grows one topic, the partitions it gains recorded by record.
func (d *Directory) growOne(rt *kmsg.CreatePartitionsRequestTopic, dup, validateOnly bool, timeoutMs int32, record func(int64) (int16, string)) (int16, string) {
	if dup {
		return kerr.InvalidRequest.Code, "Duplicate topic in request."
	}
	_, current, ok := d.Topic(rt.Topic)
	if !ok {
		return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("The topic '%s' does not exist.", rt.Topic)
	}
	if rt.Topic == offsetsTopic {
		return kerr.InvalidRequest.Code, "the partitions of " + offsetsTopic + " cannot change: every group is mapped to one of them by hash"
	}
	if rt.Topic == txnStateTopic {
		return kerr.InvalidRequest.Code, "the partitions of " + txnStateTopic + " cannot change: every transactional id is mapped to one of them by hash"
	}
	switch {
	case rt.Count == current:
		return kerr.InvalidPartitions.Code, fmt.Sprintf("Topic already has %d partitions.", current)
	case rt.Count < current:
		return kerr.InvalidPartitions.Code, fmt.Sprintf("Topic currently has %d partitions, which is higher than the requested %d.", current, rt.Count)
	}
	// The assignment is checked by the placement (PlaceNewPartitions).
	var assignments [][]int32
	for _, a := range rt.Assignment {
		assignments = append(assignments, a.Replicas)
	}
	if validateOnly {
		return 0, ""
	}
	if code, msg := record(int64(rt.Count) - int64(current)); code != 0 {
		return code, msg
	}
	return d.GrowTopic(rt.Topic, rt.Count, assignments, timeoutMs)
}
