package broker

import (
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A controlled shutdown moves a broker's leadership to the other in-sync
// replicas and takes it out of every ISR while it still runs and is still
// registered, so clients switch leaders without waiting for its session to
// end; an acks=all producer writing throughout loses nothing and sees
// no error. A replication factor 1 partition stays with it.
func TestClusterControlledShutdownMovesLeadership(t *testing.T) {
	c := startCluster(t, 3, nil)
	ctx := ctxTimeout(t, 90*time.Second)
	c.createTopic(ctx, "moved", 6, 3)
	c.createTopic(ctx, "single", 3, 1)
	full := func(md *kmsg.MetadataResponse) bool {
		tp := topicOf(md, "moved")
		if tp == nil || len(tp.Partitions) != 6 {
			return false
		}
		for _, p := range tp.Partitions {
			if len(p.ISR) != 3 {
				return false
			}
		}
		return true
	}
	c.waitAgree("every replica in sync", full)
	md := metadataOf(t, c.broker(0))
	victim := md.ControllerID // the controller moves its own partitions too
	var led []int32
	for _, p := range topicOf(md, "moved").Partitions {
		if p.Leader == victim {
			led = append(led, p.Partition)
		}
	}
	if len(led) == 0 {
		t.Fatalf("broker %d leads nothing of %v", victim, describeMetadata(md))
	}
	var single []int32
	for _, p := range topicOf(md, "single").Partitions {
		if p.Leader == victim {
			single = append(single, p.Partition)
		}
	}

	prod := clusterClient(t, c.bootstrap(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var (
		mu    sync.Mutex
		acked = map[string]bool{}
		errs  []error
		wg    sync.WaitGroup
		stop  = make(chan struct{})
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := strconv.Itoa(i)
			err := prod.ProduceSync(ctx, &kgo.Record{Topic: "moved", Partition: int32(i % 6), Value: []byte(v)}).FirstErr()
			mu.Lock()
			if err != nil {
				errs = append(errs, err)
			} else {
				acked[v] = true
			}
			mu.Unlock()
		}
	}()

	c.broker(victim).controlledShutdown()
	rest := slices.DeleteFunc(c.live(), func(tb *testBroker) bool { return tb.cfg.ID == victim })
	c.waitAgreeOn(rest, "the shutting broker leads nothing replicated, is in no ISR, and is still registered", func(md *kmsg.MetadataResponse) bool {
		if !slices.ContainsFunc(md.Brokers, func(b kmsg.MetadataResponseBroker) bool { return b.NodeID == victim }) {
			return false
		}
		tp := topicOf(md, "moved")
		for _, p := range tp.Partitions {
			if p.Leader == victim || p.Leader < 0 || slices.Contains(p.ISR, victim) {
				return false
			}
		}
		for _, p := range topicOf(md, "single").Partitions {
			if slices.Contains(single, p.Partition) && p.Leader != victim {
				return false
			}
		}
		return true
	})
	c.stopBroker(victim)
	// Some records acknowledged with the new leaders.
	mu.Lock()
	before := len(acked)
	mu.Unlock()
	for deadline := time.Now().Add(30 * time.Second); ; {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= before+60 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d records acknowledged after the shutdown, %d before", n, before)
		}
		time.Sleep(20 * time.Millisecond) // the producer runs on its own goroutine
	}
	close(stop)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("the producer saw %d errors across a controlled shutdown, first %v", len(errs), errs[0])
	}
	cons := clusterClient(t, c.bootstrap(), kgo.ConsumeTopics("moved"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for len(seen) < len(acked) && ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	for v := range acked {
		if !seen[v] {
			t.Fatalf("acknowledged record %s lost across the controlled shutdown (%d of %d read)", v, len(seen), len(acked))
		}
	}
}
