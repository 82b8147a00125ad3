package broker

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/replication/host"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The throttle tests copy throttleBehind bytes to a follower that was
// stopped while they were written, at throttleRate.
const (
	throttleRate   = 1 << 20
	throttleBehind = 4 << 20
	// throttleStartup is the time a restarted broker takes before it
	// fetches (registration, LeaderAndIsr), given to the upper bound.
	throttleStartup = 2 * time.Second
)

// throttleCluster is two brokers with topic "moved" (one partition, both
// replicas in the ISR) and a producer of it.
type throttleCluster struct {
	*testCluster
	t                testing.TB
	ctx              context.Context
	leader, follower int32
	prod             *kgo.Client
}

func startThrottleCluster(t *testing.T) *throttleCluster {
	// The follower asks 128 KiB per partition (Kafka's default is 1 MiB):
	// the throttle lets a fetch through whole, so its size is the pace's
	// grain.
	c := startCluster(t, 2, func(cfg *config.Config) { cfg.Cluster.Fetch.MaxBytes = 128 << 10 })
	tc := &throttleCluster{testCluster: c, t: t, ctx: ctxTimeout(t, 120*time.Second)}
	c.createTopic(tc.ctx, "moved", 1, 2)
	tc.leader = topicOf(metadataOf(t, c.broker(0)), "moved").Partitions[0].Leader
	tc.follower = 1 - tc.leader
	tc.prod = clusterClient(t, c.bootstrap(), kgo.ProducerBatchMaxBytes(64<<10), kgo.ProducerBatchCompression(kgo.NoCompression()))
	tc.produce(64 << 10)
	tc.waitISR(tc.leader, tc.follower)
	return tc
}

// produce writes n bytes of values with acks=all and returns how long it
// took.
func (tc *throttleCluster) produce(n int) time.Duration {
	tc.t.Helper()
	start := time.Now()
	value := bytes.Repeat([]byte("v"), 16<<10)
	for range n / len(value) {
		tc.prod.Produce(tc.ctx, &kgo.Record{Topic: "moved", Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				tc.t.Errorf("produce: %v", err)
			}
		})
	}
	if err := tc.prod.Flush(tc.ctx); err != nil {
		tc.t.Fatal(err)
	}
	return time.Since(start)
}

func (tc *throttleCluster) waitISR(isr ...int32) {
	tc.t.Helper()
	slices.Sort(isr)
	tc.waitAgree(fmt.Sprint("ISR ", isr), func(md *kmsg.MetadataResponse) bool { return slices.Equal(isrOf(md, "moved", 0), isr) })
}

// stopFollower stops the follower, waits until it is out of the ISR, and
// writes throttleBehind bytes it misses. It returns the size of its log.
func (tc *throttleCluster) stopFollower() int64 {
	tc.t.Helper()
	size := tc.broker(tc.follower).partition("moved", 0).Log.Size()
	tc.stopBroker(tc.follower)
	tc.waitISR(tc.leader)
	tc.produce(throttleBehind)
	return size
}

// followerLog is the follower's log of "moved"'s partition, once it hosts
// it.
func (tc *throttleCluster) followerLog(back *testBroker) *host.Partition {
	tc.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if p := back.partition("moved", 0); p != nil {
			return p
		}
		if time.Now().After(deadline) {
			tc.t.Fatal("the restarted follower hosts no replica of moved-0")
		}
		time.Sleep(5 * time.Millisecond) // hosted when its LeaderAndIsr comes
	}
}

// waitSize waits until p's log holds at least size bytes and returns when
// it first did (to 5 ms).
func (tc *throttleCluster) waitSize(p *host.Partition, size int64) time.Time {
	tc.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for p.Log.Size() < size {
		if time.Now().After(deadline) {
			tc.t.Fatalf("the follower's log has %d bytes after 60 s, want %d", p.Log.Size(), size)
		}
		time.Sleep(5 * time.Millisecond) // the follower fetches on its own schedule
	}
	return time.Now()
}

// checkRate fails unless copied bytes took a time that is throttleRate
// within 20%: never faster than 1.2 times it, and not slower than 0.8
// times it but for the broker's startup.
func checkRate(t *testing.T, copied int64, took time.Duration, startup time.Duration) {
	t.Helper()
	fastest := time.Duration(float64(copied) / (1.2 * throttleRate) * float64(time.Second))
	slowest := time.Duration(float64(copied)/(0.8*throttleRate)*float64(time.Second)) + startup
	t.Logf("copied %d bytes in %v: %.0f KiB/s (throttle %d KiB/s)", copied, took, float64(copied)/took.Seconds()/1024, throttleRate>>10)
	if took < fastest || took > slowest {
		t.Fatalf("copied %d bytes in %v, want between %v and %v (%d B/s within 20%%)", copied, took, fastest, slowest, throttleRate)
	}
}

// A follower out of the ISR, throttled on its own side
// (follower.replication.throttled.rate, here the cluster-wide default it
// reads from ZooKeeper at start, and the topic's
// follower.replication.throttled.replicas naming its replica), copies at
// the rate. Back in the ISR it is not held back: acks=all produces go much
// faster than the rate, though its bytes keep the quota exceeded.
func TestClusterFollowerThrottle(t *testing.T) {
	t.Parallel()
	tc := startThrottleCluster(t)
	before := tc.stopFollower()
	adm := kadm.NewClient(clusterClient(t, tc.bootstrap()))
	mustAlter(t)(adm.AlterTopicConfigs(tc.ctx, []kadm.AlterConfig{set("follower.replication.throttled.replicas", "0:"+strconv.Itoa(int(tc.follower)))}, "moved"))
	mustAlter(t)(adm.AlterBrokerConfigs(tc.ctx, []kadm.AlterConfig{set("follower.replication.throttled.rate", strconv.Itoa(throttleRate))}))
	want := tc.broker(tc.leader).partition("moved", 0).Log.Size()

	start := time.Now()
	back := tc.start(tc.follower)
	done := tc.waitSize(tc.followerLog(back), want)
	checkRate(t, want-before, done.Sub(start), throttleStartup)

	// In sync: 8 MiB, with the 4 MiB caught up, are well above the rate
	// over the quota's 11 s, yet not held back.
	tc.waitISR(tc.leader, tc.follower)
	const inSync = 2 * throttleBehind
	took := tc.produce(inSync)
	t.Logf("acks=all produce of %d bytes with the follower in sync and throttled: %v", inSync, took)
	if limit := time.Duration(float64(inSync) / throttleRate / 2 * float64(time.Second)); took > limit {
		t.Fatalf("acks=all produce of %d bytes with the follower in sync took %v, want under %v (half the throttled time)", inSync, took, limit)
	}
	if back.quotas.repl.follower.Exceeded() == 0 {
		t.Fatal("the in-sync follower's bytes were not counted against its quota")
	}
}

// A follower out of the ISR fetching from a leader throttled on its side
// (leader.replication.throttled.rate as the cluster-wide default, set
// through the other broker: the leader learns it from ZooKeeper's change
// notification; and the topic's leader.replication.throttled.replicas
// naming the leader's replica) copies at the rate; with the rate deleted
// in the middle of a copy, the rest comes at full speed, at once.
func TestClusterLeaderThrottle(t *testing.T) {
	t.Parallel()
	tc := startThrottleCluster(t)
	adm := kadm.NewClient(clusterClient(t, []string{tc.broker(tc.follower).addr}))
	mustAlter(t)(adm.AlterTopicConfigs(tc.ctx, []kadm.AlterConfig{set("leader.replication.throttled.replicas", "0:"+strconv.Itoa(int(tc.leader)))}, "moved"))
	mustAlter(t)(adm.AlterBrokerConfigs(tc.ctx, []kadm.AlterConfig{set("leader.replication.throttled.rate", strconv.Itoa(throttleRate))}))
	leader := tc.broker(tc.leader)
	deadline := time.Now().Add(30 * time.Second)
	for leader.quotas.repl.leader.Bound() != throttleRate || !leader.partition("moved", 0).LeaderThrottled.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the leader did not take the rate and the throttled replicas set through the other broker")
		}
		time.Sleep(5 * time.Millisecond) // the change notification reaches it through ZooKeeper
	}
	adm = kadm.NewClient(clusterClient(t, []string{leader.addr}))

	before := tc.stopFollower()
	want := tc.broker(tc.leader).partition("moved", 0).Log.Size()
	start := time.Now()
	back := tc.start(tc.follower)
	p := tc.followerLog(back)
	done := tc.waitSize(p, want)
	checkRate(t, want-before, done.Sub(start), throttleStartup)

	// Behind again; the rate is deleted once a MiB more than the first
	// window's burst is copied.
	tc.waitISR(tc.leader, tc.follower)
	before = tc.stopFollower()
	want = tc.broker(tc.leader).partition("moved", 0).Log.Size()
	back = tc.start(tc.follower)
	p = tc.followerLog(back)
	mid := tc.waitSize(p, before+2*throttleRate)
	mustAlter(t)(adm.AlterBrokerConfigs(tc.ctx, []kadm.AlterConfig{del("leader.replication.throttled.rate")}))
	rest := want - p.Log.Size()
	took := tc.waitSize(p, want).Sub(mid)
	t.Logf("the last %d bytes after the rate was deleted: %v", rest, took)
	if limit := time.Duration(float64(rest) / throttleRate / 2 * float64(time.Second)); took > limit {
		t.Fatalf("the last %d bytes took %v after the rate was deleted, want under %v (half the throttled time)", rest, took, limit)
	}
}
