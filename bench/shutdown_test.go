package bench

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/engine"
)

// BenchmarkControlledShutdown: two brokers, a topic of 2,000 partitions
// with replication factor 2 (each broker leads half and follows the rest);
// an iteration stops the broker that is not the controller cleanly and
// measures how long its controlled shutdown takes to move its leadership
// to the other (ms-to-move: from the start of Close until the other
// broker's metadata shows it leading every partition; ms-close: the whole
// Close), then restarts it and waits until it is back in every ISR.
// Reported per 1,000 partitions moved, the unit (goal < 1 s;
// Kafka 1.1: 10,000 leaders in about 3 s). Run it with -benchtime 1x:
// without preferred leader elections the restarted broker leads nothing,
// so later iterations move nothing (and are not counted).
func BenchmarkControlledShutdown(b *testing.B) {
	const partitions = 2000
	c := startCluster(b, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c.createTopic(ctx, "moved", partitions, 2, nil)
	var moved, moveNanos, closeNanos int64
	for b.Loop() {
		md, err := c.metadata(ctx, 0)
		if err != nil {
			b.Fatal(err)
		}
		led := map[int32]int{}
		for _, p := range partitionsOf(md, "moved") {
			led[p.Leader]++
		}
		other := md.ControllerID
		victim := 1 - other
		if led[victim] == 0 {
			continue
		}
		var done atomic.Int64
		start := time.Now()
		go func() {
			for ctx.Err() == nil {
				md, err := c.metadata(ctx, other)
				if err == nil && allLedBy(md, "moved", partitions, other) {
					done.Store(int64(time.Since(start)))
					return
				}
				time.Sleep(2 * time.Millisecond) // polling the other broker's metadata is the measurement
			}
		}()
		c.stop(victim)
		closeNanos += int64(time.Since(start))
		for done.Load() == 0 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		moveNanos += done.Load()
		moved += int64(led[victim])
		b.StopTimer()
		c.start(victim)
		c.waitMetadata("the restarted broker back in every ISR", inSync("moved", partitions, 2, victim))
		b.StartTimer()
	}
	if moved > 0 {
		b.ReportMetric(checkpointFloor(b, 1000).Seconds()*1000, "ms-baseline-1000-checkpoint-writes")
		b.ReportMetric(float64(moveNanos)/1e6/(float64(moved)/1000), "ms-to-move/1000-leaders")
		b.ReportMetric(float64(closeNanos)/1e6/(float64(moved)/1000), "ms-close/1000-leaders")
		b.ReportMetric(float64(moved)/float64(b.N), "leaders-moved/op")
	}
}

// checkpointFloor is the raw cost, on the benchmark's file system, of what
// a new leader of n partitions must do at least: replace n small
// checkpoint files durably (engine.WriteFileAtomic: temporary file, fsync,
// rename, directory fsync), one directory each, 16 at a time as the broker
// does. The same-run baseline of ms-to-move.
func checkpointFloor(b *testing.B, n int) time.Duration {
	root := b.TempDir()
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = filepath.Join(root, strconv.Itoa(i))
		if err := os.Mkdir(dirs[i], 0o755); err != nil {
			b.Fatal(err)
		}
		if err := engine.WriteFileAtomic(filepath.Join(dirs[i], "leader-epoch-checkpoint"), []byte("0\n1\n0 0\n")); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for _, d := range dirs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := engine.WriteFileAtomic(filepath.Join(d, "leader-epoch-checkpoint"), []byte("0\n2\n0 0\n1 0\n")); err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// allLedBy reports whether broker id leads all n partitions of topic in md.
func allLedBy(md *kmsg.MetadataResponse, topic string, n int, id int32) bool {
	ps := partitionsOf(md, topic)
	if len(ps) != n {
		return false
	}
	for _, p := range ps {
		if p.Leader != id {
			return false
		}
	}
	return true
}
