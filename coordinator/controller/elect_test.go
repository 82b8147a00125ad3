package controller

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/sluice-io/sluice/engine"
	"github.com/twmb/franz-go/pkg/kerr"
)

// uncleanLoaded is a controller of brokers 1-3 with topic "a" (unclean
// election as given): partition 0 on [1 2 3] led by 1 with ISR [1] at
// leader epoch 3, version 7.
func uncleanLoaded(t *testing.T, unclean bool) *harness {
	h := newHarness(t, Options{})
	h.step(Load{Brokers: brokers(1, 2, 3),
		Topics: []TopicAssignment{{Name: "a", ID: tid(1), Replicas: [][]int32{{1, 2, 3}}, UncleanLeaderElection: unclean}},
		States: map[engine.Partition]PartitionState{tp("a", 0): state(1, 3, []int32{1}, 7)}})
	return h
}

func TestUncleanElectionWhenEnabled(t *testing.T) {
	h := uncleanLoaded(t, true)
	rd := h.step(BrokersChanged{Live: brokers(2, 3)})
	want := Write{Op: UpdateState, Topic: "a", Partition: 0, Unclean: true,
		State: PartitionState{Leader: 2, LeaderEpoch: 4, ISR: []int32{2}, ControllerEpoch: 5, LeaderRecoveryState: Recovering, PartitionEpoch: 7}}
	if len(rd.Writes) != 1 || !reflect.DeepEqual(rd.Writes[0], want) {
		t.Fatalf("writes %+v, want the unclean election %+v", rd.Writes, want)
	}
	rd = h.ok(rd)
	_, lisr, _ := requests(rd, 2)
	if ps := lisrStates(lisr)[tp("a", 0)]; ps.Leader != 2 || ps.LeaderEpoch != 4 || ps.LeaderRecoveryState != Recovering || !slices.Equal(ps.ISR, []int32{2}) {
		t.Fatalf("LeaderAndIsr to 2: %+v", ps)
	}
	// The new leader's first ISR change says it recovered (Kafka's ZooKeeper
	// mode marks the partition RECOVERED as it becomes leader).
	req := alterReq(2, 2, 0, 4, 8, 2, 3)
	rd = h.ok(h.step(AlterPartition{ID: 1, Request: req}))
	if _, rp := only(t, rd, 1); rp.ErrorCode != 0 || rp.LeaderRecoveryState != Recovered || !slices.Equal(rp.ISR, []int32{2, 3}) {
		t.Fatalf("ISR change of the recovering leader: %+v", rp)
	}
	// Broker 1 returns: out of the ISR, it leads nothing.
	if rd := h.step(BrokersChanged{Live: []BrokerInfo{broker(1, 201), broker(2, 102), broker(3, 103)}}); len(rd.Writes) != 0 {
		t.Fatalf("writes %+v on the old leader's return", rd.Writes)
	}
}

func TestNoUncleanElectionWhenDisabled(t *testing.T) {
	h := uncleanLoaded(t, false)
	h.ok(h.step(BrokersChanged{Live: brokers(2, 3)}))
	if s, _ := h.c.State(tp("a", 0)); s.Leader != NoLeader || !slices.Equal(s.ISR, []int32{1}) {
		t.Fatalf("state %+v, want offline with the last ISR", s)
	}
	// Enabling it on the topic elects an out-of-sync replica at once (Kafka's
	// TopicUncleanLeaderElectionEnable); disabling or repeating it does nothing.
	if rd := h.step(TopicConfigs{UncleanLeaderElection: map[string]bool{"a": false, "b": true}}); len(rd.Writes) != 0 {
		t.Fatalf("writes %+v", rd.Writes)
	}
	rd := h.step(TopicConfigs{UncleanLeaderElection: map[string]bool{"a": true}})
	if len(rd.Writes) != 1 || !rd.Writes[0].Unclean || rd.Writes[0].State.Leader != 2 || rd.Writes[0].State.LeaderRecoveryState != Recovering {
		t.Fatalf("writes %+v, want the unclean election", rd.Writes)
	}
	h.ok(rd)
	if rd := h.step(TopicConfigs{UncleanLeaderElection: map[string]bool{"a": true}}); len(rd.Writes) != 0 {
		t.Fatalf("writes %+v", rd.Writes)
	}
	if a, _ := h.c.Topic("a"); !a.UncleanLeaderElection {
		t.Errorf("topic %+v", a)
	}
}

// electLoaded is a controller of brokers 1-3 with topic "a": partition 0
// on [1 2 3] led by 2, ISR [1 2 3] (version 4, epoch 6); 1 on [1 2] led
// by 1 (version 2, epoch 2); 2 on [3 1 2] led by 1, ISR [1 2] (version 5,
// epoch 3); 3 on [4 1] offline, ISR [4] (version 1, epoch 1).
func electLoaded(t *testing.T) *harness {
	h, _ := loaded(t, Options{}, brokers(1, 2, 3), [][]int32{{1, 2, 3}, {1, 2}, {3, 1, 2}, {4, 1}}, []*PartitionState{
		ptr(state(2, 6, []int32{1, 2, 3}, 4)), ptr(state(1, 2, []int32{1, 2}, 2)),
		ptr(state(1, 3, []int32{1, 2}, 5)), ptr(state(NoLeader, 1, []int32{4}, 1)),
	})
	return h
}

// results indexes an answer's results.
func results(t *testing.T, rd Ready, id uint64) map[engine.Partition]ElectionResult {
	t.Helper()
	if len(rd.Elections) != 1 || rd.Elections[0].ID != id {
		t.Fatalf("elections answered %+v, want %d", rd.Elections, id)
	}
	out := map[engine.Partition]ElectionResult{}
	for _, r := range rd.Elections[0].Results {
		out[r.Partition] = r
	}
	return out
}

func TestElectPreferred(t *testing.T) {
	h := electLoaded(t)
	rd := h.step(ElectLeaders{ID: 7, Type: PreferredElection, Partitions: []engine.Partition{
		tp("a", 0), tp("a", 1), tp("a", 2), tp("a", 3), tp("a", 9), tp("b", 0), tp("a", 0),
	}})
	if len(rd.Elections) != 0 {
		t.Fatalf("answered before ZooKeeper has the election: %+v", rd.Elections)
	}
	want := Write{Op: UpdateState, Topic: "a", Partition: 0,
		State: PartitionState{Leader: 1, LeaderEpoch: 7, ISR: []int32{1, 2, 3}, ControllerEpoch: 5, PartitionEpoch: 4}}
	if len(rd.Writes) != 1 || !reflect.DeepEqual(rd.Writes[0], want) {
		t.Fatalf("writes %+v, want %+v", rd.Writes, want)
	}
	rd = h.ok(rd)
	if len(rd.Elections[0].Results) != 6 {
		t.Fatalf("results %+v: a partition named twice is answered once", rd.Elections[0].Results)
	}
	got := results(t, rd, 7)
	for tp, want := range map[engine.Partition]struct {
		code   int16
		leader int32
		msg    string
	}{
		tp("a", 0): {0, 1, ""},
		tp("a", 1): {kerr.ElectionNotNeeded.Code, NoLeader, "Leader election not needed for topic partition."},
		tp("a", 2): {kerr.PreferredLeaderNotAvailable.Code, NoLeader, "Failed to elect leader for partition a-2 under strategy PreferredReplicaPartitionLeaderElectionStrategy"},
		tp("a", 3): {kerr.PreferredLeaderNotAvailable.Code, NoLeader, "Failed to elect leader for partition a-3 under strategy PreferredReplicaPartitionLeaderElectionStrategy"},
		tp("a", 9): {kerr.UnknownTopicOrPartition.Code, NoLeader, "The partition does not exist."},
		tp("b", 0): {kerr.UnknownTopicOrPartition.Code, NoLeader, "The partition does not exist."},
	} {
		r := got[tp]
		msg := ""
		if r.Message != nil {
			msg = *r.Message
		}
		if r.ErrorCode != want.code || r.Leader != want.leader || msg != want.msg {
			t.Errorf("%v: %+v (%q), want %+v", tp, r, msg, want)
		}
	}
	// The brokers are told as after any election.
	if got := recipients(rd, 4); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Errorf("LeaderAndIsr to %v", got)
	}
}

func TestElectUnclean(t *testing.T) {
	h := electLoaded(t)
	died := h.step(BrokersChanged{Live: brokers(2, 3)}) // a-1 and a-2 lose leader 1
	rd := h.step(ElectLeaders{ID: 1, Type: UncleanElection, Partitions: []engine.Partition{tp("a", 1), tp("a", 3)}})
	if len(rd.Elections) != 0 {
		t.Fatalf("decided before the writes in flight are done: %+v", rd.Elections)
	}
	// a-1 goes to 2 meanwhile; a-3 has no live replica.
	rd = h.ok(died)
	got := results(t, rd, 1)
	if r := got[tp("a", 1)]; r.ErrorCode != kerr.ElectionNotNeeded.Code {
		t.Errorf("a-1 (led by 2 after 1 died): %+v", r)
	}
	if r := got[tp("a", 3)]; r.ErrorCode != kerr.EligibleLeadersNotAvailable.Code || *r.Message != "Failed to elect leader for partition a-3 under strategy OfflinePartitionLeaderElectionStrategy(true)" {
		t.Errorf("a-3 (no live replica): %+v", r)
	}

	// Whatever the topic's setting (KIP-460), UNCLEAN elects an out-of-sync
	// replica of a partition with no live ISR member.
	h = uncleanLoaded(t, false)
	h.ok(h.step(BrokersChanged{Live: brokers(2, 3)}))
	rd = h.step(ElectLeaders{ID: 2, Type: UncleanElection, Partitions: []engine.Partition{tp("a", 0)}})
	if len(rd.Writes) != 1 || !rd.Writes[0].Unclean || rd.Writes[0].State.Leader != 2 || !slices.Equal(rd.Writes[0].State.ISR, []int32{2}) {
		t.Fatalf("writes %+v", rd.Writes)
	}
	rd = h.ok(rd)
	if r := results(t, rd, 2)[tp("a", 0)]; r.ErrorCode != 0 || r.Leader != 2 {
		t.Fatalf("result %+v", r)
	}
	// Later decisions keep it: the topic's setting is not consulted again.
	if rd := h.step(BrokersChanged{Live: []BrokerInfo{broker(1, 201), broker(2, 102), broker(3, 103)}}); len(rd.Writes) != 0 {
		t.Fatalf("writes %+v", rd.Writes)
	}
}

func TestElectionWriteOutcomes(t *testing.T) {
	for name, c := range map[string]struct {
		err  error
		code int16
	}{
		"failed":           {errors.New("connection loss"), kerr.UnknownServerError.Code},
		"controller moved": {ErrControllerMoved, kerr.NotController.Code},
	} {
		t.Run(name, func(t *testing.T) {
			h := electLoaded(t)
			rd := h.step(ElectLeaders{ID: 3, Type: PreferredElection, Partitions: []engine.Partition{tp("a", 0), tp("a", 1)}})
			rd = h.step(WriteResult{Write: rd.Writes[0], Err: c.err})
			got := results(t, rd, 3)
			if got[tp("a", 0)].ErrorCode != c.code || got[tp("a", 1)].ErrorCode != kerr.ElectionNotNeeded.Code {
				t.Fatalf("results %+v", got)
			}
		})
	}
	// A conflict is decided again on the state read back: there, 1 leads.
	h := electLoaded(t)
	rd := h.step(ElectLeaders{ID: 4, Type: PreferredElection, Partitions: []engine.Partition{tp("a", 0)}})
	cur := state(1, 8, []int32{1, 2, 3}, 6)
	rd = h.step(WriteResult{Write: rd.Writes[0], Err: ErrConflict, Current: &cur})
	if r := results(t, rd, 4)[tp("a", 0)]; r.ErrorCode != kerr.ElectionNotNeeded.Code {
		t.Fatalf("after a conflict: %+v", r)
	}
}

func TestElectionWaitsForTheWriteInFlight(t *testing.T) {
	h := electLoaded(t)
	shrink := h.step(AlterPartition{ID: 1, Request: alterReq(2, 2, 0, 6, 4, 2, 1)})
	rd := h.step(ElectLeaders{ID: 5, Type: PreferredElection, Partitions: []engine.Partition{tp("a", 0)}})
	if len(rd.Writes) != 0 || len(rd.Elections) != 0 {
		t.Fatalf("decided while the ISR change is in flight: %+v", rd)
	}
	rd = h.ok(shrink)
	if len(rd.Writes) != 1 || rd.Writes[0].State.Leader != 1 || !slices.Equal(rd.Writes[0].State.ISR, []int32{2, 1}) {
		t.Fatalf("writes %+v, want the election on the new ISR", rd.Writes)
	}
	if r := results(t, h.ok(rd), 5)[tp("a", 0)]; r.ErrorCode != 0 || r.Leader != 1 {
		t.Fatalf("result %+v", r)
	}
}

func TestElectionNotController(t *testing.T) {
	h := newHarness(t, Options{})
	ev := ElectLeaders{ID: 1, Partitions: []engine.Partition{tp("a", 0)}}
	h.k.stepping(h.c, ev)
	h.c.Step(ev)
	rd := h.c.Ready()
	if err := h.k.check(h.c, rd); err != nil {
		t.Fatal(err)
	}
	if r := results(t, rd, 1)[tp("a", 0)]; r.ErrorCode != kerr.NotController.Code {
		t.Fatalf("before the load: %+v", r)
	}
}

func TestImbalanceCheck(t *testing.T) {
	// Ten partitions prefer broker 1; two are led by 2 (20%), one of them
	// without 1 in its ISR.
	var replicas [][]int32
	var states []*PartitionState
	for p := range 10 {
		replicas = append(replicas, []int32{1, 2})
		s := state(1, 1, []int32{1, 2}, 1)
		switch p {
		case 3:
			s = state(2, 1, []int32{1, 2}, 1)
		case 6:
			s = state(2, 1, []int32{2}, 1)
		}
		states = append(states, ptr(s))
	}
	for pct, moved := range map[int][]int32{10: {3}, 19: {3}, 20: nil, 50: nil} {
		h, _ := loaded(t, Options{}, brokers(1, 2), replicas, states)
		rd := h.step(ImbalanceCheck{Percentage: pct})
		var got []int32
		for _, w := range rd.Writes {
			if w.State.Leader != 1 || w.State.LeaderEpoch != 2 {
				t.Errorf("%d%%: write %+v", pct, w)
			}
			got = append(got, w.Partition)
		}
		if !slices.Equal(got, moved) {
			t.Errorf("%d%%: moved %v, want %v", pct, got, moved)
		}
		if len(rd.Elections) != 0 {
			t.Errorf("%d%%: answers %+v for an automatic election", pct, rd.Elections)
		}
		// A check while the election is in flight queues nothing more; once
		// it is done the imbalance is within bounds.
		if rd := h.step(ImbalanceCheck{Percentage: pct}); len(rd.Writes) != 0 {
			t.Errorf("%d%%: second check writes %+v", pct, rd.Writes)
		}
		rd = h.ok(rd)
		if rd := h.step(ImbalanceCheck{Percentage: pct}); len(rd.Writes) != 0 {
			t.Errorf("%d%%: check after the move writes %+v", pct, rd.Writes)
		}
	}
}

// The checker's ElectLeaders checks can fail: answers the core did not
// give (a preferred election reported won by another replica, a result
// missing, an election not needed of a partition led elsewhere, an answer
// to nothing asked) are caught.
func TestElectionCheckerCatchesForgedAnswers(t *testing.T) {
	h := electLoaded(t)
	ask := func(id uint64) {
		ev := ElectLeaders{ID: id, Type: PreferredElection, Partitions: []engine.Partition{tp("a", 0)}}
		h.k.stepping(h.c, ev)
	}
	for name, res := range map[string][]ElectionResult{
		"elected elsewhere": {{Partition: tp("a", 0), Leader: 2}},
		"not needed":        {{Partition: tp("a", 0), ErrorCode: kerr.ElectionNotNeeded.Code, Leader: NoLeader}},
		"missing":           nil,
	} {
		ask(1)
		if err := h.k.checkElection(h.c, ElectionAnswer{ID: 1, Results: res}); err == nil {
			t.Errorf("%s: not caught", name)
		}
	}
	if err := h.k.checkElection(h.c, ElectionAnswer{ID: 99}); err == nil {
		t.Errorf("an answer to nothing asked: not caught")
	}
}
