package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestProduceConsumeRoundTrip(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := ctxTimeout(t, 30*time.Second)
	adm := tb.admin(t)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	p := tb.client(t)
	const n = 3000
	for i := range n {
		r := &kgo.Record{Topic: "orders", Key: []byte(fmt.Sprintf("k%d", i%17)), Value: []byte(fmt.Sprintf("v%d", i))}
		p.Produce(ctx, r, func(r *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	c := tb.client(t, kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for len(seen) < n {
		fs := c.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("poll: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	if len(seen) != n {
		t.Fatalf("consumed %d distinct records, want %d", len(seen), n)
	}
}
