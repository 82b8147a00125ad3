package cluster

// LeaderAndIsr's decisions over the role table, as Kafka's
// ReplicaManager.becomeLeaderOrFollower makes them (the rules are written
// in broker/04_leader_and_isr.go): which partition states of a request
// become roles, and each state's code. No I/O: the broker opens and
// steps the logs of the accepted states after (replication/host's Host),
// and sends the answer Response builds.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
)

// LeaderAndIsrState is one partition state of a LeaderAndIsr, with its
// topic, and what became of it.
type LeaderAndIsrState struct {
	Topic   string
	TopicID [16]byte
	P       *kmsg.LeaderAndISRRequestTopicPartition
	Code    int16
	// Accepted: the state became the partition's role.
	Accepted bool
}

// LeaderAndIsrStates lists a request's partition states (v0-v1 flat, v2+
// by topic).
func LeaderAndIsrStates(req *kmsg.LeaderAndISRRequest) []LeaderAndIsrState {
	var states []LeaderAndIsrState
	for i := range req.PartitionStates {
		states = append(states, LeaderAndIsrState{Topic: req.PartitionStates[i].Topic, P: &req.PartitionStates[i]})
	}
	for i := range req.TopicStates {
		ts := &req.TopicStates[i]
		for j := range ts.PartitionStates {
			states = append(states, LeaderAndIsrState{Topic: ts.Topic, TopicID: ts.TopicID, P: &ts.PartitionStates[j]})
		}
	}
	return states
}

// Hosting is what the decisions need to know of the partitions this
// broker holds outside the table.
type Hosting struct {
	Self int32
	// TopicID is the id of a topic whose logs this broker holds (zero:
	// none, or none known).
	TopicID func(topic string) [16]byte
	// Failed reports a follower whose log could not take the leader's
	// records.
	Failed func(topic string, partition int32) bool
}

// ApplyLeaderAndIsr decides each state of states against t (an edited
// copy, published by the caller), setting its Code and Accepted.
func (t *RoleTable) ApplyLeaderAndIsr(states []LeaderAndIsrState, h Hosting) {
	var zero [16]byte
	for i := range states {
		s := &states[i]
		tp := engine.Partition{Topic: s.Topic, Partition: s.P.Partition}
		cur, hosted := t.Roles[tp]
		held := cur.TopicID
		if !hosted {
			cur.LeaderEpoch = -1
			held = h.TopicID(s.Topic)
		}
		switch {
		case s.TopicID != zero && held != zero && s.TopicID != held:
			s.Code = kerr.InconsistentTopicID.Code
		case s.P.LeaderEpoch > cur.LeaderEpoch:
			if !slices.Contains(s.P.Replicas, h.Self) {
				s.Code = kerr.UnknownTopicOrPartition.Code
				continue
			}
			id := s.TopicID
			if id == zero {
				id = held
			}
			t.Roles[tp] = Role{
				TopicID: id, Leader: s.P.Leader, LeaderEpoch: s.P.LeaderEpoch, IsLeader: s.P.Leader == h.Self,
				ISR: s.P.ISR, Replicas: s.P.Replicas, ZKVersion: s.P.ZKVersion,
			}
			delete(t.Deleted, tp)
			s.Accepted = true
		case s.P.LeaderEpoch == cur.LeaderEpoch && hosted && s.TopicID != zero && held == zero:
			cur.TopicID = s.TopicID
			t.Roles[tp] = cur
		case s.P.LeaderEpoch == cur.LeaderEpoch && hosted && h.Failed(s.Topic, s.P.Partition):
			// The controller asks after a log directory event
			// (zookeeper.go): this follower's log cannot take writes.
			s.Code = kerr.KafkaStorageError.Code
		default:
			s.Code = kerr.StaleControllerEpoch.Code
		}
	}
}

// LeaderAndIsrResponse answers req: code (the fencing's) for every
// partition when it is not 0, else each state's; by topic id from v5.
func LeaderAndIsrResponse(req *kmsg.LeaderAndISRRequest, code int16, states []LeaderAndIsrState) *kmsg.LeaderAndISRResponse {
	resp := req.ResponseKind().(*kmsg.LeaderAndISRResponse)
	resp.ErrorCode = code
	for _, s := range states {
		pc := s.Code
		if code != 0 {
			pc = code
		}
		rp := kmsg.NewLeaderAndISRResponseTopicPartition()
		rp.Topic, rp.Partition, rp.ErrorCode = s.Topic, s.P.Partition, pc
		if req.Version < 5 {
			resp.Partitions = append(resp.Partitions, rp)
			continue
		}
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].TopicID != s.TopicID {
			rt := kmsg.NewLeaderAndISRResponseTopic()
			rt.TopicID = s.TopicID
			resp.Topics = append(resp.Topics, rt)
		}
		rt := &resp.Topics[len(resp.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	return resp
}
