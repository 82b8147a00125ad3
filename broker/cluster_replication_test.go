package broker

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// logBytes reads a partition's whole log on one broker.
func logBytes(t testing.TB, tb *testBroker, topic string, partition int32) []byte {
	t.Helper()
	p := tb.partition(topic, partition)
	if p == nil {
		return nil
	}
	var out []byte
	for off := p.log.StartOffset(); off < p.log.EndOffset(); {
		v, err := p.log.Read(off, 1<<20, p.log.EndOffset())
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
// the leader's log, byte for byte (offsets, epochs and all).
func TestClusterFollowersCopyTheLeader(t *testing.T) {
	c := startCluster(t, 3, nil)
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
