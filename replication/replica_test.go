package replication

// Table tests of single decisions of the Replica.

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func step(t *testing.T, r *Replica, ev Event) Ready {
	t.Helper()
	r.Step(ev)
	rd := r.Ready()
	rd.Answers = append([]FetchAnswer(nil), rd.Answers...)
	rd.Completed = append([]Completion(nil), rd.Completed...)
	r.Advance()
	return rd
}

func TestEpochCacheEndFor(t *testing.T) {
	c := epochCache{{Epoch: 2, Start: 5}, {Epoch: 4, Start: 9}, {Epoch: 7, Start: 12}}
	for _, tc := range []struct {
		epoch int32
		want  EpochEnd
	}{
		{7, EpochEnd{7, 20}},    // the latest: the log end
		{4, EpochEnd{4, 12}},    // where the next starts
		{5, EpochEnd{4, 12}},    // unknown: the largest below
		{1, EpochEnd{1, 5}},     // below every epoch: the first start
		{8, undefinedEnd},       // above the latest
		{NoEpoch, undefinedEnd}, // none
	} {
		if got := c.endFor(tc.epoch, 20); got != tc.want {
			t.Errorf("endFor(%d) = %+v, want %+v", tc.epoch, got, tc.want)
		}
	}
	c.truncateFromEnd(9)
	if len(c) != 1 || c.latest() != 2 {
		t.Errorf("after truncateFromEnd(9): %+v", c)
	}
}

func leader(t *testing.T, minISR int) *Replica {
	r := New(Config{Self: 1, MinInsyncReplicas: minISR, ReplicaLagTimeMaxMs: 100})
	step(t, r, BecomeLeader{Epoch: 3, PartitionEpoch: 7, ISR: []int32{1, 2, 3}, Replicas: []int32{1, 2, 3},
		Log: LogState{End: 10, HighWatermark: 8, Epochs: []EpochStart{{1, 0}, {2, 6}}}, Now: 1000})
	return r
}

func TestLeaderFetchAnswers(t *testing.T) {
	r := leader(t, 2)
	for _, tc := range []struct {
		name string
		f    FollowerFetch
		want FetchAnswer
	}{
		{"fenced", FollowerFetch{Replica: 2, FetchOffset: 10, LastFetchedEpoch: 2, CurrentLeaderEpoch: 2}, FetchAnswer{Err: kerr.FencedLeaderEpoch}},
		{"unknown epoch", FollowerFetch{Replica: 2, FetchOffset: 10, LastFetchedEpoch: 2, CurrentLeaderEpoch: 4}, FetchAnswer{Err: kerr.UnknownLeaderEpoch}},
		{"not a replica", FollowerFetch{Replica: 9, FetchOffset: 10, LastFetchedEpoch: 2, CurrentLeaderEpoch: 3}, FetchAnswer{Err: kerr.ReplicaNotAvailable}},
		{"diverged", FollowerFetch{Replica: 2, FetchOffset: 8, LastFetchedEpoch: 1, CurrentLeaderEpoch: 3}, FetchAnswer{Diverged: true, Diverging: EpochEnd{1, 6}, HighWatermark: 8, LogEnd: 10}},
		{"unknown last epoch", FollowerFetch{Replica: 2, FetchOffset: 10, LastFetchedEpoch: 5, CurrentLeaderEpoch: 3}, FetchAnswer{Diverged: true, Diverging: undefinedEnd, HighWatermark: 8, LogEnd: 10}},
		{"past the end", FollowerFetch{Replica: 2, FetchOffset: 11, CurrentLeaderEpoch: 3, LastFetchedEpoch: NoEpoch}, FetchAnswer{Err: kerr.OffsetOutOfRange, LogEnd: 10}},
		{"records", FollowerFetch{Replica: 2, FetchOffset: 9, LastFetchedEpoch: 2, CurrentLeaderEpoch: 3}, FetchAnswer{From: 9, LogEnd: 10, HighWatermark: 8}},
	} {
		rd := step(t, r, tc.f)
		tc.want.Replica = tc.f.Replica
		if len(rd.Answers) != 1 || rd.Answers[0] != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, rd.Answers, tc.want)
		}
	}
}

func TestLeaderHighWatermarkAndProduce(t *testing.T) {
	r := leader(t, 2)
	rd := step(t, r, WaitProduce{Ref: 1, Offset: 10, Deadline: 1500})
	if len(rd.Completed) != 0 {
		t.Fatalf("completed before the followers fetched: %+v", rd.Completed)
	}
	step(t, r, FollowerFetch{Replica: 2, FetchOffset: 10, LastFetchedEpoch: 2, CurrentLeaderEpoch: 3, Now: 1010})
	if r.HighWatermark() != 8 {
		t.Fatalf("high watermark %d before every ISR member fetched, want 8", r.HighWatermark())
	}
	rd = step(t, r, FollowerFetch{Replica: 3, FetchOffset: 10, LastFetchedEpoch: 2, CurrentLeaderEpoch: 3, Now: 1010})
	if !rd.HighWatermarkChanged || rd.HighWatermark != 10 || len(rd.Completed) != 1 || rd.Completed[0] != (Completion{Ref: 1}) {
		t.Fatalf("after both fetched: %+v", rd)
	}
	// Follower 3 stops fetching: it leaves the ISR after the lag time, and
	// then replica 2 too; under min ISR the high watermark holds.
	step(t, r, Appended{End: 12, Epoch: 3})
	step(t, r, FollowerFetch{Replica: 2, FetchOffset: 12, LastFetchedEpoch: 3, CurrentLeaderEpoch: 3, Now: 1150})
	rd = step(t, r, Tick{Now: 1150})
	if rd.AlterPartition == nil || len(rd.AlterPartition.ISR) != 2 {
		t.Fatalf("no shrink after the lag time: %+v", rd)
	}
	step(t, r, AlterPartitionResult{Request: *rd.AlterPartition, ISR: rd.AlterPartition.ISR, LeaderEpoch: 3, PartitionEpoch: 8})
	if got := r.ISR(); len(got) != 2 || r.HighWatermark() != 12 {
		t.Fatalf("ISR %v, high watermark %d", got, r.HighWatermark())
	}
	step(t, r, Appended{End: 13, Epoch: 3}) // replica 2 no longer has the log end
	rd = step(t, r, Tick{Now: 1300})
	if rd.AlterPartition == nil {
		t.Fatalf("replica 2 kept in the ISR: %+v", rd)
	}
	step(t, r, AlterPartitionResult{Request: *rd.AlterPartition, ISR: rd.AlterPartition.ISR, LeaderEpoch: 3, PartitionEpoch: 9})
	if !r.UnderMinISR() || !errors.Is(r.CheckProduce(true), kerr.NotEnoughReplicas) || r.CheckProduce(false) != nil {
		t.Fatalf("ISR %v: under min ISR %v", r.ISR(), r.UnderMinISR())
	}
	rd = step(t, r, WaitProduce{Ref: 2, Offset: 13, Deadline: 1400})
	if r.HighWatermark() != 12 || len(rd.Completed) != 0 {
		t.Fatalf("high watermark moved under min ISR: %d", r.HighWatermark())
	}
	rd = step(t, r, Tick{Now: 1400})
	if len(rd.Completed) != 1 || rd.Completed[0].Err != kerr.RequestTimedOut {
		t.Fatalf("no timeout: %+v", rd.Completed)
	}
	step(t, r, WaitProduce{Ref: 3, Offset: 13, Deadline: 9999})
	rd = step(t, r, BecomeFollower{Leader: 2, Epoch: 4, Replicas: []int32{1, 2, 3}, Log: LogState{End: 13, HighWatermark: 12}})
	if len(rd.Completed) != 1 || rd.Completed[0].Err != kerr.NotLeaderForPartition || !rd.Fetching {
		t.Fatalf("stepping down: %+v", rd)
	}
}

func TestFollowerLogStartCatchUp(t *testing.T) {
	r := New(Config{Self: 2})
	rd := step(t, r, BecomeFollower{Leader: 1, Epoch: 5, Replicas: []int32{1, 2}, Log: LogState{Start: 0, End: 4, HighWatermark: 4, Epochs: []EpochStart{{1, 0}}}})
	f := rd.Fetch
	if !rd.Fetching || f.Offset != 4 || f.LastFetchedEpoch != 1 || f.CurrentLeaderEpoch != 5 {
		t.Fatalf("first fetch %+v", rd)
	}
	rd = step(t, r, FetchResult{Seq: f.Seq, Err: kerr.OffsetOutOfRange, LeaderLogStart: 100, LeaderLogEnd: 120})
	if !rd.Truncated || rd.Truncate != (Truncation{Offset: 100, Fully: true}) || rd.Fetch.Offset != 100 || rd.Fetch.LastFetchedEpoch != NoEpoch {
		t.Fatalf("out of range below the leader's start: %+v", rd)
	}
	rd = step(t, r, FetchResult{Seq: rd.Fetch.Seq, HighWatermark: 110, LeaderLogStart: 100, Batches: []Batch{{Base: 100, End: 105, Epoch: 4}}})
	if len(rd.Append) != 1 || rd.Fetching || rd.HighWatermarkChanged {
		t.Fatalf("the fetched batches: %+v", rd)
	}
	rd = step(t, r, FetchAppended{Seq: rd.AppendSeq, End: 105})
	if rd.HighWatermark != 105 || rd.Fetch.Offset != 105 || rd.Fetch.LastFetchedEpoch != 4 {
		t.Fatalf("after the append: %+v", rd)
	}
	if rd := step(t, r, FetchResult{Seq: rd.Fetch.Seq - 1, Err: ErrUnreachable}); !rd.Empty() {
		t.Fatalf("a stale answer was taken: %+v", rd)
	}
}

// Stop (StopReplica without deletion) ends either role: a leader's waiting
// produces fail NOT_LEADER_OR_FOLLOWER and it answers no follower; a
// follower's fetch in flight is dropped and no new one is asked; a later
// BecomeFollower starts fetching again.
func TestStop(t *testing.T) {
	r := leader(t, 1)
	step(t, r, WaitProduce{Ref: 1, Offset: 10, Deadline: 9999})
	rd := step(t, r, Stop{})
	if r.Role() != Offline || len(rd.Completed) != 1 || rd.Completed[0].Err != kerr.NotLeaderForPartition {
		t.Fatalf("stopped leader: role %v, %+v", r.Role(), rd)
	}
	rd = step(t, r, BecomeFollower{Leader: 2, Epoch: 4, Replicas: []int32{1, 2, 3}, Log: LogState{End: 10, HighWatermark: 8}})
	if !rd.Fetching {
		t.Fatalf("a follower asks no fetch: %+v", rd)
	}
	seq := rd.Fetch.Seq
	if rd := step(t, r, Stop{}); rd.Fetching || r.Role() != Offline {
		t.Fatalf("stopped follower: %+v", rd)
	}
	if rd := step(t, r, FetchResult{Seq: seq, HighWatermark: 10, Batches: []Batch{{Base: 10, End: 11, Epoch: 4}}}); len(rd.Append) != 0 || rd.Fetching {
		t.Fatalf("a stopped replica took its fetch's answer: %+v", rd)
	}
	if rd := step(t, r, BecomeFollower{Leader: 2, Epoch: 4, Replicas: []int32{1, 2, 3}, Log: LogState{End: 10, HighWatermark: 8}}); !rd.Fetching {
		t.Fatalf("following again after a stop asks no fetch: %+v", rd)
	}
}

// A caught-up follower outside the ISR bounds the high watermark (it is
// about to join), but not once the broker's metadata says its broker is
// dead: acks=all produces then complete without waiting out the lag time,
// and the dead replica is not proposed for the ISR.
func TestDeadFollowerDoesNotHoldTheHighWatermark(t *testing.T) {
	r := New(Config{Self: 1, MinInsyncReplicas: 1, ReplicaLagTimeMaxMs: 30000})
	step(t, r, BecomeLeader{Epoch: 3, PartitionEpoch: 7, ISR: []int32{1}, Replicas: []int32{1, 2},
		Log: LogState{End: 10, HighWatermark: 10, Epochs: []EpochStart{{3, 0}}}, Now: 1000})
	rd := step(t, r, FollowerFetch{Replica: 2, FetchOffset: 10, LastFetchedEpoch: 3, CurrentLeaderEpoch: 3, Now: 1010})
	if rd.AlterPartition == nil {
		t.Fatalf("a caught-up follower not proposed for the ISR: %+v", rd)
	}
	step(t, r, AlterPartitionResult{Request: *rd.AlterPartition, Err: kerr.IneligibleReplica})
	step(t, r, Appended{End: 12, Epoch: 3})
	step(t, r, WaitProduce{Ref: 1, Offset: 12, Deadline: 9999})
	if r.HighWatermark() != 10 {
		t.Fatalf("high watermark %d with a caught-up follower at 10 about to join, want 10", r.HighWatermark())
	}
	rd = step(t, r, LiveBrokers{IDs: []int32{1}})
	if r.HighWatermark() != 12 || len(rd.Completed) != 1 || rd.Completed[0].Err != nil {
		t.Fatalf("follower 2's broker dead: high watermark %d, completed %+v; want 12 and the produce done", r.HighWatermark(), rd.Completed)
	}
	if rd := step(t, r, FollowerFetch{Replica: 2, FetchOffset: 12, LastFetchedEpoch: 3, CurrentLeaderEpoch: 3, Now: 1020}); rd.AlterPartition != nil {
		t.Fatalf("a replica of a dead broker proposed for the ISR: %+v", rd.AlterPartition)
	}
}
