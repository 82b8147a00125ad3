package broker

// Configuration changes take effect on a running broker, and survive a
// restart.

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceAt produces one record per value, each its own batch, stamped ts
// (0: now), and returns the first error.
func produceAt(t testing.TB, cl *kgo.Client, topic string, ts time.Time, values ...string) error {
	t.Helper()
	ctx := ctxTimeout(t, 10*time.Second)
	for _, v := range values {
		r := &kgo.Record{Topic: topic, Value: []byte(v), Timestamp: ts}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			return err
		}
	}
	return nil
}

// consumeFrom returns the records of topic's partition 0 from offset on,
// until it has n.
func (tb *testBroker) consumeFrom(t testing.TB, topic string, offset int64, n int) []*kgo.Record {
	t.Helper()
	ctx := ctxTimeout(t, 10*time.Second)
	cl := tb.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(offset)}}))
	defer cl.Close()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consuming %s: %d of %d records: %v", topic, len(out), n, ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("consuming %s: %v", topic, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// startOffset is a partition's log start offset, through ListOffsets.
func startOffset(t testing.TB, adm *kadm.Client, topic string) int64 {
	t.Helper()
	lo, err := adm.ListStartOffsets(ctxTimeout(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := lo.Lookup(topic, 0)
	if o.Err != nil {
		t.Fatal(o.Err)
	}
	return o.Offset
}

// pollUntil checks cond until it holds or the deadline passes.
func pollUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for !cond() {
		select {
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// mustAlter fails the test if the one-resource alter it is given failed:
// mustAlter(t)(adm.AlterTopicConfigs(...)).
func mustAlter(t testing.TB) func(kadm.AlterConfigsResponses, error) {
	return func(rs kadm.AlterConfigsResponses, err error) {
		t.Helper()
		if err := alterResult(rs, err); err != nil {
			t.Fatal(err)
		}
	}
}

func TestConfigChangesApplyLive(t *testing.T) {
	tb := startBroker(t, t.TempDir(), func(c *config.Config) { c.LogRetentionCheck = 10 * time.Millisecond })
	adm := tb.admin(t)
	// Uncompressed: batch sizes are what max.message.bytes sees.
	cl := tb.client(t, kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx := ctxTimeout(t, 60*time.Second)
	old := time.Now().Add(-2 * time.Hour)

	t.Run("retention.ms lowered deletes at the next retention pass", func(t *testing.T) {
		tb.createTopic(t, "live-ret", 1)
		if err := produceAt(t, cl, "live-ret", old, "a", "b", "c"); err != nil {
			t.Fatal(err)
		}
		tb.store.ApplyRetention()
		if s := startOffset(t, adm, "live-ret"); s != 0 {
			t.Fatalf("two-hour-old records deleted under the default retention: start %d", s)
		}
		mustAlter(t)(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("retention.ms", retention1h)}, "live-ret"))
		pollUntil(t, "retention to delete the old records", func() bool { return startOffset(t, adm, "live-ret") == 3 })
	})

	t.Run("segment.bytes lowered rolls at the next append", func(t *testing.T) {
		tb.createTopic(t, "live-seg", 1)
		if err := produceAt(t, cl, "live-seg", time.Time{}, "first"); err != nil {
			t.Fatal(err)
		}
		l := tb.partition("live-seg", 0).Log
		if n := len(l.SegmentBases()); n != 1 {
			t.Fatalf("%d segments before", n)
		}
		mustAlter(t)(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("segment.bytes", "100")}, "live-seg"))
		if err := produceAt(t, cl, "live-seg", time.Time{}, "x", "y", "z"); err != nil {
			t.Fatal(err)
		}
		if bases := l.SegmentBases(); len(bases) != 4 {
			t.Fatalf("segments %v after three appends over segment.bytes=100, want one each", bases)
		}
		if got := tb.consumeValues(t, "live-seg", 0, 4); strings.Join(got, "") != "firstxyz" {
			t.Fatalf("consumed %q", got)
		}
	})

	t.Run("message.timestamp.type=LogAppendTime stamps broker time", func(t *testing.T) {
		tb.createTopic(t, "live-lat", 1)
		if err := produceAt(t, cl, "live-lat", old, "create"); err != nil {
			t.Fatal(err)
		}
		mustAlter(t)(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("message.timestamp.type", "LogAppendTime")}, "live-lat"))
		before := time.Now().Add(-time.Second)
		if err := produceAt(t, cl, "live-lat", old, "append"); err != nil {
			t.Fatal(err)
		}
		rs := tb.consumeFrom(t, "live-lat", 0, 2)
		if !rs[0].Timestamp.Equal(old.Truncate(time.Millisecond)) || rs[0].Attrs.TimestampType() != 0 {
			t.Errorf("record before the change: %v type %d", rs[0].Timestamp, rs[0].Attrs.TimestampType())
		}
		if rs[1].Timestamp.Before(before) || rs[1].Attrs.TimestampType() != 1 {
			t.Errorf("record after the change: %v type %d, want broker time", rs[1].Timestamp, rs[1].Attrs.TimestampType())
		}
	})

	t.Run("max.message.bytes lowered refuses larger batches", func(t *testing.T) {
		tb.createTopic(t, "live-max", 1)
		big := strings.Repeat("v", 4096)
		if err := produceAt(t, cl, "live-max", time.Time{}, big); err != nil {
			t.Fatal(err)
		}
		mustAlter(t)(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("max.message.bytes", "1024")}, "live-max"))
		if err := produceAt(t, cl, "live-max", time.Time{}, big); !errors.Is(err, kerr.MessageTooLarge) {
			t.Fatalf("4 KiB over max.message.bytes=1024: %v", err)
		}
		if err := produceAt(t, cl, "live-max", time.Time{}, "small"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("flush.messages=1 binds the high watermark to the disk", func(t *testing.T) {
		tb.createTopic(t, "live-flush", 1)
		if err := produceAt(t, cl, "live-flush", time.Time{}, "a"); err != nil {
			t.Fatal(err)
		}
		p := tb.partition("live-flush", 0)
		if p.DurableHW.Load() {
			t.Fatal("durable high watermark without flush.messages")
		}
		mustAlter(t)(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("flush.messages", "1")}, "live-flush"))
		if !p.DurableHW.Load() || p.Log.RecoveryPoint() != 1 {
			t.Fatalf("after flush.messages=1: durable %v, recovery point %d (the record before must be flushed)", p.DurableHW.Load(), p.Log.RecoveryPoint())
		}
		if err := produceAt(t, cl, "live-flush", time.Time{}, "b"); err != nil {
			t.Fatal(err)
		}
		if rp := p.Log.RecoveryPoint(); rp != 2 {
			t.Fatalf("acknowledged with the recovery point at %d", rp)
		}
		mustAlter(t)(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{del("flush.messages")}, "live-flush"))
		if p.DurableHW.Load() {
			t.Fatal("durable high watermark after flush.messages was removed")
		}
	})

	t.Run("min.insync.replicas above 1 refuses acks=all", func(t *testing.T) {
		tb.createTopic(t, "live-isr", 1)
		mustAlter(t)(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("min.insync.replicas", "2")}, "live-isr"))
		rc := dialRaw(t, tb.addr)
		resp := rc.roundTrip(produceReq("live-isr", 0, -1, batch("all")), 9).(*kmsg.ProduceResponse)
		wantCode(t, "acks=all", resp.Topics[0].Partitions[0].ErrorCode, kerr.NotEnoughReplicas)
		resp = rc.roundTrip(produceReq("live-isr", 0, 1, batch("leader")), 9).(*kmsg.ProduceResponse)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Errorf("acks=1: %v", kerr.ErrorForCode(code))
		}
		mustAlter(t)(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{del("min.insync.replicas")}, "live-isr"))
		resp = rc.roundTrip(produceReq("live-isr", 0, -1, batch("all")), 9).(*kmsg.ProduceResponse)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Errorf("acks=all after the delete: %v", kerr.ErrorForCode(code))
		}
	})

	t.Run("dynamic broker defaults apply to topics without an override", func(t *testing.T) {
		tb.createTopic(t, "live-bd-a", 1)
		if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"message.timestamp.type": kadm.StringPtr("CreateTime"), "max.message.bytes": kadm.StringPtr("8192")}, "live-bd-b"); err != nil {
			t.Fatal(err)
		}
		a, b := tb.partition("live-bd-a", 0).Log, tb.partition("live-bd-b", 0).Log
		mustAlter(t)(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("log.message.timestamp.type", "LogAppendTime"), set("message.max.bytes", "1024")}))
		if !a.Options().LogAppendTime || b.Options().LogAppendTime {
			t.Fatalf("cluster default LogAppendTime: topic without override %v, with CreateTime override %v", a.Options().LogAppendTime, b.Options().LogAppendTime)
		}
		big := strings.Repeat("v", 4096)
		if err := produceAt(t, cl, "live-bd-a", time.Time{}, big); !errors.Is(err, kerr.MessageTooLarge) {
			t.Errorf("message.max.bytes=1024 on the topic without override: %v", err)
		}
		if err := produceAt(t, cl, "live-bd-b", time.Time{}, big); err != nil {
			t.Errorf("topic with max.message.bytes=8192: %v", err)
		}
		before := time.Now().Add(-time.Second)
		if err := produceAt(t, cl, "live-bd-a", old, "a"); err != nil {
			t.Fatal(err)
		}
		if err := produceAt(t, cl, "live-bd-b", old, "b"); err != nil {
			t.Fatal(err)
		}
		if r := tb.consumeFrom(t, "live-bd-a", 0, 1)[0]; r.Timestamp.Before(before) {
			t.Errorf("topic without override kept the producer's timestamp %v", r.Timestamp)
		}
		if r := tb.consumeFrom(t, "live-bd-b", 1, 1)[0]; !r.Timestamp.Equal(old.Truncate(time.Millisecond)) {
			t.Errorf("topic with a CreateTime override got %v", r.Timestamp)
		}
		wantConfig(t, "topic without override", describedTopic(t, adm, "live-bd-a")["message.timestamp.type"], "LogAppendTime", srcCluster)
		wantConfig(t, "topic with override", describedTopic(t, adm, "live-bd-b")["message.timestamp.type"], "CreateTime", srcTopic)

		// This broker's own layer beats the cluster default; removing it
		// falls back.
		mustAlter(t)(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("log.message.timestamp.type", "CreateTime")}, 0))
		if a.Options().LogAppendTime {
			t.Fatal("broker 0's CreateTime did not beat the cluster default")
		}
		wantConfig(t, "per-broker", describedTopic(t, adm, "live-bd-a")["message.timestamp.type"], "CreateTime", srcBroker)
		mustAlter(t)(adm.AlterBrokerConfigsState(ctx, nil, 0))
		if !a.Options().LogAppendTime {
			t.Fatal("after broker 0's layer was emptied the cluster default does not apply")
		}
		mustAlter(t)(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{del("log.message.timestamp.type"), del("message.max.bytes")}))
		if a.Options().LogAppendTime || a.Options().MaxBatchBytes != 1048588 {
			t.Fatalf("after the defaults were deleted: %+v", a.Options())
		}
	})

	t.Run("dynamic broker retention reaches the retention pass", func(t *testing.T) {
		tb.createTopic(t, "live-bd-ret", 1)
		if err := produceAt(t, cl, "live-bd-ret", old, "a", "b"); err != nil {
			t.Fatal(err)
		}
		mustAlter(t)(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("log.retention.ms", retention1h)}, 0))
		pollUntil(t, "retention to delete under log.retention.ms", func() bool { return startOffset(t, adm, "live-bd-ret") == 2 })
		mustAlter(t)(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{del("log.retention.ms")}, 0))
	})
}

func TestConfigsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	tb := startBroker(t, dir, nil)
	adm := tb.admin(t)
	ctx := ctxTimeout(t, 30*time.Second)
	tb.createTopic(t, "kept", 1)
	tb.createTopic(t, "plain", 1)
	mustAlter(t)(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("segment.bytes", "1048576"), set("flush.messages", "1")}, "kept"))
	mustAlter(t)(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("log.retention.ms", "7200000"), set("log.segment.bytes", "2097152")}))
	mustAlter(t)(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("log.segment.bytes", "3145728"), set("producer.id.expiration.ms", "60000")}, 0))

	for round := range 2 {
		tb.stop(t)
		tb = startBroker(t, dir, nil)
		adm = tb.admin(t)
		what := fmt.Sprintf("round %d", round)
		kept, plain := describedTopic(t, adm, "kept"), describedTopic(t, adm, "plain")
		wantConfig(t, what, kept["segment.bytes"], "1048576", srcTopic)
		wantConfig(t, what, kept["retention.ms"], "7200000", srcCluster)
		wantConfig(t, what, plain["segment.bytes"], "3145728", srcBroker)
		k, p := tb.partition("kept", 0), tb.partition("plain", 0)
		ko, po := k.Log.Options(), p.Log.Options()
		if ko.SegmentBytes != 1<<20 || ko.FlushMessages != 1 || !k.DurableHW.Load() || ko.Retention != 2*time.Hour {
			t.Errorf("%s: kept's options %+v durable %v", what, ko, k.DurableHW.Load())
		}
		if po.SegmentBytes != 3<<20 || po.Retention != 2*time.Hour || po.ProducerIDExpiration != time.Minute || p.DurableHW.Load() {
			t.Errorf("%s: plain's options %+v", what, po)
		}
		if c := describedBroker(t, tb, "")["log.segment.bytes"]; c.Value == nil || *c.Value != "2097152" {
			t.Errorf("%s: cluster default log.segment.bytes %+v", what, c)
		}
	}
}

// Partitions added later take the topic's configuration; a topic deleted
// and created again under its name starts from the defaults.
func TestConfigsAndTopicAdmin(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	adm := tb.admin(t)
	ctx := ctxTimeout(t, 30*time.Second)
	tb.createTopic(t, "grown", 1)
	mustAlter(t)(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("segment.bytes", "1048576"), set("flush.messages", "1"), set("min.insync.replicas", "2")}, "grown"))
	if _, err := adm.CreatePartitions(ctx, 2, "grown"); err != nil {
		t.Fatal(err)
	}
	for i := range int32(3) {
		p := tb.partition("grown", i)
		if p == nil || p.Log.Options().SegmentBytes != 1<<20 || !p.DurableHW.Load() || p.MinInsync() != 2 {
			t.Fatalf("partition %d after growth: %+v", i, p)
		}
	}
	mustAlter(t)(adm.AlterTopicConfigsState(ctx, nil, "grown"))
	for i := range int32(3) {
		if p := tb.partition("grown", i); p.Log.Options().SegmentBytes != 1<<30 || p.DurableHW.Load() || p.MinInsync() != 1 {
			t.Fatalf("partition %d after its overrides were removed: %+v", i, p.Log.Options())
		}
	}
	wantConfig(t, "grown", describedTopic(t, adm, "grown")["segment.bytes"], "1073741824", srcDefault)

	mustAlter(t)(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("retention.ms", "1000")}, "grown"))
	if _, err := adm.DeleteTopic(ctx, "grown"); err != nil {
		t.Fatal(err)
	}
	if err := alterResult(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("retention.ms", "1000")}, "grown")); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("alter a deleted topic: %v", err)
	}
	tb.createTopic(t, "grown", 1)
	wantConfig(t, "created again", describedTopic(t, adm, "grown")["retention.ms"], "604800000", srcDefault)
}

// Alters race with produces and fetches (run with -race): every record
// produced is consumed, in order.
func TestConfigChangesRaceWithTraffic(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	adm := tb.admin(t)
	ctx := ctxTimeout(t, 60*time.Second)
	tb.createTopic(t, "busy", 1)
	const n = 300
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		cl := tb.client(t)
		for i := range n {
			if err := produceAt(t, cl, "busy", time.Time{}, fmt.Sprintf("v%d", i)); err != nil {
				t.Errorf("produce %d: %v", i, err)
				return
			}
		}
	}()
	topicVariants := [][]kadm.AlterConfig{
		{set("flush.messages", "1"), set("segment.bytes", "1024")},
		{del("flush.messages"), set("message.timestamp.type", "LogAppendTime"), set("index.interval.bytes", "0")},
		{del("segment.bytes"), set("flush.ms", "1"), set("segment.index.bytes", "100")},
		{del("flush.ms"), del("message.timestamp.type"), del("index.interval.bytes"), del("segment.index.bytes")},
	}
	brokerVariants := [][]kadm.AlterConfig{
		{set("log.flush.interval.messages", "2"), set("log.roll.ms", "1")},
		{del("log.flush.interval.messages"), del("log.roll.ms")},
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for i := 0; ; i++ {
		select {
		case <-done:
		default:
			mustAlter(t)(adm.AlterTopicConfigs(ctx, topicVariants[i%len(topicVariants)], "busy"))
			mustAlter(t)(adm.AlterBrokerConfigs(ctx, brokerVariants[i%len(brokerVariants)]))
			describedTopic(t, adm, "busy")
			continue
		}
		break
	}
	got := tb.consumeValues(t, "busy", 0, n)
	for i, v := range got {
		if v != fmt.Sprintf("v%d", i) {
			t.Fatalf("record %d is %q", i, v)
		}
	}
}
