package replication

// The follower's view of its log moves only with what the log took
// (FetchAppended), and the leader's AlterPartition errors are retried or
// awaited as Kafka's Partition.handleAlterPartitionError decides.

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// fetching is a follower of 1 at epoch 5 with records [0, 10) of epoch 4,
// its first fetch out.
func fetching(t *testing.T) (*Replica, FetchRequest) {
	r := New(Config{Self: 2})
	rd := step(t, r, BecomeFollower{Leader: 1, Epoch: 5, Replicas: []int32{1, 2}, Log: LogState{End: 10, HighWatermark: 8, Epochs: []EpochStart{{4, 0}}}})
	if !rd.Fetching || rd.Fetch.Offset != 10 {
		t.Fatalf("first fetch: %+v", rd)
	}
	return r, rd.Fetch
}

var threeBatches = []Batch{{Base: 10, End: 12, Epoch: 4}, {Base: 12, End: 15, Epoch: 5}, {Base: 15, End: 16, Epoch: 5}}

func TestFollowerAppendOutcomes(t *testing.T) {
	storage := errors.New("write: no space left on device")
	for _, tc := range []struct {
		name string
		end  int64
		err  error
		// wantEnd is the log end the replica then counts on; wantFetch its
		// next fetch offset (-1: none, the replica failed); wantBackoff
		// whether that fetch waits the backoff.
		wantEnd, wantFetch int64
		wantBackoff        bool
		wantHW             int64
	}{
		{"taken", 16, nil, 16, 16, false, 16},
		{"refused as damaged", 10, fmt.Errorf("%w: crc", ErrRecordsRefused), 10, 10, true, 10},
		{"partial, then refused", 12, fmt.Errorf("%w: crc", ErrRecordsRefused), 12, 12, true, 12},
		{"storage error", 10, storage, 10, -1, false, 8},
		{"partial, then a storage error", 15, storage, 15, -1, false, 8},
		{"not on a batch boundary", 13, storage, 10, -1, false, 8},
		{"taken, the log says less", 12, nil, 10, -1, false, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, f := fetching(t)
			rd := step(t, r, FetchResult{Seq: f.Seq, HighWatermark: 20, LeaderLogEnd: 20, Batches: threeBatches})
			if len(rd.Append) != 3 || rd.AppendSeq != f.Seq || rd.Fetching || r.LogEnd() != 10 {
				t.Fatalf("handed %+v; log end %d before the outcome", rd, r.LogEnd())
			}
			rd = step(t, r, FetchAppended{Seq: f.Seq, End: tc.end, Err: tc.err})
			failed, why := r.Failed()
			switch {
			case r.LogEnd() != tc.wantEnd:
				t.Errorf("log end %d, want %d", r.LogEnd(), tc.wantEnd)
			case tc.wantFetch < 0 && (rd.Fetching || !failed || why == nil):
				t.Errorf("a failed follower: fetching %v, failed %v (%v)", rd.Fetching, failed, why)
			case tc.wantFetch >= 0 && (!rd.Fetching || rd.Fetch.Offset != tc.wantFetch || rd.Fetch.Backoff != tc.wantBackoff || failed):
				t.Errorf("next fetch %+v (fetching %v, failed %v), want offset %d backoff %v", rd.Fetch, rd.Fetching, failed, tc.wantFetch, tc.wantBackoff)
			case r.HighWatermark() != tc.wantHW:
				t.Errorf("high watermark %d, want %d", r.HighWatermark(), tc.wantHW)
			}
			if tc.wantFetch >= 0 {
				return
			}
			// A failed follower fetches again once resumed, from its log as
			// it is then; a late outcome changes nothing.
			if rd := step(t, r, FetchAppended{Seq: f.Seq, End: 16}); !rd.Empty() || r.LogEnd() != tc.wantEnd {
				t.Fatalf("a late outcome was taken: %+v", rd)
			}
			rd = step(t, r, Resume{Log: LogState{End: 12, HighWatermark: 8, Epochs: []EpochStart{{4, 0}}}})
			if failed, _ := r.Failed(); failed || !rd.Fetching || rd.Fetch.Offset != 12 || rd.Fetch.LastFetchedEpoch != 4 {
				t.Fatalf("resumed: failed %v, %+v", failed, rd)
			}
		})
	}
}

// A role change clears the failure: the new role takes the log as it is.
func TestFailedFollowerBecomesFollowerAgain(t *testing.T) {
	r, f := fetching(t)
	step(t, r, FetchResult{Seq: f.Seq, HighWatermark: 20, Batches: threeBatches})
	step(t, r, FetchAppended{Seq: f.Seq, End: 10, Err: errors.New("EIO")})
	rd := step(t, r, BecomeFollower{Leader: 3, Epoch: 6, Replicas: []int32{1, 2, 3}, Log: LogState{End: 10, HighWatermark: 8, Epochs: []EpochStart{{4, 0}}}})
	if failed, _ := r.Failed(); failed || !rd.Fetching || rd.Fetch.Leader != 3 {
		t.Fatalf("following again: failed %v, %+v", failed, rd)
	}
}

// The leader's ISR change answered with an error: back to the committed
// ISR (the controller did not apply it), pending until a LeaderAndIsr (its
// state is newer), or sent again (any other error).
func TestAlterPartitionErrors(t *testing.T) {
	for _, tc := range []struct {
		err         error
		resent      bool
		stillFenced bool // pending, and not sent again
	}{
		{ErrUnreachable, true, false},
		{kerr.NotController, true, false},
		{kerr.RequestTimedOut, true, false},
		{kerr.UnknownServerError, true, false},
		{kerr.StaleBrokerEpoch, true, false},
		{kerr.OperationNotAttempted, false, false},
		{kerr.IneligibleReplica, false, false},
		{kerr.FencedLeaderEpoch, false, true},
		{kerr.InvalidUpdateVersion, false, true},
		{kerr.UnknownTopicOrPartition, false, true},
		{kerr.InvalidRequest, false, true},
		{kerr.NewLeaderElected, false, true},
	} {
		r := leader(t, 2)
		step(t, r, FollowerFetch{Replica: 2, FetchOffset: 10, LastFetchedEpoch: 2, CurrentLeaderEpoch: 3, Now: 1050})
		rd := step(t, r, Tick{Now: 1200})
		if rd.AlterPartition == nil {
			t.Fatalf("no shrink proposed")
		}
		ap := *rd.AlterPartition
		if rd := step(t, r, AlterPartitionResult{Request: ap, Err: tc.err}); rd.AlterPartition != nil {
			t.Errorf("%v: sent again at once, without a backoff", tc.err)
		}
		rd = step(t, r, Tick{Now: 1250})
		_, pending := r.Pending()
		switch {
		case tc.resent && (rd.AlterPartition == nil || rd.AlterPartition.Seq != ap.Seq):
			t.Errorf("%v: not sent again: %+v", tc.err, rd.AlterPartition)
		case tc.stillFenced && (!pending || rd.AlterPartition != nil):
			t.Errorf("%v: pending %v, sent %+v: want it to wait for a LeaderAndIsr", tc.err, pending, rd.AlterPartition)
		case !tc.resent && !tc.stillFenced && (rd.AlterPartition == nil || rd.AlterPartition.Seq == ap.Seq):
			// Back to the committed ISR: the shrink is proposed afresh.
			t.Errorf("%v: the shrink is not proposed afresh: %+v", tc.err, rd.AlterPartition)
		}
		if tc.resent {
			// Handed out until answered; then no more.
			if rd := step(t, r, Tick{Now: 1260}); rd.AlterPartition == nil || rd.AlterPartition.Seq != ap.Seq {
				t.Errorf("%v: not handed out again before its answer", tc.err)
			}
			step(t, r, AlterPartitionResult{Request: ap, ISR: []int32{1, 2}, LeaderEpoch: 3, PartitionEpoch: 8})
			if rd := step(t, r, Tick{Now: 1270}); rd.AlterPartition != nil || len(r.ISR()) != 2 {
				t.Errorf("%v: after its answer: ISR %v, sent %+v", tc.err, r.ISR(), rd.AlterPartition)
			}
		}
	}
}
