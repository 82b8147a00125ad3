package broker

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// manyPartitionsRun is what one run of manyPartitions measured.
type manyPartitionsRun struct {
	create, produce, stop, restart time.Duration
	fdsCreated                     int // descriptors open once every partition was written
	fdsRestarted                   int // descriptors open after the restart and a read of every partition
	// Memory once settled (clients closed, a GC, freed pages returned):
	// before the broker starts, once every partition was written, and
	// just after the restart.
	base, created, restarted memory
}

// memory is the process's resident bytes (VmRSS) and Go heap in use.
type memory struct{ rss, heap int64 }

func settledMemory(t testing.TB) memory {
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memory{rss: residentBytes(t), heap: int64(ms.HeapInuse)}
}

// manyPartitions creates a topic of n partitions through kadm (CreateTopics
// of at most 10,000, as Kafka limits a request, then CreatePartitions),
// produces one record to each, stops the broker cleanly, restarts it and
// reads every record back. Brokers and clients are its own, closed by it
// and left unreachable, so that the memory figures are the broker's.
func manyPartitions(t testing.TB, n int) manyPartitionsRun {
	var run manyPartitionsRun
	dir := t.TempDir()
	run.base = settledMemory(t)
	tb := serveBroker(t, dir, nil)
	defer func() { tb.stop(t) }()
	ctx := ctxTimeout(t, 10*time.Minute)
	const topic = "many"
	start := time.Now()
	createPartitions(t, ctx, tb, topic, n)
	run.create = time.Since(start)
	start = time.Now()
	produceOneEach(t, ctx, tb, topic, n)
	run.produce = time.Since(start)
	run.fdsCreated, run.created = openFDs(t), settledMemory(t)

	start = time.Now()
	tb.stop(t)
	run.stop = time.Since(start)
	start = time.Now()
	tb = serveBroker(t, dir, nil)
	run.restart = time.Since(start)
	run.restarted = settledMemory(t)
	readOneEach(t, ctx, tb, topic, n)
	run.fdsRestarted = openFDs(t)
	return run
}

// createPartitions creates topic with n partitions.
func createPartitions(t testing.TB, ctx context.Context, tb *testBroker, topic string, n int) {
	// The broker answers CreateTopics once every log is created, which
	// for 10,000 partitions takes seconds (more on a busy machine): the
	// client waits rather than retrying into TOPIC_ALREADY_EXISTS.
	adm := kadm.NewClient(tb.ownClient(t, kgo.RequestTimeoutOverhead(3*time.Minute)))
	defer adm.Close()
	adm.SetTimeoutMillis(int32((3 * time.Minute).Milliseconds()))
	first := min(n, cluster.MaxPartitionsPerRequest)
	resp, err := adm.CreateTopic(ctx, int32(first), 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating %d partitions: %v", first, err)
	}
	for have := first; have < n; {
		add := min(n-have, cluster.MaxPartitionsPerRequest)
		rs, err := adm.CreatePartitions(ctx, add, topic)
		if err == nil {
			err = rs.Error()
		}
		if err != nil {
			t.Fatalf("growing to %d partitions: %v", have+add, err)
		}
		have += add
	}
}

// produceOneEach writes the record "v<i>" to partition i of topic, for
// each of its n partitions, from several producers at once: the first
// append to a partition writes its leader-epoch checkpoint (a file and two
// fsyncs, as Kafka's), and one connection's requests are served one after
// another. A request of thousands of first appends takes seconds on a busy
// machine: the clients wait for it rather than retrying (their retries are
// not idempotent, and would write records twice).
func produceOneEach(t testing.TB, ctx context.Context, tb *testBroker, topic string, n int) {
	const producers = 16
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for w := range producers {
		p := tb.ownClient(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(n+1),
			kgo.ProduceRequestTimeout(3*time.Minute), kgo.RequestTimeoutOverhead(time.Minute))
		var recs []*kgo.Record
		for i := w; i < n; i += producers {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i), Value: []byte("v" + strconv.Itoa(i))})
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer p.Close()
			errs <- p.ProduceSync(ctx, recs...).FirstErr()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("producing one record to each of %d partitions: %v", n, err)
		}
	}
}

// readOneEach checks that each of topic's n partitions ends at 1 and holds
// the record produceOneEach wrote.
func readOneEach(t testing.TB, ctx context.Context, tb *testBroker, topic string, n int) {
	adm := kadm.NewClient(tb.ownClient(t))
	ends, err := adm.ListEndOffsets(ctx, topic)
	adm.Close()
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset != 1 {
			t.Errorf("partition %d ends at %d (%v), want 1", o.Partition, o.Offset, o.Err)
		}
		got++
	})
	if got != n {
		t.Fatalf("ListOffsets answered for %d partitions, want %d", got, n)
	}
	parts := map[int32]kgo.Offset{}
	for i := range int32(n) {
		parts[i] = kgo.NewOffset().AtStart()
	}
	c := tb.ownClient(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))
	defer c.Close()
	seen := make([]bool, n)
	for left := n; left > 0; {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%d partitions' records were not read: %v", left, err)
		}
		fs.EachError(func(topic string, part int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, part, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if want := "v" + strconv.Itoa(int(r.Partition)); string(r.Value) != want || r.Offset != 0 || seen[r.Partition] {
				t.Fatalf("partition %d offset %d holds %q (seen before: %v), want %q at 0", r.Partition, r.Offset, r.Value, seen[r.Partition], want)
			}
			seen[r.Partition] = true
			left--
		})
	}
}

// limitDescriptors sets the process's descriptor limit (RLIMIT_NOFILE) to n
// until the test ends; it skips the test when the hard limit is lower.
func limitDescriptors(t testing.TB, n uint64) {
	var orig syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
		t.Skip(err)
	}
	if orig.Max < n {
		t.Skipf("the hard descriptor limit is %d, below %d", orig.Max, n)
	}
	lim := orig
	lim.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
			t.Error(err)
		}
	})
}

func openFDs(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	return len(ents)
}

// residentBytes is the process's VmRSS.
func residentBytes(t testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmRSS:")); ok {
			kb, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(v, []byte("kB")))), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Skip("no VmRSS in /proc/self/status")
	return 0
}

// TestTwentyThousandPartitions: a topic of 20,000 partitions is created,
// written, stopped and restarted under a limit of 20,000 descriptors, and
// every record reads back. A partition costs one descriptor at most, and the
// Store keeps at most half the limit open (its default bound), so the
// process stays far under the limit. It takes about a minute on a busy
// 2-core machine (creating 20,000 directories and 40,000 files): -short
// skips it.
func TestTwentyThousandPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("about a minute: 20,000 partitions")
	}
	const n, limit = 20000, 20000
	limitDescriptors(t, limit)
	run := manyPartitions(t, n)
	t.Logf("%d partitions: create %v, produce %v, stop %v, restart %v; descriptors %d then %d; RSS %d MiB (heap %d) then %d MiB (heap %d), from %d MiB",
		n, run.create, run.produce, run.stop, run.restart, run.fdsCreated, run.fdsRestarted,
		run.created.rss>>20, run.created.heap>>20, run.restarted.rss>>20, run.restarted.heap>>20, run.base.rss>>20)
	for _, fds := range []int{run.fdsCreated, run.fdsRestarted} {
		if fds > limit/2+100 {
			t.Errorf("%d descriptors open, want at most the Store's bound (%d) and a few", fds, limit/2)
		}
	}
}

// BenchmarkManyPartitions measures manyPartitions' phases (see
// BENCHMARKS.md): the creation of a topic of N partitions, one record
// produced to each (from 16 producers), a clean stop and a restart, with the
// process's settled memory after the writes and after the restart. Run it
// once per size: -benchtime 1x.
func BenchmarkManyPartitions(b *testing.B) {
	for _, n := range []int{1000, 5000, 10000, 20000} {
		b.Run("partitions="+strconv.Itoa(n), func(b *testing.B) {
			limitDescriptors(b, 20000)
			for range b.N {
				run := manyPartitions(b, n)
				b.ReportMetric(run.create.Seconds(), "create-s")
				b.ReportMetric(run.produce.Seconds(), "produce-s")
				b.ReportMetric(run.stop.Seconds(), "stop-s")
				b.ReportMetric(run.restart.Seconds(), "restart-s")
				b.ReportMetric(float64(run.created.rss-run.base.rss)/(1<<20), "written-rss-MiB")
				b.ReportMetric(float64(run.restarted.rss-run.base.rss)/(1<<20), "restarted-rss-MiB")
				b.ReportMetric(float64(run.restarted.heap-run.base.heap)/(1<<20), "restarted-heap-MiB")
				b.ReportMetric(float64(run.fdsRestarted), "fds")
			}
		})
	}
}
