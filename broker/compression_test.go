package broker

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
)

// TestCompressionPassThrough produces with each codec, consumes the same
// records back, and checks with a raw Fetch that the stored batches carry
// the codec the producer used: the broker stores batches as sent.
func TestCompressionPassThrough(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
		want  engine.Compression
	}{
		{"gzip", kgo.GzipCompression(), 1},
		{"snappy", kgo.SnappyCompression(), 2},
		{"lz4", kgo.Lz4Compression(), 3},
		{"zstd", kgo.ZstdCompression(), 4},
	}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "codec-" + c.name
			id := tb.createTopic(t, topic, 1)
			p := tb.client(t, kgo.ProducerBatchCompression(c.codec), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			var want []string
			for i := range 200 {
				// Repetitive values, so the compressed batch is smaller
				// and kgo does not fall back to sending it uncompressed.
				want = append(want, fmt.Sprintf("%s-%04d-%s", c.name, i, strings.Repeat("abcd", 50)))
			}
			// Several produce calls, so there are several batches.
			for i := 0; i < len(want); i += 50 {
				produceSync(t, p, topic, 0, want[i:i+50]...)
			}
			if got := tb.consumeValues(t, topic, 0, len(want)); !slices.Equal(got, want) {
				t.Fatalf("consumed records differ from those produced (%d vs %d)", len(got), len(want))
			}

			rc := dialRaw(t, tb.addr)
			for _, v := range []int16{4, 12, 17} {
				resp := rc.roundTrip(fetchReq(topic, id, 0, 0, 10<<20), v).(*kmsg.FetchResponse)
				part := resp.Topics[0].Partitions[0]
				hs := batchesIn(t, part.RecordBatches)
				if len(hs) < 4 {
					t.Fatalf("v%d: %d batches, want at least 4", v, len(hs))
				}
				var records int64
				for _, h := range hs {
					if h.Compression() != c.want {
						t.Errorf("v%d: batch at %d stored with codec %v, want %v", v, h.BaseOffset, h.Compression(), c.want)
					}
					records += int64(h.NumRecords)
				}
				if records != int64(len(want)) || hs[len(hs)-1].LastOffset() != int64(len(want)-1) {
					t.Errorf("v%d: batches hold %d records ending at %d", v, records, hs[len(hs)-1].LastOffset())
				}
				// A compressed batch's payload is not what was produced in
				// the clear: it really is compressed.
				if strings.Contains(string(part.RecordBatches), strings.Repeat("abcd", 50)) {
					t.Errorf("v%d: stored bytes hold the values uncompressed", v)
				}
			}
		})
	}
}
