package controller

// A harness for driving one Controller through Step, Ready and Advance in
// table tests, checking the invariants on every Ready, and helpers to read
// the requests of a Ready.

import (
	"fmt"
	"slices"
	"testing"

	"github.com/sluice-io/sluice/engine"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type harness struct {
	t *testing.T
	c *Controller
	k *checker
}

func newHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	if opts.NewTopicID == nil {
		n := byte(0)
		opts.NewTopicID = func() engine.TopicID { n++; return engine.TopicID{0xee, n} }
	}
	return &harness{t: t, c: New(1, 5, opts), k: newChecker()}
}

// step steps the events in order, then takes the Ready, checks it and
// advances.
func (h *harness) step(evs ...Event) Ready {
	h.t.Helper()
	rd, err := h.k.step(h.c, evs...)
	if err != nil {
		h.t.Fatalf("invariant: %v", err)
	}
	h.c.Advance(rd)
	return rd
}

// ok answers every write of rd with success, and returns the next Ready.
func (h *harness) ok(rd Ready) Ready {
	h.t.Helper()
	var evs []Event
	for _, w := range rd.Writes {
		evs = append(evs, succeeded(w))
	}
	return h.step(evs...)
}

func succeeded(w Write) WriteResult {
	r := WriteResult{Write: w}
	switch w.Op {
	case UpdateState:
		r.Version = w.State.PartitionEpoch + 1
	case SetAssignment:
		r.Version = w.Assignment.Version + 1
	}
	return r
}

func broker(id int32, epoch int64) BrokerInfo {
	return BrokerInfo{ID: id, Epoch: epoch, Endpoints: []Endpoint{{Listener: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", Host: fmt.Sprintf("b%d", id), Port: 9092}}}
}

func brokers(ids ...int32) []BrokerInfo {
	var out []BrokerInfo
	for _, id := range ids {
		out = append(out, broker(id, 100+int64(id)))
	}
	return out
}

func tid(n byte) engine.TopicID { return engine.TopicID{n} }

func tp(topic string, p int32) engine.Partition { return engine.Partition{Topic: topic, Partition: p} }

// requests returns the requests of rd to broker b.
func requests(rd Ready, b int32) (um *kmsg.UpdateMetadataRequest, lisr *kmsg.LeaderAndISRRequest, sr *kmsg.StopReplicaRequest) {
	for _, r := range rd.Requests {
		if r.Broker != b {
			continue
		}
		switch m := r.Msg.(type) {
		case *kmsg.UpdateMetadataRequest:
			um = m
		case *kmsg.LeaderAndISRRequest:
			lisr = m
		case *kmsg.StopReplicaRequest:
			sr = m
		}
	}
	return um, lisr, sr
}

// recipients returns the brokers that get a request of the key, sorted.
func recipients(rd Ready, key int16) []int32 {
	var out []int32
	for _, r := range rd.Requests {
		if r.Msg.Key() == key {
			out = append(out, r.Broker)
		}
	}
	slices.Sort(out)
	return out
}

func lisrStates(m *kmsg.LeaderAndISRRequest) map[engine.Partition]kmsg.LeaderAndISRRequestTopicPartition {
	out := map[engine.Partition]kmsg.LeaderAndISRRequestTopicPartition{}
	if m != nil {
		for _, ts := range m.TopicStates {
			index(out, ts.Topic, ts.PartitionStates, func(ps kmsg.LeaderAndISRRequestTopicPartition) int32 { return ps.Partition })
		}
	}
	return out
}

func umStates(m *kmsg.UpdateMetadataRequest) map[engine.Partition]kmsg.UpdateMetadataRequestTopicPartition {
	out := map[engine.Partition]kmsg.UpdateMetadataRequestTopicPartition{}
	if m != nil {
		for _, ts := range m.TopicStates {
			index(out, ts.Topic, ts.PartitionStates, func(ps kmsg.UpdateMetadataRequestTopicPartition) int32 { return ps.Partition })
		}
	}
	return out
}

// index adds a topic's partition states to out by partition.
func index[P any](out map[engine.Partition]P, topic string, states []P, partition func(P) int32) {
	for _, ps := range states {
		out[tp(topic, partition(ps))] = ps
	}
}

func stopped(m *kmsg.StopReplicaRequest) []engine.Partition {
	var out []engine.Partition
	if m == nil {
		return out
	}
	for _, ts := range m.Topics {
		for _, ps := range ts.PartitionStates {
			out = append(out, tp(ts.Topic, ps.Partition))
		}
	}
	return out
}

// stopOK is a broker's answer deleting every partition of its StopReplica.
func stopOK(rd Ready, b int32, code int16) Response {
	var req Request
	for _, r := range rd.Requests {
		if _, ok := r.Msg.(*kmsg.StopReplicaRequest); ok && r.Broker == b {
			req = r
		}
	}
	resp := &kmsg.StopReplicaResponse{Version: StopReplicaVersion}
	for _, p := range stopped(req.Msg.(*kmsg.StopReplicaRequest)) {
		resp.Partitions = append(resp.Partitions, kmsg.StopReplicaResponsePartition{Topic: p.Topic, Partition: p.Partition, ErrorCode: code})
	}
	return Response{Request: req, Response: resp}
}

func writesOf(rd Ready, op WriteOp) []Write {
	var out []Write
	for _, w := range rd.Writes {
		if w.Op == op {
			out = append(out, w)
		}
	}
	return out
}

// state is a short PartitionState.
func state(leader, epoch int32, isr []int32, version int32) PartitionState {
	return PartitionState{Leader: leader, LeaderEpoch: epoch, ISR: isr, ControllerEpoch: 4, PartitionEpoch: version}
}
