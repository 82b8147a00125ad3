package host

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
	"github.com/sluice-io/sluice/replication"
	"github.com/sluice-io/sluice/wire/interbroker"
)

// fakeLeader answers a follower's fetches with one batch at the offset
// asked, at the epoch the follower follows, and its ListOffsets with 0.
type fakeLeader struct{}

func (fakeLeader) Send(_ context.Context, _ int32, req kmsg.Request) (kmsg.Response, error) {
	switch r := req.(type) {
	case *kmsg.FetchRequest:
		resp := kmsg.NewPtrFetchResponse()
		for _, rt := range r.Topics {
			t := kmsg.NewFetchResponseTopic()
			t.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				p := kmsg.NewFetchResponseTopicPartition()
				p.Partition, p.HighWatermark = rp.Partition, rp.FetchOffset
				p.RecordBatches = replicatedBatch(rp.FetchOffset, rp.CurrentLeaderEpoch, "f")
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp, nil
	case *kmsg.ListOffsetsRequest:
		resp := kmsg.NewPtrListOffsetsResponse()
		for _, rt := range r.Topics {
			t := kmsg.NewListOffsetsResponseTopic()
			t.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				p := kmsg.NewListOffsetsResponseTopicPartition()
				p.Partition = rp.Partition
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp, nil
	}
	return nil, fmt.Errorf("fakeLeader: %T", req)
}

func (fakeLeader) Close() {}

// acceptingController grants every ISR change.
type acceptingController struct{}

func (acceptingController) BrokerEpoch() int64 { return 1 }

func (acceptingController) AlterPartition(_ context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	resp := kmsg.NewPtrAlterPartitionResponse()
	for _, rt := range req.Topics {
		t := kmsg.NewAlterPartitionResponseTopic()
		for _, rp := range rt.Partitions {
			p := kmsg.NewAlterPartitionResponseTopicPartition()
			p.Partition, p.LeaderEpoch, p.PartitionEpoch = rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch+1
			for _, m := range rp.NewEpochISR {
				p.ISR = append(p.ISR, m.BrokerID)
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp, nil
}

// The package's lock order (doc.go) on the real locks: every entry point
// of a partition runs at once with the others, over a cluster's manager
// (a fetcher following a fake leader, a controller granting ISR changes),
// while the role changes back and forth. A cycle in the order stops
// goroutines for good; the test then fails with every goroutine's stack,
// which shows it. Run it with -race for the fields the locks guard.
func TestLockOrderConcurrentPaths(t *testing.T) {
	l, err := engine.OpenLog(t.TempDir(), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	closing := make(chan struct{})
	m := New(Options{Self: 0, LagTimeMax: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler), Closing: closing,
		Dial:       func(interbroker.Options) interbroker.Sender { return fakeLeader{} },
		Controller: acceptingController{},
	})
	p := m.NewPartition("t", 0, l, 1, nil)
	m.SetTopic(&Topic{Name: "t", ID: engine.TopicID{1}, Partitions: []*Partition{p}})
	defer func() { close(closing); l.Close() }()

	const rounds = 300
	var (
		wg   sync.WaitGroup
		done atomic.Bool
	)
	run := func(f func(i int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !done.Load(); i++ {
				f(i)
			}
		}()
	}
	run(func(int) { // a client's produce, acks=all
		if res, err := p.AppendAsLeader(batch("p"), AppendHow{AcksAll: true}); err == nil {
			_ = p.AwaitReplicated(res.LastOffset+1, time.Millisecond, closing)
		}
	})
	run(func(i int) { // a coordinator's records, and DeleteRecords
		_, _ = p.AppendAsLeader(batch("c"), AppendHow{Coordinator: true})
		if i%50 == 0 {
			_, _ = p.DeleteRecordsAsLeader(p.HighWatermark())
		}
	})
	run(func(int) { // the follower's fetch of this leader
		_, _ = p.FollowerFetch(replication.FollowerFetch{Replica: 1, FetchOffset: p.HighWatermark(), LastFetchedEpoch: -1, CurrentLeaderEpoch: -1})
	})
	run(func(i int) { // a consumer's fetch, the clock, configuration, metrics
		ch := make(chan struct{}, 1)
		p.Wait(ch)
		_ = p.LastStableOffset(p.HighWatermark())
		_, _ = p.Health()
		_, _ = p.PendingFetch()
		_ = p.Failed()
		_ = p.OffsetsAvailable()
		p.Tick()
		p.SetLiveBrokers([]int32{0, 1})
		p.SetMinInsync(int32(1 + i%2))
		_ = p.CheckAcksAll()
	})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		epoch := int32(0)
		for i := range rounds {
			epoch++
			if err := p.BecomeLeader(Leadership{Epoch: epoch, PartitionEpoch: epoch, ISR: []int32{0, 1}, Replicas: []int32{0, 1}, Live: []int32{0, 1}}); err != nil {
				t.Errorf("become leader at %d: %v", epoch, err)
			}
			epoch++
			p.BecomeFollower(1, epoch, epoch, []int32{0, 1})
			if i%10 == 0 {
				p.Stop()
			}
		}
		done.Store(true)
		wg.Wait()
	}()
	const deadline = 2 * time.Minute
	select {
	case <-finished:
	case <-time.After(deadline):
		buf := make([]byte, 4<<20)
		panic(fmt.Sprintf("the partition's paths did not finish in %v (a lock cycle?):\n%s", deadline, buf[:runtime.Stack(buf, true)]))
	}
	if end := l.EndOffset(); end == 0 {
		t.Errorf("nothing appended in %d role changes", rounds)
	}
}
