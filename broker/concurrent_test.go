package broker

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestConcurrentProducers: 4 producer clients write to 16 partitions at the
// same time; every record is consumed exactly once, each partition's
// offsets are contiguous, and each producer's records to a partition come
// back in the order produced.
func TestConcurrentProducers(t *testing.T) {
	const (
		partitions = 16
		producers  = 4
		perProd    = 2000
	)
	tb := startBroker(t, t.TempDir(), nil)
	tb.createTopic(t, "many", partitions)
	ctx := ctxTimeout(t, 30*time.Second)

	var wg sync.WaitGroup
	errs := make(chan error, producers*perProd)
	for p := range producers {
		cl := tb.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perProd {
				r := &kgo.Record{
					Topic:     "many",
					Partition: int32((i + p) % partitions),
					Key:       []byte(fmt.Sprintf("p%d", p)),
					Value:     []byte(fmt.Sprintf("p%d-%d", p, i)),
				}
				cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
					if err != nil {
						errs <- err
					}
				})
			}
			if err := cl.Flush(ctx); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("produce: %v", err)
	}

	c := tb.client(t, kgo.ConsumeTopics("many"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	next := make([]int64, partitions) // next offset per partition
	last := make(map[[2]int]int)      // last sequence per (producer, partition)
	seen := make(map[string]bool, producers*perProd)
	for len(seen) < producers*perProd {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records: %v", len(seen), producers*perProd, ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("consume %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next[r.Partition] {
				t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition]++
			v := string(r.Value)
			if seen[v] {
				t.Fatalf("record %q consumed twice", v)
			}
			seen[v] = true
			var p, i int
			if _, err := fmt.Sscanf(v, "p%d-%d", &p, &i); err != nil {
				t.Fatalf("record %q: %v", v, err)
			}
			if int32((i+p)%partitions) != r.Partition {
				t.Fatalf("record %q in partition %d", v, r.Partition)
			}
			k := [2]int{p, int(r.Partition)}
			want := ((int(r.Partition)-p)%partitions + partitions) % partitions // the producer's first to this partition
			if prev, ok := last[k]; ok {
				want = prev + partitions
			}
			if i != want {
				t.Fatalf("partition %d: producer %d's record %d where its record %d belongs", r.Partition, p, i, want)
			}
			last[k] = i
		})
	}
	var total int64
	for p, n := range next {
		if n != producers*perProd/partitions {
			t.Errorf("partition %d holds %d records, want %d", p, n, producers*perProd/partitions)
		}
		if hw := tb.partition("many", int32(p)).HighWatermark(); hw != n {
			t.Errorf("partition %d: high watermark %d, consumed %d", p, hw, n)
		}
		total += n
	}
	if total != producers*perProd {
		t.Errorf("consumed %d records, want %d", total, producers*perProd)
	}
}
