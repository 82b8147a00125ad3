package broker

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type topicShape struct {
	id         [16]byte
	partitions int
}

// topicShapes lists every topic through a Metadata request.
func topicShapes(t *testing.T, tb *testBroker) map[string]topicShape {
	t.Helper()
	rc := dialRaw(t, tb.addr)
	resp := rc.roundTrip(kmsg.NewPtrMetadataRequest(), 12).(*kmsg.MetadataResponse)
	out := map[string]topicShape{}
	for _, mt := range resp.Topics {
		if mt.ErrorCode != 0 {
			t.Fatalf("metadata of %s: %v", *mt.Topic, kerr.ErrorForCode(mt.ErrorCode))
		}
		out[*mt.Topic] = topicShape{mt.TopicID, len(mt.Partitions)}
	}
	return out
}

// TestRestartKeepsData: topics (IDs, partition counts, configs) and
// records survive a restart on the same data directory, and produces
// continue at the right offsets.
func TestRestartKeepsData(t *testing.T) {
	dir := t.TempDir()
	tb := startBroker(t, dir, nil)
	ctx := ctxTimeout(t, 30*time.Second)
	if _, err := tb.admin(t).CreateTopic(ctx, 3, 1, map[string]*string{"retention.ms": kmsg.StringPtr("3600000")}, "kept"); err != nil {
		t.Fatal(err)
	}
	p := tb.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.AllowAutoTopicCreation())
	want := map[int32][]string{}
	for i := range 300 {
		part := int32(i % 3)
		v := fmt.Sprintf("kept-%d", i)
		produceSync(t, p, "kept", part, v)
		want[part] = append(want[part], v)
	}
	// A topic created by Metadata (auto-creation), with compressed batches.
	pz := tb.client(t, kgo.AllowAutoTopicCreation(), kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	produceSync(t, pz, "auto", 0, "auto-0", "auto-1")
	p.Close()
	pz.Close()
	before := topicShapes(t, tb)
	if len(before) != 2 || before["kept"].partitions != 3 || before["auto"].partitions != 1 {
		t.Fatalf("topics before the restart: %+v", before)
	}

	for round := range 2 {
		tb.stop(t)
		tb = startBroker(t, dir, nil)
		after := topicShapes(t, tb)
		if !maps.Equal(before, after) {
			t.Fatalf("round %d: topics after the restart %+v, before %+v", round, after, before)
		}
		if cfg := tb.topic("kept").Configs; cfg["retention.ms"] != "3600000" {
			t.Errorf("round %d: configs after the restart: %v", round, cfg)
		}
		for part := range int32(3) {
			if got := tb.consumeValues(t, "kept", part, len(want[part])); !slices.Equal(got, want[part]) {
				t.Fatalf("round %d: partition %d after the restart: %d records, differing from those produced", round, part, len(got))
			}
		}
		if got := tb.consumeValues(t, "auto", 0, 2); !slices.Equal(got, []string{"auto-0", "auto-1"}) {
			t.Errorf("round %d: auto after the restart: %q", round, got)
		}
		// New produces continue at the log end.
		rc := dialRaw(t, tb.addr)
		for part := range int32(3) {
			v := fmt.Sprintf("round-%d-%d", round, part)
			code, base := rc.produceCode(11, "kept", part, batch(v))
			if code != 0 || base != int64(len(want[part])) {
				t.Fatalf("round %d: produce to partition %d after the restart: %v at %d, want offset %d", round, part, kerr.ErrorForCode(code), base, len(want[part]))
			}
			want[part] = append(want[part], v)
		}
		// ListOffsets agrees.
		end, err := tb.admin(t).ListEndOffsets(ctxTimeout(t, 10*time.Second), "kept")
		if err != nil {
			t.Fatal(err)
		}
		for part := range int32(3) {
			if o, _ := end.Lookup("kept", part); o.Offset != int64(len(want[part])) {
				t.Errorf("round %d: partition %d end offset %d, want %d", round, part, o.Offset, len(want[part]))
			}
		}
	}
	// Creating a kept topic again is refused.
	st := dialRaw(t, tb.addr).roundTrip(createReq(false, createTopicReq("kept", 1, 1)), 7).(*kmsg.CreateTopicsResponse)
	wantCode(t, "create kept after restart", st.Topics[0].ErrorCode, kerr.TopicAlreadyExists)
}
