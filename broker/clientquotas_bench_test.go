package broker

import (
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkProducerQuotaWindows: a producer limited to 1 MiB/s by
// producer_byte_rate sends b.N MiB as fast as it can, with Kafka's default
// quota windows (11 of 1 s) and, in the same run, with 2; the rate it is
// acknowledged at is reported per phase: the first 10 MiB (the burst a
// fresh client may send before the Rate holds it back) and the rest.
// Run with -benchtime 40x: 40 MiB, about half a minute each.
func BenchmarkProducerQuotaWindows(b *testing.B) {
	for _, windows := range []int{11, 2} {
		b.Run(map[int]string{11: "windows-11", 2: "windows-2"}[windows], func(b *testing.B) {
			tb := startBroker(b, b.TempDir(), func(c *config.Config) {
				c.ClientQuotas = config.ClientQuotaConfig{WindowNum: windows, WindowSize: time.Second}
			})
			tb.createTopic(b, "quota-bench", 1)
			const rate = 1 << 20
			setQuota(b, tb.admin(b), clientEntity("limited"), "producer_byte_rate", rate, false)
			cl := tb.client(b, kgo.ClientID("limited"), kgo.DefaultProduceTopic("quota-bench"), kgo.ProducerBatchCompression(kgo.NoCompression()),
				kgo.ProducerBatchMaxBytes(16<<10), kgo.MaxBufferedRecords(64), kgo.ProducerLinger(0))
			const recordSize = 4 << 10
			value := incompressible(recordSize)
			var (
				mu      sync.Mutex
				acked   int
				marks   []time.Time // when each MiB was acknowledged
				failure error
			)
			ctx := ctxTimeout(b, 10*time.Minute)
			total := b.N << 20
			start := time.Now()
			b.ResetTimer()
			for sent := 0; sent < total; sent += recordSize {
				cl.Produce(ctx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						failure = err
						return
					}
					acked += len(r.Value)
					for len(marks) < acked>>20 {
						marks = append(marks, time.Now())
					}
				})
			}
			if err := cl.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			mu.Lock()
			defer mu.Unlock()
			if failure != nil {
				b.Fatal(failure)
			}
			b.ReportMetric(float64(acked)/time.Since(start).Seconds()/rate, "x-quota-overall")
			if burst := 10; len(marks) > burst+5 {
				b.ReportMetric(float64(burst)/marks[burst-1].Sub(start).Seconds(), "MiB/s-first-10MiB")
				b.ReportMetric(float64(len(marks)-burst)/marks[len(marks)-1].Sub(marks[burst-1]).Seconds(), "MiB/s-after")
			}
		})
	}
}
