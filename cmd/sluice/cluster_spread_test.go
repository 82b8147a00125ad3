package main

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Three broker processes: a topic of 12 partitions RF 1 and one of 12 RF 3
// are spread evenly (each broker leads 4 of each, no broker holds two
// replicas of a partition), a franz-go client seeded with one broker
// produces 100,000 keyed records acks=1 and one seeded with another reads
// them all back, and kcat sees the same cluster.
func TestClusterSpreadProcesses(t *testing.T) {
	c := startCluster(t, 3)
	var mds map[int32]*kmsg.MetadataResponse
	for _, tc := range []struct {
		topic string
		rf    int16
	}{{"rf1", 1}, {"rf3", 3}} {
		mds = createTopic(t, c, tc.topic, 12, tc.rf)
	}
	for id, md := range mds {
		for _, topic := range []string{"rf1", "rf3"} {
			for _, b := range c.ids() {
				if got := len(partitionsLedBy(md, topic, b)); got != 4 {
					t.Errorf("broker %d's metadata: broker %d leads %d partitions of %s, want 4", id, b, got, topic)
				}
			}
		}
		for _, tp := range md.Topics {
			for _, p := range tp.Partitions {
				r := slices.Clone(p.Replicas)
				slices.Sort(r)
				if len(slices.Compact(r)) != len(p.Replicas) {
					t.Errorf("%s-%d: replicas %v name a broker twice", *tp.Topic, p.Partition, p.Replicas)
				}
			}
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	ids := c.ids()
	prodCl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs(ids[0])...), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer prodCl.Close()
	const n = 100_000
	for _, topic := range []string{"rf1", "rf3"} {
		for i := range n {
			prodCl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte("k" + strconv.Itoa(i%997)), Value: []byte(strconv.Itoa(i))}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
				}
			})
		}
	}
	if err := prodCl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	consCl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs(ids[2])...), kgo.ConsumeTopics("rf1", "rf3"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consCl.Close()
	got := map[string]int{}
	keyPart := map[string]int32{}
	for got["rf1"]+got["rf3"] < 2*n {
		fs := consCl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %v of %d per topic", got, n)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Topic]++
			k := r.Topic + "/" + string(r.Key)
			if p, ok := keyPart[k]; ok && p != r.Partition {
				t.Fatalf("%s: key %s in partitions %d and %d", r.Topic, r.Key, p, r.Partition)
			}
			keyPart[k] = r.Partition
		})
	}
	if got["rf1"] != n || got["rf3"] != n {
		t.Fatalf("read %v, want %d per topic", got, n)
	}

	if !haveKcat(t) {
		return
	}
	out := kcat(t, "-b", c.addrs(ids[1])[0], "-L")
	for _, want := range []string{" 3 brokers:", `topic "rf1" with 12 partitions:`, `topic "rf3" with 12 partitions:`} {
		if !strings.Contains(out, want) {
			t.Errorf("kcat -L lacks %q:\n%s", want, out)
		}
	}
}
