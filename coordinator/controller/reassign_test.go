package controller

import (
	"reflect"
	"slices"
	"testing"

	"github.com/sluice-io/sluice/engine"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// reassignAnswer returns rd's one reassignment answer, of id.
func reassignAnswer(t *testing.T, rd Ready, id uint64) ReassignAnswer {
	t.Helper()
	if len(rd.Reassignments) != 1 || rd.Reassignments[0].ID != id {
		t.Fatalf("reassignment answers %+v, want one to %d", rd.Reassignments, id)
	}
	return rd.Reassignments[0]
}

// A move of a-0 from [1 2] to [3 2], step by step: the assignment with
// adding and removing replicas written first and only then answered; the
// leader epoch bumped and every replica told (the new one as new); once
// the leader has the new replica in its ISR, one write makes a target
// replica leader with the ISR less the removed one; the final assignment
// is written, the removed replica deleted.
func TestReassignmentSteps(t *testing.T) {
	h, _ := loaded(t, Options{}, brokers(1, 2, 3, 4), [][]int32{{1, 2}}, []*PartitionState{ptr(state(1, 4, []int32{1, 2}, 6))})
	rd := h.step(AlterReassignments{ID: 1, Targets: []ReassignTarget{{Partition: tp("a", 0), Replicas: []int32{3, 2}}}})
	if len(rd.Reassignments) != 0 || len(rd.Writes) != 1 || rd.Writes[0].Op != SetAssignment {
		t.Fatalf("before the assignment is written: writes %+v, answers %+v", rd.Writes, rd.Reassignments)
	}
	a := rd.Writes[0].Assignment
	if !reflect.DeepEqual(a.Replicas, [][]int32{{3, 2, 1}}) || !reflect.DeepEqual(a.Adding, map[int32][]int32{0: {3}}) ||
		!reflect.DeepEqual(a.Removing, map[int32][]int32{0: {1}}) {
		t.Fatalf("assignment written %+v, want replicas [3 2 1], adding [3], removing [1]", a)
	}
	rd = h.ok(rd)
	if ans := reassignAnswer(t, rd, 1); ans.ErrorCode != 0 || len(ans.Results) != 1 || ans.Results[0].ErrorCode != 0 {
		t.Fatalf("answer %+v", ans)
	}
	bump := PartitionState{Leader: 1, LeaderEpoch: 5, ISR: []int32{1, 2}, ControllerEpoch: 5, PartitionEpoch: 6}
	if w := writesOf(rd, UpdateState); len(w) != 1 || !reflect.DeepEqual(w[0].State, bump) {
		t.Fatalf("bump %+v, want %+v", w, bump)
	}
	rd = h.ok(rd)
	if got := recipients(rd, 4); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("LeaderAndIsr to %v, want every replica [1 2 3]", got)
	}
	_, lisr, _ := requests(rd, 3)
	if ps := lisrStates(lisr)[tp("a", 0)]; !ps.IsNew || !slices.Equal(ps.Replicas, []int32{3, 2, 1}) ||
		!slices.Equal(ps.AddingReplicas, []int32{3}) || !slices.Equal(ps.RemovingReplicas, []int32{1}) {
		t.Fatalf("broker 3's LeaderAndIsr %+v", ps)
	}
	if rs := h.c.Reassignments(); len(rs) != 1 || !slices.Equal(rs[0].Adding, []int32{3}) {
		t.Fatalf("ongoing %+v", rs)
	}

	// The leader adds 3 to the ISR: the move completes.
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version, req.BrokerID, req.BrokerEpoch = 1, 1, 101
	req.Topics = []kmsg.AlterPartitionRequestTopic{{Topic: "a", Partitions: []kmsg.AlterPartitionRequestTopicPartition{
		{Partition: 0, LeaderEpoch: 5, PartitionEpoch: 7, NewISR: []int32{1, 2, 3}}}}}
	rd = h.ok(h.step(AlterPartition{ID: 9, Request: req}))
	done := PartitionState{Leader: 3, LeaderEpoch: 6, ISR: []int32{2, 3}, ControllerEpoch: 5, PartitionEpoch: 8}
	if w := writesOf(rd, UpdateState); len(w) != 1 || !reflect.DeepEqual(w[0].State, done) {
		t.Fatalf("completion %+v, want %+v", w, done)
	}
	rd = h.ok(rd)
	final := writesOf(rd, SetAssignment)
	if len(final) != 1 || !reflect.DeepEqual(final[0].Assignment.Replicas, [][]int32{{3, 2}}) || final[0].Assignment.Adding != nil || final[0].Assignment.Removing != nil {
		t.Fatalf("final assignment %+v", final)
	}
	_, lisr, sr := requests(rd, 1)
	if lisr != nil || !slices.Equal(stopped(sr), []engine.Partition{tp("a", 0)}) || !sr.Topics[0].PartitionStates[0].Delete {
		t.Fatalf("broker 1 (removed): LeaderAndIsr %+v, StopReplica %+v", lisr, sr)
	}
	if got := recipients(rd, 4); !slices.Equal(got, []int32{2, 3}) {
		t.Fatalf("LeaderAndIsr to %v, want the target [2 3]", got)
	}
	if rs := h.c.Reassignments(); len(rs) != 0 {
		t.Fatalf("ongoing after completion: %+v", rs)
	}
	h.ok(rd)
	rd = h.step(AlterReassignments{ID: 2, Targets: []ReassignTarget{{Partition: tp("a", 0)}}})
	if ans := reassignAnswer(t, rd, 2); ans.Results[0].ErrorCode != kerr.NoReassignmentInProgress.Code {
		t.Fatalf("cancel of a finished move: %+v", ans)
	}
}

// A move replaced before it completes keeps the replica the first one
// added until the second completes; cancelled, the partition goes back to
// its original replicas and every added one is deleted.
func TestReassignmentReplacedThenCancelled(t *testing.T) {
	h, _ := loaded(t, Options{}, brokers(1, 2, 3, 4), [][]int32{{1, 2}}, []*PartitionState{ptr(state(1, 4, []int32{1, 2}, 6))})
	h.ok(h.ok(h.step(AlterReassignments{ID: 1, Targets: []ReassignTarget{{Partition: tp("a", 0), Replicas: []int32{3, 2}}}})))
	rd := h.step(AlterReassignments{ID: 2, Targets: []ReassignTarget{{Partition: tp("a", 0), Replicas: []int32{4, 2}}}})
	a := writesOf(rd, SetAssignment)[0].Assignment
	if !reflect.DeepEqual(a.Replicas, [][]int32{{4, 2, 1, 3}}) || !reflect.DeepEqual(a.Adding, map[int32][]int32{0: {4, 3}}) ||
		!reflect.DeepEqual(a.Removing, map[int32][]int32{0: {1, 3}}) {
		t.Fatalf("replacing assignment %+v", a)
	}
	h.ok(h.ok(rd))
	rd = h.step(AlterReassignments{ID: 3, Targets: []ReassignTarget{{Partition: tp("a", 0)}}})
	a = writesOf(rd, SetAssignment)[0].Assignment
	// The origin is RS less AR in RS's order ([2 1]), as Kafka's.
	if !reflect.DeepEqual(a.Replicas, [][]int32{{2, 1, 4, 3}}) || !reflect.DeepEqual(a.Removing, map[int32][]int32{0: {4, 3}}) {
		t.Fatalf("cancelling assignment %+v", a)
	}
	rd = h.ok(rd) // answered; the bump
	if ans := reassignAnswer(t, rd, 3); ans.Results[0].ErrorCode != 0 {
		t.Fatalf("cancel answered %+v", ans)
	}
	rd = h.ok(rd) // the origin is in the ISR: completes at once
	done := PartitionState{Leader: 1, LeaderEpoch: 8, ISR: []int32{1, 2}, ControllerEpoch: 5, PartitionEpoch: 9}
	if w := writesOf(rd, UpdateState); len(w) != 1 || !reflect.DeepEqual(w[0].State, done) {
		t.Fatalf("completion %+v, want %+v", w, done)
	}
	rd = h.ok(rd)
	for _, b := range []int32{3, 4} {
		if _, _, sr := requests(rd, b); sr == nil || !sr.Topics[0].PartitionStates[0].Delete {
			t.Fatalf("broker %d, added then cancelled: StopReplica %+v", b, sr)
		}
	}
	if got, _ := h.c.Topic("a"); !slices.Equal(got.Replicas[0], []int32{2, 1}) {
		t.Fatalf("replicas after the cancel %v", got.Replicas[0])
	}
}

// Bad targets get Kafka's errors, and nothing is written.
func TestReassignmentRefused(t *testing.T) {
	h, _ := loaded(t, Options{}, brokers(1, 2, 3), [][]int32{{1, 2}}, []*PartitionState{ptr(state(1, 4, []int32{1, 2}, 6))})
	rd := h.step(AlterReassignments{ID: 1, Targets: []ReassignTarget{
		{Partition: tp("a", 0), Replicas: []int32{}},
		{Partition: tp("a", 0), Replicas: []int32{1, 9}}, // the last target of a partition counts
		{Partition: tp("a", 1), Replicas: []int32{1}},
		{Partition: tp("b", 0), Replicas: []int32{2, 2}},
		{Partition: tp("b", 1), Replicas: []int32{-1}},
		{Partition: tp("b", 2)},
		{Partition: tp("b", 3), Replicas: []int32{1}},
	}})
	if len(rd.Writes) != 0 {
		t.Fatalf("refused targets wrote %+v", rd.Writes)
	}
	want := []int16{kerr.InvalidReplicaAssignment.Code, kerr.UnknownTopicOrPartition.Code, kerr.InvalidReplicaAssignment.Code,
		kerr.InvalidReplicaAssignment.Code, kerr.NoReassignmentInProgress.Code, kerr.UnknownTopicOrPartition.Code}
	ans := reassignAnswer(t, rd, 1)
	var got []int16
	for _, r := range ans.Results {
		got = append(got, r.ErrorCode)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("codes %v, want %v (%+v)", got, want, ans.Results)
	}
}
