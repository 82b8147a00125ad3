package controller

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/sluice-io/sluice/engine"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// loaded returns a harness loaded with brokers and one topic "a" of the
// given replicas and states (nil: no state znode).
func loaded(t *testing.T, opts Options, live []BrokerInfo, replicas [][]int32, states []*PartitionState) (*harness, Ready) {
	t.Helper()
	h := newHarness(t, opts)
	l := Load{Brokers: live, States: map[engine.Partition]PartitionState{}}
	if replicas != nil {
		l.Topics = []TopicAssignment{{Name: "a", ID: tid(1), Replicas: replicas}}
	}
	for p, s := range states {
		if s != nil {
			l.States[tp("a", int32(p))] = *s
		}
	}
	return h, h.step(l)
}

func ptr(s PartitionState) *PartitionState { return &s }

func TestNewTopic(t *testing.T) {
	h, rd := loaded(t, Options{}, brokers(1, 2, 3), nil, nil)
	if got := recipients(rd, 6); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("UpdateMetadata at load to %v", got)
	}
	rd = h.step(TopicsChanged{Topics: []TopicAssignment{{Name: "a", ID: tid(1), Replicas: [][]int32{{1, 2}, {2, 3}, {3, 1}}}}})
	creates := writesOf(rd, CreateState)
	if len(creates) != 3 || len(rd.Writes) != 3 {
		t.Fatalf("writes %+v", rd.Writes)
	}
	for i, w := range creates {
		isr := [][]int32{{1, 2}, {2, 3}, {3, 1}}[i] // every live replica: the logs are empty
		want := PartitionState{Leader: isr[0], LeaderEpoch: 0, ISR: isr, ControllerEpoch: 5}
		if w.Partition != int32(i) || !reflect.DeepEqual(w.State, want) {
			t.Errorf("create %d: %+v", i, w)
		}
	}
	if len(rd.Requests) != 0 {
		t.Fatalf("brokers told before ZooKeeper has the states: %v", recipients(rd, 4))
	}
	rd = h.ok(rd)
	if got := recipients(rd, 4); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("LeaderAndIsr to %v", got)
	}
	_, lisr, _ := requests(rd, 1)
	want := &kmsg.LeaderAndISRRequest{
		Version: 7, ControllerID: 1, ControllerEpoch: 5, BrokerEpoch: 101,
		TopicStates: []kmsg.LeaderAndISRRequestTopicState{{Topic: "a", TopicID: tid(1), PartitionStates: []kmsg.LeaderAndISRRequestTopicPartition{
			{Partition: 0, ControllerEpoch: 5, Leader: 1, LeaderEpoch: 0, ISR: []int32{1, 2}, ZKVersion: 0, Replicas: []int32{1, 2}, IsNew: true},
			{Partition: 2, ControllerEpoch: 5, Leader: 3, LeaderEpoch: 0, ISR: []int32{3, 1}, ZKVersion: 0, Replicas: []int32{3, 1}, IsNew: true},
		}}},
		LiveLeaders: []kmsg.LeaderAndISRRequestLiveLeader{{BrokerID: 1, Host: "b1", Port: 9092}, {BrokerID: 3, Host: "b3", Port: 9092}},
	}
	if !reflect.DeepEqual(lisr, want) {
		t.Errorf("LeaderAndIsr to 1:\n got %+v\nwant %+v", lisr, want)
	}
	for _, b := range []int32{1, 2, 3} {
		um, _, _ := requests(rd, b)
		if um == nil || len(umStates(um)) != 3 || len(um.LiveBrokers) != 3 {
			t.Fatalf("UpdateMetadata to %d: %+v", b, um)
		}
		if ps := umStates(um)[tp("a", 1)]; ps.Leader != 2 || !slices.Equal(ps.ISR, []int32{2, 3}) || len(ps.OfflineReplicas) != 0 {
			t.Errorf("UpdateMetadata a-1 to %d: %+v", b, ps)
		}
	}
	um, _, _ := requests(rd, 2)
	wantBroker := kmsg.UpdateMetadataRequestLiveBroker{ID: 2, Endpoints: []kmsg.UpdateMetadataRequestLiveBrokerEndpoint{{Port: 9092, Host: "b2", ListenerName: "PLAINTEXT", SecurityProtocol: 0}}}
	if um.Version != 8 || um.BrokerEpoch != 102 || !reflect.DeepEqual(um.LiveBrokers[1], wantBroker) {
		t.Errorf("UpdateMetadata header or broker: %+v", um)
	}
	if rd := h.step(); !rd.Empty() {
		t.Errorf("more to do: %+v", rd)
	}
}

func TestNewPartitionLeaderIsFirstLiveReplica(t *testing.T) {
	h, _ := loaded(t, Options{}, brokers(2, 3), nil, nil)
	rd := h.step(TopicsChanged{Topics: []TopicAssignment{{Name: "a", ID: tid(1), Replicas: [][]int32{{1, 3, 2}, {1}}}}})
	if len(rd.Writes) != 1 || rd.Writes[0].Partition != 0 || rd.Writes[0].State.Leader != 3 {
		t.Fatalf("writes %+v", rd.Writes)
	}
	h.ok(rd)
	// a-1 waits for broker 1, whose return also leaves a-0's leader alone.
	rd = h.step(BrokersChanged{Live: brokers(1, 2, 3)})
	if len(rd.Writes) != 1 || rd.Writes[0].Partition != 1 || rd.Writes[0].Op != CreateState || rd.Writes[0].State.Leader != 1 {
		t.Fatalf("writes %+v", rd.Writes)
	}
	rd = h.ok(rd)
	if s, _ := h.c.State(tp("a", 0)); s.Leader != 3 || s.LeaderEpoch != 0 {
		t.Errorf("a-0 %+v", s)
	}
	if ps := lisrStates(func() *kmsg.LeaderAndISRRequest { _, l, _ := requests(rd, 1); return l }())[tp("a", 1)]; !ps.IsNew || ps.Leader != 1 {
		t.Errorf("LeaderAndIsr a-1 to 1: %+v", ps)
	}
}

func TestLeaderDeathAndReturn(t *testing.T) {
	h, rd := loaded(t, Options{}, brokers(1, 2, 3), [][]int32{{1, 2}}, []*PartitionState{ptr(state(1, 0, []int32{1}, 0))})
	if got := recipients(rd, 4); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("LeaderAndIsr at load to %v", got)
	}
	rd = h.step(BrokersChanged{Live: brokers(2, 3)})
	want := Write{Op: UpdateState, Topic: "a", Partition: 0, State: PartitionState{Leader: NoLeader, LeaderEpoch: 1, ISR: []int32{1}, ControllerEpoch: 5, PartitionEpoch: 0}}
	if len(rd.Writes) != 1 || !reflect.DeepEqual(rd.Writes[0], want) {
		t.Fatalf("writes %+v", rd.Writes)
	}
	if got := recipients(rd, 6); !slices.Equal(got, []int32{2, 3}) {
		t.Fatalf("UpdateMetadata to %v", got)
	}
	if um, _, _ := requests(rd, 2); len(um.TopicStates) != 0 || len(um.LiveBrokers) != 2 {
		t.Errorf("UpdateMetadata before the write: %+v", um)
	}
	rd = h.ok(rd)
	for _, b := range []int32{2, 3} {
		um, _, _ := requests(rd, b)
		if ps := umStates(um)[tp("a", 0)]; ps.Leader != NoLeader || ps.LeaderEpoch != 1 || ps.ZKVersion != 1 || !slices.Equal(ps.OfflineReplicas, []int32{1}) || !slices.Equal(ps.ISR, []int32{1}) {
			t.Errorf("UpdateMetadata to %d: %+v", b, ps)
		}
	}
	if got := recipients(rd, 4); !slices.Equal(got, []int32{2}) {
		t.Errorf("LeaderAndIsr to %v", got)
	}

	rd = h.step(BrokersChanged{Live: []BrokerInfo{broker(1, 201), broker(2, 102), broker(3, 103)}})
	want = Write{Op: UpdateState, Topic: "a", Partition: 0, State: PartitionState{Leader: 1, LeaderEpoch: 2, ISR: []int32{1}, ControllerEpoch: 5, PartitionEpoch: 1}}
	if len(rd.Writes) != 1 || !reflect.DeepEqual(rd.Writes[0], want) {
		t.Fatalf("writes %+v", rd.Writes)
	}
	if um, _, _ := requests(rd, 1); um == nil || um.BrokerEpoch != 201 || len(umStates(um)) != 1 {
		t.Errorf("full UpdateMetadata to the returning broker: %+v", um)
	}
	rd = h.ok(rd)
	if got := recipients(rd, 4); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("LeaderAndIsr to %v", got)
	}
	_, lisr, _ := requests(rd, 1)
	if ps := lisrStates(lisr)[tp("a", 0)]; ps.Leader != 1 || ps.LeaderEpoch != 2 || ps.ZKVersion != 2 || ps.IsNew {
		t.Errorf("LeaderAndIsr to 1: %+v", ps)
	}
	if um, _, _ := requests(rd, 3); len(umStates(um)[tp("a", 0)].OfflineReplicas) != 0 {
		t.Errorf("UpdateMetadata to 3: %+v", um)
	}
}

func TestFollowerDeath(t *testing.T) {
	h, _ := loaded(t, Options{}, brokers(1, 2, 3), [][]int32{{1, 2}}, []*PartitionState{ptr(state(1, 0, []int32{1}, 0))})
	rd := h.step(BrokersChanged{Live: brokers(1, 3)})
	if len(rd.Writes) != 0 || recipients(rd, 4) != nil {
		t.Fatalf("writes %+v, LeaderAndIsr to %v", rd.Writes, recipients(rd, 4))
	}
	if got := recipients(rd, 6); !slices.Equal(got, []int32{1, 3}) {
		t.Fatalf("UpdateMetadata to %v", got)
	}
	um, _, _ := requests(rd, 3)
	if ps := umStates(um)[tp("a", 0)]; ps.Leader != 1 || !slices.Equal(ps.OfflineReplicas, []int32{2}) {
		t.Errorf("UpdateMetadata: %+v", ps)
	}
}

func TestNewBrokerRegisters(t *testing.T) {
	h, _ := loaded(t, Options{}, brokers(1, 2), [][]int32{{1, 2}}, []*PartitionState{ptr(state(1, 0, []int32{1}, 0))})
	rd := h.step(BrokersChanged{Live: brokers(1, 2, 4)})
	if len(rd.Writes) != 0 || recipients(rd, 4) != nil {
		t.Fatalf("writes %+v, LeaderAndIsr to %v", rd.Writes, recipients(rd, 4))
	}
	for _, b := range []int32{1, 2} {
		if um, _, _ := requests(rd, b); um == nil || len(um.TopicStates) != 0 || len(um.LiveBrokers) != 3 {
			t.Errorf("UpdateMetadata to %d: %+v", b, um)
		}
	}
	if um, _, _ := requests(rd, 4); um == nil || len(umStates(um)) != 1 || len(um.LiveBrokers) != 3 {
		t.Errorf("UpdateMetadata to the new broker: %+v", um)
	}
}

func TestBouncedLeader(t *testing.T) {
	h, _ := loaded(t, Options{}, brokers(1, 2), [][]int32{{1, 2}, {2, 1}},
		[]*PartitionState{ptr(state(1, 0, []int32{1}, 0)), ptr(state(2, 0, []int32{2}, 0))})
	rd := h.step(BrokersChanged{Live: []BrokerInfo{broker(1, 500), broker(2, 102)}})
	// As Kafka: the bounce is a failure (a-0 offline)...
	if len(rd.Writes) != 1 || rd.Writes[0].State.Leader != NoLeader || rd.Writes[0].State.LeaderEpoch != 1 {
		t.Fatalf("writes %+v", rd.Writes)
	}
	um, lisr, _ := requests(rd, 1)
	if um == nil || um.BrokerEpoch != 500 || len(umStates(um)) != 2 {
		t.Errorf("full UpdateMetadata to the bounced broker: %+v", um)
	}
	if lisr == nil || lisr.BrokerEpoch != 500 || len(lisrStates(lisr)) != 1 || lisrStates(lisr)[tp("a", 1)].Leader != 2 {
		t.Errorf("LeaderAndIsr for the partition it follows: %+v", lisr)
	}
	// ...then a startup, which elects it again.
	rd = h.ok(rd)
	if len(rd.Writes) != 1 || rd.Writes[0].State.Leader != 1 || rd.Writes[0].State.LeaderEpoch != 2 || rd.Writes[0].State.PartitionEpoch != 1 {
		t.Fatalf("writes %+v", rd.Writes)
	}
	rd = h.ok(rd)
	_, lisr, _ = requests(rd, 1)
	if ps := lisrStates(lisr)[tp("a", 0)]; ps.Leader != 1 || ps.LeaderEpoch != 2 || ps.ZKVersion != 2 {
		t.Errorf("LeaderAndIsr to the bounced broker: %+v", ps)
	}
	if rd := h.step(); !rd.Empty() {
		t.Errorf("more to do: %+v", rd)
	}
}

func TestBouncedFollower(t *testing.T) {
	h, _ := loaded(t, Options{}, brokers(1, 2), [][]int32{{1, 2}}, []*PartitionState{ptr(state(1, 0, []int32{1}, 0))})
	rd := h.step(BrokersChanged{Live: []BrokerInfo{broker(1, 101), broker(2, 600)}})
	if len(rd.Writes) != 0 {
		t.Fatalf("writes %+v", rd.Writes)
	}
	um, lisr, _ := requests(rd, 2)
	if um == nil || lisr == nil || lisr.BrokerEpoch != 600 || lisrStates(lisr)[tp("a", 0)].Leader != 1 {
		t.Errorf("bounced follower: %+v %+v", um, lisr)
	}
}

func TestWriteConflictReadsBack(t *testing.T) {
	h, _ := loaded(t, Options{}, brokers(1, 2), [][]int32{{1, 2}}, []*PartitionState{ptr(state(1, 0, []int32{1}, 0))})
	rd := h.step(BrokersChanged{Live: brokers(2)})
	found := state(1, 3, []int32{1}, 7)
	rd = h.step(WriteResult{Write: rd.Writes[0], Err: ErrConflict, Current: &found})
	want := PartitionState{Leader: NoLeader, LeaderEpoch: 4, ISR: []int32{1}, ControllerEpoch: 5, PartitionEpoch: 7}
	if len(rd.Writes) != 1 || !reflect.DeepEqual(rd.Writes[0].State, want) {
		t.Fatalf("writes %+v", rd.Writes)
	}
	// The znode gone: the partition is new again, created with its leader
	// epoch still rising.
	rd = h.step(WriteResult{Write: rd.Writes[0], Err: ErrConflict})
	want = PartitionState{Leader: 2, LeaderEpoch: 4, ISR: []int32{2}, ControllerEpoch: 5}
	if len(rd.Writes) != 1 || rd.Writes[0].Op != CreateState || !reflect.DeepEqual(rd.Writes[0].State, want) {
		t.Fatalf("writes %+v", rd.Writes)
	}
}

func TestWriteFailureRetried(t *testing.T) {
	h, _ := loaded(t, Options{}, brokers(1, 2), [][]int32{{1, 2}}, []*PartitionState{ptr(state(1, 0, []int32{1}, 0))})
	rd := h.step(BrokersChanged{Live: brokers(2)})
	again := h.step(WriteResult{Write: rd.Writes[0], Err: errors.New("connection loss")})
	if !reflect.DeepEqual(again.Writes, rd.Writes) {
		t.Fatalf("retry %+v, first %+v", again.Writes, rd.Writes)
	}
}

func TestDeposed(t *testing.T) {
	for name, res := range map[string]func(w Write) WriteResult{
		"epoch check": func(w Write) WriteResult { return WriteResult{Write: w, Err: ErrControllerMoved} },
		"state of a later controller": func(w Write) WriteResult {
			s := state(2, 9, []int32{2}, 3)
			s.ControllerEpoch = 6
			return WriteResult{Write: w, Err: ErrConflict, Current: &s}
		},
	} {
		t.Run(name, func(t *testing.T) {
			h, _ := loaded(t, Options{}, brokers(1, 2), [][]int32{{1, 2}}, []*PartitionState{ptr(state(1, 0, []int32{1}, 0))})
			rd := h.step(BrokersChanged{Live: brokers(2)})
			rd = h.step(res(rd.Writes[0]))
			if !rd.Resigned || !h.c.Resigned() {
				t.Fatalf("not resigned: %+v", rd)
			}
			if rd := h.step(BrokersChanged{Live: brokers(1, 2, 3)}); !rd.Empty() {
				t.Fatalf("acts after resigning: %+v", rd)
			}
		})
	}
}

func TestLoadElectsAndTells(t *testing.T) {
	_, rd := loaded(t, Options{}, brokers(1, 2), [][]int32{{3, 1}, {1, 2}, {2}, {1, 2}}, []*PartitionState{
		ptr(state(3, 2, []int32{3}, 4)),        // leader dead: offline
		ptr(state(NoLeader, 4, []int32{1}, 6)), // offline, its ISR back: online
		nil,                                    // new: created
		ptr(state(1, 0, []int32{1}, 0)),        // fine
	})
	got := map[int32]PartitionState{}
	for _, w := range rd.Writes {
		got[w.Partition] = w.State
	}
	want := map[int32]PartitionState{
		0: {Leader: NoLeader, LeaderEpoch: 3, ISR: []int32{3}, ControllerEpoch: 5, PartitionEpoch: 4},
		1: {Leader: 1, LeaderEpoch: 5, ISR: []int32{1}, ControllerEpoch: 5, PartitionEpoch: 6},
		2: {Leader: 2, LeaderEpoch: 0, ISR: []int32{2}, ControllerEpoch: 5},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("writes\n got %+v\nwant %+v", got, want)
	}
	for _, b := range []int32{1, 2} {
		um, lisr, _ := requests(rd, b)
		if len(umStates(um)) != 3 {
			t.Errorf("full UpdateMetadata to %d: %+v", b, umStates(um))
		}
		if ls := lisrStates(lisr); len(ls) != 1 || ls[tp("a", 3)].Leader != 1 {
			t.Errorf("LeaderAndIsr to %d: %+v", b, ls)
		}
	}
}

func TestStorageErrorTakesReplicaOffline(t *testing.T) {
	h, rd := loaded(t, Options{}, brokers(1, 2), [][]int32{{1, 2}}, []*PartitionState{ptr(state(1, 0, []int32{1}, 0))})
	var req Request
	for _, r := range rd.Requests {
		if r.Broker == 1 && r.Msg.Key() == 4 {
			req = r
		}
	}
	resp := &kmsg.LeaderAndISRResponse{Version: 7, Topics: []kmsg.LeaderAndISRResponseTopic{{TopicID: tid(1), Partitions: []kmsg.LeaderAndISRResponseTopicPartition{{Partition: 0, ErrorCode: kerr.KafkaStorageError.Code}}}}}
	rd = h.step(Response{Request: req, Response: resp})
	if len(rd.Writes) != 1 || rd.Writes[0].State.Leader != NoLeader {
		t.Fatalf("writes %+v", rd.Writes)
	}
	rd = h.ok(rd)
	um, _, _ := requests(rd, 2)
	if ps := umStates(um)[tp("a", 0)]; !slices.Equal(ps.OfflineReplicas, []int32{1}) {
		t.Errorf("UpdateMetadata: %+v", ps)
	}
}

// A broker's log directory event: the controller asks it about every
// partition it hosts; a follower's replica answered KAFKA_STORAGE_ERROR
// goes offline (UpdateMetadata names it), and the next event's answer
// without that error (the state it already has: STALE_CONTROLLER_EPOCH)
// brings it online again.
func TestLogDirEventAsksTheBroker(t *testing.T) {
	h, _ := loaded(t, Options{}, brokers(1, 2), [][]int32{{1, 2}, {2, 1}, {1}}, []*PartitionState{
		ptr(state(1, 0, []int32{1, 2}, 0)), ptr(state(2, 0, []int32{2, 1}, 0)), ptr(state(1, 0, []int32{1}, 0))})
	rd := h.step(LogDirEvent{Brokers: []int32{2, 7}}) // 7 is not live
	_, lisr, _ := requests(rd, 2)
	if got := lisrStates(lisr); len(got) != 2 || got[tp("a", 0)].Leader != 1 || got[tp("a", 1)].Leader != 2 || len(rd.Writes) != 0 {
		t.Fatalf("LeaderAndIsr to broker 2: %+v, writes %+v", got, rd.Writes)
	}
	if got := recipients(rd, 4); !slices.Equal(got, []int32{2}) {
		t.Fatalf("LeaderAndIsr to %v, want broker 2 alone", got)
	}
	var req Request
	for _, r := range rd.Requests {
		if r.Broker == 2 && r.Msg.Key() == 4 {
			req = r
		}
	}
	answer := func(code int16) Ready {
		resp := &kmsg.LeaderAndISRResponse{Version: 7, Topics: []kmsg.LeaderAndISRResponseTopic{{TopicID: tid(1), Partitions: []kmsg.LeaderAndISRResponseTopicPartition{
			{Partition: 0, ErrorCode: code}, {Partition: 1, ErrorCode: kerr.StaleControllerEpoch.Code}}}}}
		return h.step(Response{Request: req, Response: resp})
	}
	rd = answer(kerr.KafkaStorageError.Code)
	if len(rd.Writes) != 1 || !slices.Equal(rd.Writes[0].State.ISR, []int32{1}) {
		t.Fatalf("writes after the storage error %+v, want broker 2 out of a-0's ISR", rd.Writes)
	}
	rd = h.ok(rd)
	um, _, _ := requests(rd, 1)
	if ps := umStates(um)[tp("a", 0)]; !slices.Equal(ps.OfflineReplicas, []int32{2}) {
		t.Fatalf("UpdateMetadata after the storage error: %+v", umStates(um))
	}
	rd = h.step(LogDirEvent{Brokers: []int32{2}})
	for _, r := range rd.Requests {
		if r.Broker == 2 && r.Msg.Key() == 4 {
			req = r
		}
	}
	rd = answer(kerr.StaleControllerEpoch.Code)
	um, _, _ = requests(rd, 1)
	if ps, ok := umStates(um)[tp("a", 0)]; !ok || len(ps.OfflineReplicas) != 0 {
		t.Fatalf("UpdateMetadata once the disk has room: %+v", umStates(um))
	}
}

func TestLostRequestResyncs(t *testing.T) {
	h, rd := loaded(t, Options{}, brokers(1, 2), [][]int32{{1, 2}, {1}}, []*PartitionState{ptr(state(1, 0, []int32{1}, 0)), ptr(state(1, 0, []int32{1}, 0))})
	var req Request
	for _, r := range rd.Requests {
		if r.Broker == 2 {
			req = r
		}
	}
	rd = h.step(Response{Request: req, Err: errors.New("gave up")})
	if got := recipients(rd, 6); !slices.Equal(got, []int32{2}) {
		t.Fatalf("UpdateMetadata to %v", got)
	}
	um, lisr, _ := requests(rd, 2)
	if len(umStates(um)) != 2 || len(lisrStates(lisr)) != 1 {
		t.Errorf("resync: %+v %+v", umStates(um), lisrStates(lisr))
	}
	// A response for a registration that is gone is ignored.
	h.step(BrokersChanged{Live: []BrokerInfo{broker(1, 101), broker(2, 700)}})
	if rd := h.step(Response{Request: req, Err: errors.New("gave up")}); !rd.Empty() {
		t.Errorf("stale response acted on: %+v", rd)
	}
}

func TestBrokerEndpointsChanged(t *testing.T) {
	h, _ := loaded(t, Options{}, brokers(1, 2), [][]int32{{1, 2}}, []*PartitionState{ptr(state(1, 0, []int32{1}, 0))})
	moved := broker(2, 102)
	moved.Endpoints[0].Port = 9093
	rd := h.step(BrokersChanged{Live: []BrokerInfo{broker(1, 101), moved}})
	if got := recipients(rd, 6); !slices.Equal(got, []int32{1, 2}) || len(rd.Requests) != 2 || len(rd.Writes) != 0 {
		t.Fatalf("%+v", rd)
	}
	if um, _, _ := requests(rd, 1); um.LiveBrokers[1].Endpoints[0].Port != 9093 {
		t.Errorf("%+v", um.LiveBrokers)
	}
}

func TestPartitionsAdded(t *testing.T) {
	h, _ := loaded(t, Options{}, brokers(1, 2), [][]int32{{1, 2}}, []*PartitionState{ptr(state(1, 0, []int32{1}, 0))})
	rd := h.step(TopicsChanged{Topics: []TopicAssignment{{Name: "a", ID: tid(1), Replicas: [][]int32{{2, 1}, {2, 1}, {1, 2}}}}})
	if len(rd.Writes) != 2 || rd.Writes[0].Partition != 1 || rd.Writes[0].State.Leader != 2 || rd.Writes[1].Partition != 2 || rd.Writes[1].State.Leader != 1 {
		t.Fatalf("writes %+v", rd.Writes)
	}
	if a, _ := h.c.Topic("a"); !slices.Equal(a.Replicas[0], []int32{1, 2}) {
		t.Errorf("existing partition's assignment changed: %v", a.Replicas)
	}
}

func TestTopicWithoutID(t *testing.T) {
	h, _ := loaded(t, Options{}, brokers(1), nil, nil)
	rd := h.step(TopicsChanged{Topics: []TopicAssignment{{Name: "old", Replicas: [][]int32{{1}}}}})
	sets := writesOf(rd, SetAssignment)
	if len(sets) != 1 || sets[0].Assignment.ID != (engine.TopicID{0xee, 1}) || len(writesOf(rd, CreateState)) != 1 {
		t.Fatalf("writes %+v", rd.Writes)
	}
	rd = h.ok(rd)
	if _, lisr, _ := requests(rd, 1); lisr.TopicStates[0].TopicID != (engine.TopicID{0xee, 1}) {
		t.Errorf("LeaderAndIsr %+v", lisr.TopicStates)
	}
}

func TestDeleteTopic(t *testing.T) {
	h, _ := loaded(t, Options{}, brokers(1, 2, 3), [][]int32{{1, 2}, {2, 3}}, []*PartitionState{ptr(state(1, 0, []int32{1}, 0)), ptr(state(2, 0, []int32{2}, 0))})
	rd := h.step(DeleteTopics{Topics: []string{"a", "ghost"}})
	if w := writesOf(rd, RemoveDeleteMarker); len(w) != 1 || w[0].Topic != "ghost" || len(rd.Writes) != 1 {
		t.Fatalf("writes %+v", rd.Writes)
	}
	if recipients(rd, 4) != nil {
		t.Errorf("LeaderAndIsr for a topic being deleted")
	}
	for b, want := range map[int32][]engine.Partition{1: {tp("a", 0)}, 2: {tp("a", 0), tp("a", 1)}, 3: {tp("a", 1)}} {
		um, _, sr := requests(rd, b)
		if got := stopped(sr); !slices.Equal(got, want) {
			t.Errorf("StopReplica to %d: %v", b, got)
		}
		if ps := sr.Topics[0].PartitionStates[0]; !ps.Delete || ps.LeaderEpoch != EpochDuringDelete {
			t.Errorf("StopReplica to %d: %+v", b, ps)
		}
		for _, ps := range umStates(um) {
			if ps.Leader != LeaderDuringDelete {
				t.Errorf("UpdateMetadata to %d: %+v", b, ps)
			}
		}
	}
	h.ok(Ready{Writes: rd.Writes})
	if rd := h.step(stopOK(rd, 1, 0), stopOK(rd, 2, 0)); len(rd.Writes) != 0 {
		t.Fatalf("torn down before every replica is deleted: %+v", rd.Writes)
	}
	rd = h.step(stopOK(rd, 3, 0))
	if len(rd.Writes) != 1 || !reflect.DeepEqual(rd.Writes[0], Write{Op: DeleteTopic, Topic: "a"}) {
		t.Fatalf("writes %+v", rd.Writes)
	}
	if rd := h.ok(rd); !rd.Empty() {
		t.Errorf("after teardown: %+v", rd)
	}
	if _, ok := h.c.Topic("a"); ok {
		t.Errorf("topic still there")
	}
}

func TestDeleteTopicWaitsForDeadBroker(t *testing.T) {
	h, _ := loaded(t, Options{}, brokers(1, 2), [][]int32{{1, 3}}, []*PartitionState{ptr(state(1, 0, []int32{1}, 0))})
	rd := h.step(DeleteTopics{Topics: []string{"a"}})
	if got := recipients(rd, 5); !slices.Equal(got, []int32{1}) {
		t.Fatalf("StopReplica to %v", got)
	}
	if rd := h.step(stopOK(rd, 1, 0)); len(rd.Writes) != 0 {
		t.Fatalf("torn down with a replica on a dead broker: %+v", rd.Writes)
	}
	rd = h.step(BrokersChanged{Live: brokers(1, 2, 3)})
	_, lisr, sr := requests(rd, 3)
	if got := stopped(sr); !slices.Equal(got, []engine.Partition{tp("a", 0)}) || lisr != nil {
		t.Fatalf("to the returning broker: StopReplica %v, LeaderAndIsr %+v", got, lisr)
	}
	rd = h.step(stopOK(rd, 3, 0))
	if len(rd.Writes) != 1 || rd.Writes[0].Op != DeleteTopic {
		t.Fatalf("writes %+v", rd.Writes)
	}
}

func TestDeleteTopicReplicaErrorHaltsUntilRestart(t *testing.T) {
	h, _ := loaded(t, Options{}, brokers(1, 2), [][]int32{{1, 2}, {2, 1}}, []*PartitionState{ptr(state(1, 0, []int32{1}, 0)), ptr(state(2, 0, []int32{2}, 0))})
	rd := h.step(DeleteTopics{Topics: []string{"a"}})
	first := rd
	resp := stopOK(rd, 2, 0)
	resp.Response.(*kmsg.StopReplicaResponse).Partitions[0].ErrorCode = kerr.KafkaStorageError.Code // a-0 failed, a-1 deleted
	if rd := h.step(resp, stopOK(first, 1, 0)); !rd.Empty() {
		t.Fatalf("deletion not halted: %+v", rd)
	}
	rd = h.step(BrokersChanged{Live: []BrokerInfo{broker(1, 101), broker(2, 800)}})
	if got := stopped(func() *kmsg.StopReplicaRequest { _, _, s := requests(rd, 2); return s }()); !slices.Equal(got, []engine.Partition{tp("a", 0)}) {
		t.Fatalf("retried StopReplica %v", got)
	}
	if _, _, sr := requests(rd, 1); sr != nil {
		t.Errorf("StopReplica again to broker 1: %+v", sr)
	}
	rd = h.step(stopOK(rd, 2, 0))
	if len(rd.Writes) != 1 || rd.Writes[0].Op != DeleteTopic {
		t.Fatalf("writes %+v", rd.Writes)
	}
}

func TestPartitionsAddedDuringDeletionUndone(t *testing.T) {
	h, _ := loaded(t, Options{}, brokers(1), [][]int32{{1}}, []*PartitionState{ptr(state(1, 0, []int32{1}, 0))})
	h.step(DeleteTopics{Topics: []string{"a"}})
	rd := h.step(TopicsChanged{Topics: []TopicAssignment{{Name: "a", ID: tid(1), Replicas: [][]int32{{1}, {1}}}}})
	want := Write{Op: SetAssignment, Topic: "a", Assignment: TopicAssignment{Name: "a", ID: tid(1), Replicas: [][]int32{{1}}}}
	if len(rd.Writes) != 1 || !reflect.DeepEqual(rd.Writes[0], want) {
		t.Fatalf("writes %+v", rd.Writes)
	}
}

func TestTopicRecreatedDuringTeardown(t *testing.T) {
	h, _ := loaded(t, Options{}, brokers(1), [][]int32{{1}}, []*PartitionState{ptr(state(1, 0, []int32{1}, 0))})
	rd := h.step(DeleteTopics{Topics: []string{"a"}})
	rd = h.step(stopOK(rd, 1, 0))
	teardown := rd.Writes[0]
	if rd := h.step(TopicsChanged{Topics: []TopicAssignment{{Name: "a", ID: tid(2), Replicas: [][]int32{{1}}}}}); !rd.Empty() {
		t.Fatalf("new topic taken during teardown: %+v", rd)
	}
	rd = h.step(succeeded(teardown))
	if len(rd.Writes) != 1 || rd.Writes[0].Op != CreateState || rd.Writes[0].State.LeaderEpoch != 0 {
		t.Fatalf("writes %+v", rd.Writes)
	}
	if a, _ := h.c.Topic("a"); a.ID != tid(2) {
		t.Errorf("topic id %v", a.ID)
	}
}

func TestDeletionDisabled(t *testing.T) {
	h, _ := loaded(t, Options{DisableTopicDeletion: true}, brokers(1), [][]int32{{1}}, []*PartitionState{ptr(state(1, 0, []int32{1}, 0))})
	rd := h.step(DeleteTopics{Topics: []string{"a"}})
	if len(rd.Writes) != 1 || !reflect.DeepEqual(rd.Writes[0], Write{Op: RemoveDeleteMarker, Topic: "a"}) || len(rd.Requests) != 0 {
		t.Fatalf("%+v", rd)
	}
	if h.c.Deleting("a") {
		t.Errorf("deleting")
	}
}

func TestCallerBugsPanic(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", name)
			}
		}()
		f()
	}
	mustPanic("Step before Load", func() { New(1, 1, Options{}).Step(BrokersChanged{}) })
	mustPanic("Step before Advance", func() {
		c := New(1, 1, Options{})
		c.Step(Load{Brokers: brokers(1)})
		c.Ready()
		c.Step(BrokersChanged{})
	})
	mustPanic("result of a write not in flight", func() {
		c := New(1, 1, Options{})
		c.Step(Load{})
		c.Step(WriteResult{Write: Write{Op: CreateState, Topic: "x"}})
	})
}
