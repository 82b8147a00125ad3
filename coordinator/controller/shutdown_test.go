package controller

import (
	"reflect"
	"slices"
	"testing"

	"github.com/sluice-io/sluice/engine"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func shutdownReq(b int32, epoch int64) *kmsg.ControlledShutdownRequest {
	return &kmsg.ControlledShutdownRequest{Version: 3, BrokerID: b, BrokerEpoch: epoch}
}

// shutdownAnswer returns rd's one ControlledShutdown answer, of id.
func shutdownAnswer(t *testing.T, rd Ready, id uint64) *kmsg.ControlledShutdownResponse {
	t.Helper()
	if len(rd.ShutdownAnswers) != 1 || rd.ShutdownAnswers[0].ID != id {
		t.Fatalf("shutdown answers %+v, want one to %d", rd.ShutdownAnswers, id)
	}
	return rd.ShutdownAnswers[0].Response
}

// A controlled shutdown of broker 1 moves the leadership of what it leads
// to the next ISR member and takes it out of every ISR; the answer comes
// once ZooKeeper has the states, listing what it still leads (partitions
// nobody else can take, but for replication factor 1 ones), with
// StopReplica (no deletion) for the rest it hosts and LeaderAndIsr only
// for what it led; it
// may not rejoin an ISR while shutting down; once it is gone and
// registers again it leads again.
func TestControlledShutdown(t *testing.T) {
	h, _ := loaded(t, Options{}, brokers(1, 2, 3), [][]int32{{1, 2, 3}, {2, 1, 3}, {1}, {1, 3}}, []*PartitionState{
		ptr(state(1, 4, []int32{1, 2, 3}, 6)), // led by 1, others in sync: moves to 2
		ptr(state(2, 4, []int32{2, 1, 3}, 6)), // followed by 1: leaves the ISR
		ptr(state(1, 4, []int32{1}, 6)),       // replication factor 1: stays
		ptr(state(1, 4, []int32{1}, 6)),       // 3 out of sync: stays
	})
	rd := h.step(ControlledShutdown{ID: 7, Request: shutdownReq(1, 101)})
	if len(rd.ShutdownAnswers) != 0 {
		t.Fatalf("answered before ZooKeeper has the states: %+v", rd.ShutdownAnswers)
	}
	want := []Write{
		{Op: UpdateState, Topic: "a", Partition: 0, State: PartitionState{Leader: 2, LeaderEpoch: 5, ISR: []int32{2, 3}, ControllerEpoch: 5, PartitionEpoch: 6}},
		{Op: UpdateState, Topic: "a", Partition: 1, State: PartitionState{Leader: 2, LeaderEpoch: 5, ISR: []int32{2, 3}, ControllerEpoch: 5, PartitionEpoch: 6}},
	}
	if !reflect.DeepEqual(rd.Writes, want) {
		t.Fatalf("writes\n got %+v\nwant %+v", rd.Writes, want)
	}
	rd = h.ok(rd)
	resp := shutdownAnswer(t, rd, 7)
	var remaining []int32
	for _, p := range resp.PartitionsRemaining {
		remaining = append(remaining, p.Partition)
	}
	if resp.ErrorCode != 0 || !slices.Equal(remaining, []int32{3}) {
		t.Fatalf("answer %+v, want partition 3 remaining (2 has one replica: it cannot move)", resp)
	}
	// The old leader of a-0 is told it no longer leads (Kafka's
	// controlled-shutdown election tells the live or shutting-down
	// replicas), so it takes no more writes at the old epoch; of a-1's
	// change it is told nothing.
	_, lisr, sr := requests(rd, 1)
	if lisr == nil || len(lisr.TopicStates) != 1 || len(lisr.TopicStates[0].PartitionStates) != 1 ||
		lisr.TopicStates[0].PartitionStates[0].Partition != 0 || lisr.TopicStates[0].PartitionStates[0].Leader != 2 {
		t.Errorf("LeaderAndIsr to the shutting broker: %+v, want a-0's new leader 2 only", lisr)
	}
	if got := recipients(rd, 4); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Errorf("LeaderAndIsr to %v, want the replicas and the deposed leader", got)
	}
	if got := stopped(sr); !slices.Equal(got, []engine.Partition{tp("a", 0), tp("a", 1)}) || sr.Topics[0].PartitionStates[0].Delete {
		t.Errorf("StopReplica to the shutting broker: %+v", sr)
	}
	// The new leader of a-0 may not take it back into the ISR.
	rd = h.step(AlterPartition{ID: 8, Request: alterReq(3, 2, 0, 5, 7, 2, 3, 1)})
	if _, p := only(t, rd, 8); p.ErrorCode != kerr.IneligibleReplica.Code {
		t.Fatalf("ISR expansion to a shutting broker answered %+v, want INELIGIBLE_REPLICA", p)
	}
	// Asked again: nothing left to move, the same partitions remain.
	rd = h.step(ControlledShutdown{ID: 9, Request: shutdownReq(1, 101)})
	if len(rd.Writes) != 0 || len(shutdownAnswer(t, rd, 9).PartitionsRemaining) != 1 {
		t.Fatalf("asked again: writes %+v, answers %+v", rd.Writes, rd.ShutdownAnswers)
	}
	// Gone, its last partitions are offline; back, it leads them again.
	rd = h.ok(h.step(BrokersChanged{Live: brokers(2, 3)}))
	rd = h.step(BrokersChanged{Live: []BrokerInfo{broker(1, 201), broker(2, 102), broker(3, 103)}})
	leaders := map[int32]int32{}
	for _, w := range rd.Writes {
		leaders[w.Partition] = w.State.Leader
	}
	if leaders[2] != 1 || leaders[3] != 1 {
		t.Fatalf("writes after the broker returned %+v, want 1 leading a-2 and a-3 again", rd.Writes)
	}
}

// Requests the controller refuses: an unknown broker, a broker epoch older
// than the registration's; a controller not loaded or resigned answers
// NOT_CONTROLLER, outstanding requests included.
func TestControlledShutdownRefused(t *testing.T) {
	h, _ := loaded(t, Options{}, brokers(1, 2, 3), [][]int32{{1, 2, 3}}, []*PartitionState{ptr(state(1, 4, []int32{1, 2, 3}, 6))})
	for _, c := range []struct {
		req  *kmsg.ControlledShutdownRequest
		code int16
	}{
		{shutdownReq(9, -1), kerr.BrokerNotAvailable.Code},
		{shutdownReq(2, 50), kerr.StaleBrokerEpoch.Code},
	} {
		rd := h.step(ControlledShutdown{ID: 1, Request: c.req})
		if got := shutdownAnswer(t, rd, 1); got.ErrorCode != c.code || len(rd.Writes) != 0 {
			t.Errorf("%+v answered %+v with writes %+v, want error %d", c.req, got, rd.Writes, c.code)
		}
	}
	rd := h.step(ControlledShutdown{ID: 2, Request: shutdownReq(1, -1)}) // -1: no epoch check
	if len(rd.Writes) != 1 || len(rd.ShutdownAnswers) != 0 {
		t.Fatalf("writes %+v answers %+v", rd.Writes, rd.ShutdownAnswers)
	}
	w := rd.Writes[0]
	rd = h.step(WriteResult{Write: w, Err: ErrControllerMoved})
	if !rd.Resigned || shutdownAnswer(t, rd, 2).ErrorCode != kerr.NotController.Code {
		t.Fatalf("a resigning controller: %+v", rd)
	}
	unloaded := New(1, 5, Options{})
	unloaded.Step(ControlledShutdown{ID: 3, Request: shutdownReq(1, -1)})
	if got := shutdownAnswer(t, unloaded.Ready(), 3); got.ErrorCode != kerr.NotController.Code {
		t.Fatalf("a controller not loaded answered %+v", got)
	}
}
