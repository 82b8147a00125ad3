package engine

import (
	"testing"
	"time"
)

// compressionTypes are the logs of BenchmarkAppendCompressionType: Kafka's
// compression.type values, producer (no recompression) first, the
// baseline.
var compressionTypes = []struct {
	name string
	r    Recompression
}{
	{"producer", Recompression{}},
	{"lz4", Recompression{Enabled: true, Codec: CompressionLZ4}},
	{"zstd", Recompression{Enabled: true, Codec: CompressionZstd}},
	{"gzip", Recompression{Enabled: true, Codec: CompressionGzip}},
	{"snappy", Recompression{Enabled: true, Codec: CompressionSnappy}},
	{"uncompressed", Recompression{Enabled: true, Codec: CompressionNone}},
}

// BenchmarkAppendCompressionType measures Log.Append under each
// compression.type at its default level against producer (the batch stored
// as it came) in the same run: an op appends the same batch of 1,000
// event-like records (eventRecords: about 160 bytes each with key and
// header, 161 KB uncompressed) to one log of each type, in an order that rotates every op,
// each append timed on its own. It reports, per type, MB/s of uncompressed
// records (<type>-MB/s) and the throughput as a fraction of producer's
// (<type>/producer), and the stored batch's size over the uncompressed
// batch's (<type>-stored/plain); ns/op and allocs/op are for the whole op
// (all six appends).
// from= is the producer's codec.
func BenchmarkAppendCompressionType(b *testing.B) {
	recs := eventRecords(1000)
	plain := batchIn(b, CompressionNone, recs)
	for _, from := range []Compression{CompressionNone, CompressionLZ4} {
		b.Run("from="+from.String(), func(b *testing.B) {
			batch := batchIn(b, from, recs)
			logs := make([]*Log, len(compressionTypes))
			for i, ct := range compressionTypes {
				logs[i] = mustOpen(b, b.TempDir(), Options{Logger: benchLogger, Recompression: ct.r})
				defer logs[i].Close()
				// Grow the pool's buffers and make the encoders.
				if _, err := logs[i].Append(batch); err != nil {
					b.Fatal(err)
				}
			}
			spent := make([]time.Duration, len(logs))
			b.ReportAllocs()
			for n := 0; b.Loop(); n++ {
				for k := range logs {
					i := (k + n) % len(logs)
					start := time.Now()
					// Append changes only the base offset and leader
					// epoch in place: the slice stays a valid batch.
					if _, err := logs[i].Append(batch); err != nil {
						b.Fatal(err)
					}
					spent[i] += time.Since(start)
				}
			}
			ops := float64(b.N)
			base := spent[0].Seconds()
			for i, ct := range compressionTypes {
				mbs := ops * float64(len(plain)) / 1e6 / spent[i].Seconds()
				b.ReportMetric(mbs, ct.name+"-MB/s")
				// Every append stored the same batch: the log's size over
				// the appends (the warm-up's included) is its size.
				b.ReportMetric(float64(logs[i].Size())/(ops+1)/float64(len(plain)), ct.name+"-stored/plain")
				if i > 0 {
					b.ReportMetric(base/spent[i].Seconds(), ct.name+"/producer")
				}
			}
		})
	}
}
