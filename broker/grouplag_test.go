package broker

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A group that committed half of what a partition holds lags by the other
// half; the sample is the coordinator's own (a partition it leads).
func TestGroupLagSingleNode(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	const n = 100
	produceLagged(t, ctx, cl, n)
	var offsets kadm.Offsets
	offsets.Add(kadm.Offset{Topic: "lagged", Partition: 0, At: n / 2, LeaderEpoch: -1})
	if resp, err := adm.CommitOffsets(ctx, "half", offsets); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	lags := tb.GroupLag(ctx)
	if len(lags) != 1 {
		t.Fatalf("lags %+v, want one", lags)
	}
	if l := lags[0]; l.Group != "half" || l.Topic != "lagged" || l.Partition != 0 || l.Committed != n/2 || l.End != n || l.Lag != n/2 {
		t.Fatalf("lag %+v, want group half at %d of %d: lag %d", l, n/2, n, n/2)
	}
}

// produceLagged creates topic "lagged" (one partition) on a single node
// and produces n numbered records to it through cl.
func produceLagged(t *testing.T, ctx context.Context, cl *kgo.Client, n int) {
	t.Helper()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "lagged"); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Topic: "lagged", Value: []byte(strconv.Itoa(i))}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// In a cluster the coordinator asks the other partitions' leaders: a
// topic led by both brokers, half of each partition committed, lags by
// the other half on both.
func TestGroupLagCluster(t *testing.T) {
	c := startCluster(t, 2, nil)
	ctx := ctxTimeout(t, 60*time.Second)
	cl := clusterClient(t, c.bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createAssigned(t, ctx, cl, "lagged", []int32{0}, []int32{1})
	c.waitAgree("lagged led by 0 and 1", replicasAre("lagged", []int32{0}, []int32{1}))
	const n = 40
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Topic: "lagged", Partition: int32(i % 2), Value: []byte(strconv.Itoa(i))}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	var offsets kadm.Offsets
	offsets.Add(kadm.Offset{Topic: "lagged", Partition: 0, At: n / 4, LeaderEpoch: -1})
	offsets.Add(kadm.Offset{Topic: "lagged", Partition: 1, At: n / 4, LeaderEpoch: -1})
	if resp, err := adm.CommitOffsets(ctx, "half", offsets); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	found := 0
	for _, tb := range c.live() {
		lags := tb.GroupLag(ctx)
		if len(lags) == 0 {
			continue // not the group's coordinator
		}
		found++
		if len(lags) != 2 {
			t.Fatalf("broker %d: lags %+v, want two partitions", tb.cfg.ID, lags)
		}
		for _, l := range lags {
			if l.Committed != n/4 || l.End != n/2 || l.Lag != n/4 {
				t.Errorf("broker %d: lag %+v, want %d of %d: lag %d", tb.cfg.ID, l, n/4, n/2, n/4)
			}
		}
	}
	if found != 1 {
		t.Fatalf("%d brokers coordinate the group, want 1", found)
	}
}
