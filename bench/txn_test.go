package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkTxnProduce: franz-go producing batches of 100 records of 100
// bytes to one partition of one broker, as an idempotent producer and as
// transactional producers ending a transaction (commit) every 1, 10 and 100
// batches. The variants take turns within each iteration (one batch each,
// in a rotating order), so the machine's noise falls on all of them alike;
// each reports its records/s and its time per batch relative to the
// idempotent producer's (x-idempotent). A batch is produced with manual
// flushing: 100 Produce calls, then Flush, so each is one record batch.
// Use -benchtime of at least 100x, so the 100-batch transaction ends.
func BenchmarkTxnProduce(b *testing.B) {
	addr, stop, err := startSluice(b)
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	ctx := context.Background()
	type variant struct {
		name  string
		every int // batches per transaction; 0: not transactional
		cl    *kgo.Client
		spent time.Duration
	}
	vs := []*variant{{name: "idempotent"}, {name: "txn-1", every: 1}, {name: "txn-10", every: 10}, {name: "txn-100", every: 100}}
	adm, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		b.Fatal(err)
	}
	defer adm.Close()
	for _, v := range vs {
		if _, err := kadm.NewClient(adm).CreateTopic(ctx, 1, 1, nil, "txn-bench-"+v.name); err != nil {
			b.Fatal(err)
		}
		opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ManualFlushing(), kgo.DefaultProduceTopic("txn-bench-" + v.name), kgo.MaxBufferedRecords(1000)}
		if v.every > 0 {
			opts = append(opts, kgo.TransactionalID("txn-bench-"+v.name))
		}
		if v.cl, err = kgo.NewClient(opts...); err != nil {
			b.Fatal(err)
		}
		defer v.cl.Close()
	}
	value := make([]byte, 100)
	batch := func(v *variant, i int) {
		if v.every > 0 && i%v.every == 0 {
			if err := v.cl.BeginTransaction(); err != nil {
				b.Fatal(err)
			}
		}
		for range 100 {
			v.cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					b.Error(err)
				}
			})
		}
		if err := v.cl.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		if v.every > 0 && (i%v.every == v.every-1 || i == b.N-1) {
			if err := v.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, v := range vs { // warm up: metadata, producer ids, the coordinator
		batch(v, 0)
		if v.every > 1 {
			if err := v.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for i := range b.N {
		for k := range vs {
			v := vs[(k+i)%len(vs)]
			start := time.Now()
			batch(v, i)
			v.spent += time.Since(start)
		}
	}
	b.StopTimer()
	base := vs[0].spent.Seconds()
	for _, v := range vs {
		b.ReportMetric(float64(b.N*100)/v.spent.Seconds(), v.name+"-records/s")
		if v != vs[0] {
			b.ReportMetric(v.spent.Seconds()/base, fmt.Sprintf("%s-x-idempotent", v.name))
		}
	}
}
