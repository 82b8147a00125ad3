package controller

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterReq is an AlterPartition of topic "a" (id tid(1)) from broker b at
// its registered epoch, in version v.
func alterReq(v int16, b int32, partition, leaderEpoch, partitionEpoch int32, isr ...int32) *kmsg.AlterPartitionRequest {
	rp := kmsg.AlterPartitionRequestTopicPartition{Partition: partition, LeaderEpoch: leaderEpoch, PartitionEpoch: partitionEpoch}
	if v < 3 {
		rp.NewISR = isr
	} else {
		for _, r := range isr {
			rp.NewEpochISR = append(rp.NewEpochISR, kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{BrokerID: r, BrokerEpoch: 100 + int64(r)})
		}
	}
	return &kmsg.AlterPartitionRequest{Version: v, BrokerID: b, BrokerEpoch: 100 + int64(b),
		Topics: []kmsg.AlterPartitionRequestTopic{{Topic: "a", TopicID: tid(1), Partitions: []kmsg.AlterPartitionRequestTopicPartition{rp}}}}
}

// alterLoaded is a controller of brokers 1-3 with topic "a": partition 0
// on [1 2 3] led by 1 at leader epoch 3, ISR [1 2 3], version 7; partition
// 1 on [1 2 4] (4 is not live) led by 1, ISR [1 2], version 2.
func alterLoaded(t *testing.T) *harness {
	h, _ := loaded(t, Options{}, brokers(1, 2, 3), [][]int32{{1, 2, 3}, {1, 2, 4}},
		[]*PartitionState{ptr(state(1, 3, []int32{1, 2, 3}, 7)), ptr(state(1, 3, []int32{1, 2}, 2))})
	return h
}

// only returns the one partition answer of rd's one answer.
func only(t *testing.T, rd Ready, id uint64) (*kmsg.AlterPartitionResponse, kmsg.AlterPartitionResponseTopicPartition) {
	t.Helper()
	if len(rd.Answers) != 1 || rd.Answers[0].ID != id {
		t.Fatalf("answers %+v, want one to %d", rd.Answers, id)
	}
	resp := rd.Answers[0].Response
	if resp.ErrorCode != 0 {
		return resp, kmsg.AlterPartitionResponseTopicPartition{}
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("answer %+v", resp)
	}
	return resp, resp.Topics[0].Partitions[0]
}

func TestAlterPartitionShrink(t *testing.T) {
	h := alterLoaded(t)
	rd := h.step(AlterPartition{ID: 9, Request: alterReq(2, 1, 0, 3, 7, 1, 2)})
	if len(rd.Answers) != 0 || len(rd.Requests) != 0 {
		t.Fatalf("answered or told before ZooKeeper has it: %+v", rd)
	}
	ws := writesOf(rd, UpdateState)
	want := PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{1, 2}, ControllerEpoch: 5, PartitionEpoch: 7}
	if len(ws) != 1 || !ws[0].ISRChange || ws[0].Partition != 0 || !slices.Equal(ws[0].State.ISR, want.ISR) ||
		ws[0].State.Leader != 1 || ws[0].State.LeaderEpoch != 3 || ws[0].State.PartitionEpoch != 7 || ws[0].State.ControllerEpoch != 5 {
		t.Fatalf("writes %+v, want the ISR change %+v", rd.Writes, want)
	}
	rd = h.ok(rd)
	resp, rp := only(t, rd, 9)
	if resp.Version != 2 || resp.Topics[0].TopidID != tid(1) || rp.ErrorCode != 0 || rp.LeaderID != 1 || rp.LeaderEpoch != 3 ||
		!slices.Equal(rp.ISR, []int32{1, 2}) || rp.PartitionEpoch != 8 {
		t.Fatalf("answer %+v", resp)
	}
	if got := recipients(rd, 4); len(got) != 0 {
		t.Errorf("LeaderAndIsr to %v after an ISR change (Kafka sends UpdateMetadata only)", got)
	}
	if got := recipients(rd, 6); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("UpdateMetadata to %v", got)
	}
	for _, b := range []int32{1, 2, 3} {
		um, _, _ := requests(rd, b)
		ps := umStates(um)[tp("a", 0)]
		if ps.Leader != 1 || ps.LeaderEpoch != 3 || !slices.Equal(ps.ISR, []int32{1, 2}) || ps.ZKVersion != 8 {
			t.Errorf("UpdateMetadata to %d: %+v", b, ps)
		}
	}
	// The same request again is answered with the state, not refused.
	rd = h.step(AlterPartition{ID: 10, Request: alterReq(2, 1, 0, 3, 7, 1, 2)})
	if _, rp := only(t, rd, 10); rp.ErrorCode != 0 || rp.PartitionEpoch != 8 || len(rd.Writes) != 0 {
		t.Fatalf("repeated request: %+v, writes %+v", rp, rd.Writes)
	}
}

func TestAlterPartitionRefused(t *testing.T) {
	stale := alterReq(2, 1, 0, 3, 7, 1, 2)
	stale.BrokerEpoch = 99
	unknownID := alterReq(2, 1, 0, 3, 7, 1, 2)
	unknownID.Topics[0].TopicID = tid(9)
	unknownName := alterReq(1, 1, 0, 3, 7, 1, 2)
	unknownName.Topics[0].Topic = "b"
	for name, c := range map[string]struct {
		req       *kmsg.AlterPartitionRequest
		top, code int16
	}{
		"stale broker epoch":    {req: stale, top: kerr.StaleBrokerEpoch.Code},
		"unknown broker":        {req: alterReq(2, 7, 0, 3, 7, 1, 2), top: kerr.StaleBrokerEpoch.Code},
		"older leader epoch":    {req: alterReq(2, 1, 0, 2, 7, 1, 2), code: kerr.FencedLeaderEpoch.Code},
		"older partition epoch": {req: alterReq(2, 1, 0, 3, 6, 1, 2), code: kerr.InvalidUpdateVersion.Code},
		"newer partition epoch": {req: alterReq(2, 1, 0, 3, 8, 1, 2), code: kerr.NotController.Code},
		"newer leader epoch":    {req: alterReq(2, 1, 0, 4, 7, 1, 2), code: kerr.NotController.Code},
		"unknown topic id":      {req: unknownID, code: kerr.UnknownTopicID.Code},
		"unknown topic name":    {req: unknownName, code: kerr.UnknownTopicOrPartition.Code},
		"unknown partition":     {req: alterReq(3, 1, 5, 3, 7, 1, 2), code: kerr.UnknownTopicOrPartition.Code},
		"dead replica added v2": {req: alterReq(2, 1, 1, 3, 2, 1, 2, 4), code: kerr.IneligibleReplica.Code},
		"dead replica added v1": {req: alterReq(1, 1, 1, 3, 2, 1, 2, 4), code: kerr.OperationNotAttempted.Code},
		"not the leader":        {req: alterReq(2, 2, 0, 3, 7, 2, 3), code: kerr.InvalidRequest.Code},
		"leader left out":       {req: alterReq(2, 1, 0, 3, 7, 2, 3), code: kerr.InvalidRequest.Code},
		"not a replica":         {req: alterReq(2, 1, 1, 3, 2, 1, 3), code: kerr.InvalidRequest.Code},
		"twice in the ISR":      {req: alterReq(3, 1, 0, 3, 7, 1, 1), code: kerr.InvalidRequest.Code},
		"recovering with others": {req: func() *kmsg.AlterPartitionRequest {
			r := alterReq(2, 1, 0, 3, 7, 1, 2)
			r.Topics[0].Partitions[0].LeaderRecoveryState = 1
			return r
		}(), code: kerr.InvalidRequest.Code},
	} {
		t.Run(name, func(t *testing.T) {
			h := alterLoaded(t)
			rd := h.step(AlterPartition{ID: 1, Request: c.req})
			if len(rd.Writes) != 0 {
				t.Fatalf("refused request written: %+v", rd.Writes)
			}
			resp, rp := only(t, rd, 1)
			if resp.ErrorCode != c.top || rp.ErrorCode != c.code {
				t.Fatalf("answered %d / %d (%+v), want %d / %d", resp.ErrorCode, rp.ErrorCode, resp, c.top, c.code)
			}
			if resp.Version != c.req.Version {
				t.Errorf("answer version %d", resp.Version)
			}
		})
	}
}

func TestAlterPartitionWriteConflict(t *testing.T) {
	h := alterLoaded(t)
	rd := h.step(AlterPartition{ID: 1, Request: alterReq(2, 1, 0, 3, 7, 1, 2)})
	w := writesOf(rd, UpdateState)[0]
	cur := state(1, 4, []int32{1, 2, 3}, 8)
	rd = h.step(WriteResult{Write: w, Err: ErrConflict, Current: &cur})
	if _, rp := only(t, rd, 1); rp.ErrorCode != kerr.InvalidUpdateVersion.Code {
		t.Fatalf("answered %+v", rp)
	}
	if s, _ := h.c.State(tp("a", 0)); s.LeaderEpoch != 4 || s.PartitionEpoch != 8 {
		t.Fatalf("state after the conflict %+v", s)
	}
	// A failed write is answered too: the leader asks again.
	rd = h.step(AlterPartition{ID: 2, Request: alterReq(2, 1, 0, 4, 8, 1, 2)})
	w = writesOf(rd, UpdateState)[0]
	rd = h.step(WriteResult{Write: w, Err: errors.New("connection loss")})
	if _, rp := only(t, rd, 2); rp.ErrorCode != kerr.UnknownServerError.Code || len(rd.Writes) != 0 {
		t.Fatalf("answered %+v, writes %+v", rp, rd.Writes)
	}
}

// A request for a partition whose own write is in flight waits for it,
// and is then decided on the new state (here: fenced by the election).
func TestAlterPartitionAfterControllerWrite(t *testing.T) {
	h := alterLoaded(t)
	rd := h.step(BrokersChanged{Live: brokers(1, 3)}) // 2 died: both partitions lose it
	if len(writesOf(rd, UpdateState)) != 2 {
		t.Fatalf("writes %+v", rd.Writes)
	}
	rd2 := h.step(AlterPartition{ID: 1, Request: alterReq(2, 1, 0, 3, 7, 1, 3)})
	if len(rd2.Answers) != 0 || len(rd2.Writes) != 0 {
		t.Fatalf("decided with a write in flight: %+v", rd2)
	}
	rd = h.ok(rd)
	if _, rp := only(t, rd, 1); rp.ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("answered %+v", rp)
	}
}

func TestAlterPartitionTopicBeingDeleted(t *testing.T) {
	h := alterLoaded(t)
	h.step(DeleteTopics{Topics: []string{"a"}})
	rd := h.step(AlterPartition{ID: 1, Request: alterReq(2, 1, 0, 3, 7, 1, 2)})
	if _, rp := only(t, rd, 1); rp.ErrorCode != kerr.OperationNotAttempted.Code || len(rd.Writes) != 0 {
		t.Fatalf("answered %+v, writes %+v", rp, rd.Writes)
	}
}

// A controller deposed with a request's write in flight answers it
// NOT_CONTROLLER, and so every request after.
func TestAlterPartitionResigned(t *testing.T) {
	h := alterLoaded(t)
	rd := h.step(AlterPartition{ID: 1, Request: alterReq(2, 1, 0, 3, 7, 1, 2)})
	rd = h.step(WriteResult{Write: writesOf(rd, UpdateState)[0], Err: ErrControllerMoved})
	if resp, _ := only(t, rd, 1); !rd.Resigned || resp.ErrorCode != kerr.NotController.Code {
		t.Fatalf("resigned %v, answered %+v", rd.Resigned, resp)
	}
	rd = h.step(AlterPartition{ID: 2, Request: alterReq(2, 1, 0, 3, 7, 1, 2)})
	if resp, _ := only(t, rd, 2); resp.ErrorCode != kerr.NotController.Code {
		t.Fatalf("answered %+v", resp)
	}
}
