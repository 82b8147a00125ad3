package broker

import (
	"bytes"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/engine"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// logBytes reads a partition's whole log on one broker.
func logBytes(t testing.TB, tb *testBroker, topic string, partition int32) []byte {
	t.Helper()
	p := tb.partition(topic, partition)
	if p == nil {
		return nil
	}
	var out []byte
	for off := p.Log.StartOffset(); off < p.Log.EndOffset(); {
		v, err := p.Log.Read(off, 1<<20, p.Log.EndOffset())
		if err != nil {
			t.Fatal(err)
		}
		if v.Len() == 0 {
			v.Release()
			break
		}
		b, err := v.AppendTo(nil)
		v.Release()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
		for _, h := range batchesIn(t, b) {
			off = h.LastOffset() + 1
		}
	}
	return out
}

// Followers copy their leaders: every replica of an RF 3 topic ends with
// the leader's log, byte for byte (offsets, epochs and all); with Kafka's
// fetcher settings and with several fetchers per leader asking for less
// than a batch (each fetch still brings one whole batch, KIP-74).
func TestClusterFollowersCopyTheLeader(t *testing.T) {
	t.Run("defaults", func(t *testing.T) { testFollowersCopy(t, config.FetcherConfig{}) })
	t.Run("3 fetchers, 100 bytes", func(t *testing.T) {
		testFollowersCopy(t, config.FetcherConfig{Fetchers: 3, MaxBytes: 100, ResponseMaxBytes: 150, WaitMax: 50 * time.Millisecond})
	})
}

func testFollowersCopy(t *testing.T, fc config.FetcherConfig) {
	c := startCluster(t, 3, func(cfg *config.Config) { cfg.Cluster.Fetch = fc })
	ctx := ctxTimeout(t, 60*time.Second)
	c.createTopic(ctx, "copied", 3, 3)
	prod := clusterClient(t, c.bootstrap())
	for i := range 300 {
		prod.Produce(ctx, &kgo.Record{Topic: "copied", Key: []byte(strconv.Itoa(i % 7)), Value: []byte(strconv.Itoa(i))}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	md := metadataOf(t, c.broker(0))
	deadline := time.Now().Add(30 * time.Second)
	for _, p := range topicOf(md, "copied").Partitions {
		want := logBytes(t, c.broker(p.Leader), "copied", p.Partition)
		if len(want) == 0 {
			t.Fatalf("copied-%d: the leader's log is empty", p.Partition)
		}
		for _, r := range p.Replicas {
			for {
				got := logBytes(t, c.broker(r), "copied", p.Partition)
				if bytes.Equal(got, want) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("copied-%d: broker %d's log has %d bytes, the leader %d's %d: not the same", p.Partition, r, len(got), p.Leader, len(want))
				}
				time.Sleep(50 * time.Millisecond) // the followers fetch on their own schedule
			}
		}
	}
}

// isrOf is a partition's ISR in a Metadata response, sorted.
func isrOf(md *kmsg.MetadataResponse, topic string, partition int32) []int32 {
	tp := topicOf(md, topic)
	if tp == nil {
		return nil
	}
	for _, p := range tp.Partitions {
		if p.Partition == partition {
			isr := slices.Clone(p.ISR)
			slices.Sort(isr)
			return isr
		}
	}
	return nil
}

// Followers that caught up join the ISR (the leader's AlterPartition to
// the controller, which every broker's metadata then shows); one that
// stops leaves it after replica.lag.time.max.ms, and acks=all produces go
// on with the rest; back, it catches up and joins again.
func TestClusterISRFollowsTheFollowers(t *testing.T) {
	c := startCluster(t, 3, func(cfg *config.Config) { cfg.Cluster.ReplicaLagTimeMax = 2 * time.Second })
	ctx := ctxTimeout(t, 90*time.Second)
	c.createTopic(ctx, "isr", 1, 3)
	prod := clusterClient(t, c.bootstrap(), kgo.RequiredAcks(kgo.AllISRAcks()))
	produce := func(v string) {
		t.Helper()
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "isr", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce("first")
	all := []int32{0, 1, 2}
	c.waitAgree("every replica in the ISR", func(md *kmsg.MetadataResponse) bool { return slices.Equal(isrOf(md, "isr", 0), all) })
	leader := topicOf(metadataOf(t, c.broker(0)), "isr").Partitions[0].Leader
	victim := (leader + 1) % 3
	c.stopBroker(victim)
	var rest []int32
	for _, id := range all {
		if id != victim {
			rest = append(rest, id)
		}
	}
	c.waitAgree("the stopped follower out of the ISR", func(md *kmsg.MetadataResponse) bool { return slices.Equal(isrOf(md, "isr", 0), rest) })
	produce("while one is down")
	c.start(victim)
	c.waitAgree("the follower back in the ISR", func(md *kmsg.MetadataResponse) bool {
		return len(md.Brokers) == 3 && slices.Equal(isrOf(md, "isr", 0), all)
	})
	want := logBytes(t, c.broker(leader), "isr", 0)
	deadline := time.Now().Add(30 * time.Second)
	for !bytes.Equal(logBytes(t, c.broker(victim), "isr", 0), want) {
		if time.Now().After(deadline) {
			t.Fatal("the returned follower's log is not the leader's")
		}
		time.Sleep(50 * time.Millisecond) // it fetches on its own schedule
	}
}

// A follower that was down while the leader's log start moved past its
// log end (DeleteRecords here; retention alike) fetches out of range when
// it returns: it asks the leader's log start and end, drops its log,
// starts it at the leader's start and copies the rest, and rejoins the
// ISR.
func TestClusterFollowerBehindTheLeadersLogStart(t *testing.T) {
	c := startCluster(t, 3, func(cfg *config.Config) { cfg.Cluster.Fetch.Backoff = 50 * time.Millisecond })
	ctx := ctxTimeout(t, 90*time.Second)
	c.createTopic(ctx, "behind", 1, 3)
	prod := clusterClient(t, c.bootstrap(), kgo.RequiredAcks(kgo.AllISRAcks()))
	produce := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "behind", Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(1)
	all := []int32{0, 1, 2}
	c.waitAgree("every replica in the ISR", func(md *kmsg.MetadataResponse) bool { return slices.Equal(isrOf(md, "behind", 0), all) })
	leader := topicOf(metadataOf(t, c.broker(0)), "behind").Partitions[0].Leader
	victim := (leader + 1) % 3
	c.stopBroker(victim)
	c.waitAgree("the stopped follower out of the ISR", func(md *kmsg.MetadataResponse) bool { return len(isrOf(md, "behind", 0)) == 2 })
	produce(9)
	del, err := c.broker(leader).admin(t).DeleteRecords(ctx, kadm.Offsets{"behind": {0: kadm.Offset{Topic: "behind", Partition: 0, At: 8}}})
	if err != nil || del.Error() != nil {
		t.Fatalf("DeleteRecords: %v %v", err, del.Error())
	}
	produce(2)
	back := c.start(victim)
	c.waitAgree("the follower back in the ISR", func(md *kmsg.MetadataResponse) bool {
		return len(md.Brokers) == 3 && slices.Equal(isrOf(md, "behind", 0), all)
	})
	p := back.partition("behind", 0)
	if p == nil || p.Log.StartOffset() != 8 || p.Log.EndOffset() != 12 {
		if p != nil {
			t.Fatalf("the returned follower's log: [%d, %d), want [8, 12) as the leader's", p.Log.StartOffset(), p.Log.EndOffset())
		}
		t.Fatal("the returned follower hosts no replica")
	}
	if !bytes.Equal(logBytes(t, back, "behind", 0), logBytes(t, c.broker(leader), "behind", 0)) {
		t.Fatal("the returned follower's log is not the leader's")
	}
}

// A follower whose leader answers its partition with an error waits before
// asking again, as Kafka's fetcher delays a partition in error, instead of
// asking in a loop: the wait doubles with every error in a row up to
// replica.fetch.backoff.ms, so here a follower whose leader dropped the
// partition takes at least two backoffs for six more fetches (without the
// backoff, microseconds).
func TestClusterFetchErrorsBackOff(t *testing.T) {
	const backoff = 200 * time.Millisecond
	c := startCluster(t, 2, func(cfg *config.Config) { cfg.Cluster.Fetch.Backoff = backoff })
	ctx := ctxTimeout(t, 60*time.Second)
	c.createTopic(ctx, "gone", 1, 2)
	c.waitAgree("both replicas in sync", func(md *kmsg.MetadataResponse) bool { return len(isrOf(md, "gone", 0)) == 2 })
	leader := topicOf(metadataOf(t, c.broker(0)), "gone").Partitions[0].Leader
	p := c.broker(1-leader).partition("gone", 0)
	// The leader drops its replica as StopReplica with deletion would,
	// while the follower still follows it.
	if err := c.broker(leader).replicas.Unhost(engine.Partition{Topic: "gone", Partition: 0}, 1<<30, true); err != nil {
		t.Fatal(err)
	}
	seq := func() uint64 {
		s, _ := p.PendingFetch()
		return s
	}
	first := seq() + 1 // the first fetch answered with the error
	for seq() < first {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	for deadline := start.Add(30 * time.Second); seq() < first+6; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the follower stopped fetching")
		}
	}
	if took := time.Since(start); took < 2*backoff {
		t.Fatalf("six fetches refused by the leader in %v, want at least %v (25, 50, 100, then %v each)", took, 2*backoff, backoff)
	}
}
