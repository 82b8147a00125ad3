package broker

import (
	"crypto/rand"
	"crypto/x509/pkix"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkTLSProduceConsume produces and then consumes 1 KiB records with
// franz-go on the same broker, over its PLAINTEXT listener (fetches by
// sendfile) and its SSL listener (TLS, client certificates), in the same
// run: the figure to read is the ratio.
func BenchmarkTLSProduceConsume(b *testing.B) {
	for _, listener := range []string{"PLAINTEXT", "SSL"} {
		for _, op := range []string{"produce", "consume"} {
			b.Run(fmt.Sprintf("%s/%s", listener, op), func(b *testing.B) {
				benchTLS(b, listener, op)
			})
		}
	}
}

func benchTLS(b *testing.B, listener, op string) {
	tb := startTLSBroker(b, nil)
	addr := tb.addr
	var opts []kgo.Opt
	if listener == "SSL" {
		addr = tb.ssl
		opts = append(opts, kgo.DialTLSConfig(tb.clientTLS(b, tb.ca, pkix.Name{CommonName: "bench"})))
	}
	const size = 1 << 10
	value := make([]byte, size)
	rand.Read(value) // incompressible, whatever codec the client picks
	topic := "bench-" + op
	tb.createTopic(b, topic, 1)
	produce := func(n int) {
		cl := tb.client(b, append(opts, kgo.SeedBrokers(addr), kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(1<<16))...)
		ctx := ctxTimeout(b, 5*time.Minute)
		for range n {
			cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					b.Error(err)
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(size)
	b.ReportAllocs()
	if op == "produce" {
		b.ResetTimer()
		produce(b.N)
		return
	}
	produce(b.N)
	cl := tb.client(b, append(opts, kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(16<<20))...)
	ctx := ctxTimeout(b, 5*time.Minute)
	b.ResetTimer()
	for got := 0; got < b.N; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			b.Fatal(err)
		}
		got += fs.NumRecords()
	}
}
