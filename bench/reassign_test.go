package bench

// BenchmarkReassignToNewBroker: issue 17's move of 1 GiB of partitions to
// a broker that joins. Each iteration builds its own cluster
// (cluster_test.go: in-process brokers on the package's ZooKeeper) with
// its data directories under -sluice.move-dir (default /dev/shm, tmpfs:
// on this machine's ext4 the writeback of the 3 GiB a move writes runs
// into the baseline and the next iteration):
//
//   - brokers 0, 1 and 2; topic "moving", 8 partitions of replication
//     factor 2 (partition p on [p%3 (p+1)%3]), filled with
//     -sluice.move-bytes (1 GiB) in 16 KiB records, round robin, acks=all;
//     topic "steady", 3 partitions of replication factor 2 on the same
//     brokers, which do not move;
//   - broker 3 starts; a producer sends "steady" 5,000 records/s of 100 B
//     (acks=all) from then on; its acknowledgements' latencies over 3 s
//     are "before";
//   - every partition of "moving" gets broker 3 in place of one replica
//     (even partitions: the follower; odd ones: the leader, so leadership
//     moves too), 1 GiB for broker 3 to copy. The move runs from
//     AlterPartitionReassignments until ListPartitionReassignments lists
//     none of them (the controller's last step done); the producer's
//     latencies over that time are "during" (by send time).
//
// Sub-benchmarks: unthrottled, and throttled as kafka-reassign-
// partitions.sh --throttle sets it: leader.replication.throttled.rate and
// follower.replication.throttled.rate at -sluice.move-throttle (50 MB/s:
// the unthrottled move reached only 90 to 280 MB/s on this 2-core virtual
// machine while its host took most of its CPU, where 100 MB/s would not
// bind) on all four brokers,
// leader.replication.throttled.replicas the current replicas and
// follower.replication.throttled.replicas the adding ones, set before the
// move. Broker 3 fetches everything, so its follower quota bounds the
// whole copy.
//
// The same-run baseline is rawCopyFloor over the moved segments. Each
// move writes its GiB once and removes its cluster before the next.
//
//	go test -run '^$' -bench ReassignToNewBroker -benchtime 1x -count 3 ./bench/

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	flagMoveBytes    = flag.Int64("sluice.move-bytes", 1<<30, "bytes of records BenchmarkReassignToNewBroker moves to the new broker")
	flagMoveDir      = flag.String("sluice.move-dir", "/dev/shm", "where BenchmarkReassignToNewBroker keeps its brokers' data (empty: the default temporary directory)")
	flagMoveThrottle = flag.Int64("sluice.move-throttle", 50_000_000, "bytes/s of BenchmarkReassignToNewBroker/throttled's replication throttles")
	flagMoveFetchMax = flag.Int("sluice.move-fetch-max-bytes", 0, "replica.fetch.max.bytes of BenchmarkReassignToNewBroker's brokers (0: the default, 1 MiB)")
	flagMoveProgress = flag.Bool("sluice.move-progress", false, "BenchmarkReassignToNewBroker logs the bytes the new broker holds every second of the move")
)

const (
	movePartitions  = 8
	moveRecordBytes = 16 << 10
	moveNewBroker   = 3
	steadyRate      = 5000 // records/s
	steadyBefore    = 3 * time.Second
	// steadyWarmup is left out of both windows: the producer's
	// connections, metadata and first batches.
	steadyWarmup = time.Second
)

func BenchmarkReassignToNewBroker(b *testing.B) {
	b.Run("unthrottled", func(b *testing.B) { benchMove(b, 0) })
	b.Run("throttled", func(b *testing.B) { benchMove(b, *flagMoveThrottle) })
}

// moveResult is what one move measured.
type moveResult struct {
	took   time.Duration
	copied int64 // bytes of "moving" broker 3 holds afterwards
	// raw bytes copied by rawCopyFloor in rawTook: the moved segments
	// again, in the same run.
	raw     int64
	rawTook time.Duration
}

// benchMove runs b.N moves with replication throttles at throttle bytes/s
// (0: none) and reports them.
func benchMove(b *testing.B, throttle int64) {
	if *flagMoveDir != "" {
		b.Setenv("TMPDIR", *flagMoveDir) // b.TempDir's parent, for the data directories
	}
	ctx := benchCtx(b)
	var before, during Histogram
	var took, rawTook time.Duration
	var copied, raw int64
	b.StopTimer() // moveOnce times the move alone
	for range b.N {
		r := moveOnce(b, ctx, throttle, &before, &during)
		took += r.took
		copied += r.copied
		raw += r.raw
		rawTook += r.rawTook
		b.Logf("moved %.1f MB in %.2f s: %.1f MB/s (raw copy %.1f MB/s); steady producer p50/p99 %.2f/%.2f ms before, %.2f/%.2f ms during",
			float64(r.copied)/1e6, r.took.Seconds(), float64(r.copied)/1e6/r.took.Seconds(), float64(r.raw)/1e6/r.rawTook.Seconds(),
			ms(before.Quantile(0.5)), ms(before.Quantile(0.99)), ms(during.Quantile(0.5)), ms(during.Quantile(0.99)))
	}
	rate := float64(copied) / took.Seconds()
	b.ReportMetric(took.Seconds()/float64(b.N), "s/move")
	b.ReportMetric(rate/1e6, "MB/s-copied")
	rawRate := float64(raw) / rawTook.Seconds()
	b.ReportMetric(rawRate/1e6, "MB/s-raw-copy")
	b.ReportMetric(rate/rawRate, "copied/raw-copy")
	if throttle > 0 {
		b.ReportMetric(float64(throttle)/1e6, "MB/s-throttle")
		b.ReportMetric(rate/float64(throttle), "copied/throttle")
	}
	b.ReportMetric(ms(before.Quantile(0.5)), "ms-p50-before")
	b.ReportMetric(ms(before.Quantile(0.99)), "ms-p99-before")
	b.ReportMetric(ms(during.Quantile(0.5)), "ms-p50-during")
	b.ReportMetric(ms(during.Quantile(0.99)), "ms-p99-during")
	b.ReportMetric(float64(during.Quantile(0.99))/float64(before.Quantile(0.99)), "p99-during/before")
}

// moveOnce builds a cluster, moves its partitions to a new broker (the
// benchmark's timer running for the move alone), checks where they ended
// and removes the cluster. The steady producer's latencies go to before
// and during.
func moveOnce(b *testing.B, ctx context.Context, throttle int64, before, during *Histogram) moveResult {
	c := startClusterWith(b, 3, func(cfg *config.Config) { cfg.Cluster.Fetch.MaxBytes = int32(*flagMoveFetchMax) })
	defer c.close()
	placement := make([][]int32, movePartitions)
	target := make([][]int32, movePartitions)
	for p := range placement {
		leader, follower := int32(p%3), int32(p+1)%3
		placement[p] = []int32{leader, follower}
		target[p] = []int32{leader, moveNewBroker}
		if p%2 == 1 {
			target[p] = []int32{moveNewBroker, follower}
		}
	}
	c.createPlaced(ctx, "moving", placement, nil)
	c.createPlaced(ctx, "steady", [][]int32{{0, 1}, {1, 2}, {2, 0}}, nil)
	fillStart := time.Now()
	runAt(b, ctx, Config{Brokers: c.addrs(), Mode: Produce, Topic: "moving", Records: *flagMoveBytes / moveRecordBytes,
		RecordBytes: moveRecordBytes, ClientOpts: []kgo.Opt{kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.MaxBufferedBytes(64 << 20)}})
	b.Logf("filled %d partitions with %d MiB in %.1f s", movePartitions, *flagMoveBytes>>20, time.Since(fillStart).Seconds())
	if id := c.add(); id != moveNewBroker {
		b.Fatalf("new broker %d, want %d", id, moveNewBroker)
	}
	c.waitMetadata("the new broker registered", func(md *kmsg.MetadataResponse) bool { return len(md.Brokers) == moveNewBroker+1 })
	if throttle > 0 {
		c.throttleMove(ctx, "moving", placement, target, throttle)
	}

	sp := startSteady(b, c.addrs(), "steady")
	defer sp.close()
	sp.waitAcked(ctx, steadyWarmup)
	sp.measure(before)
	sp.waitAcked(ctx, steadyBefore)

	moving := kadm.TopicsSet{"moving": {}}
	req := kadm.AlterPartitionAssignmentsReq{}
	for p := range target {
		moving["moving"][int32(p)] = struct{}{}
		req.Assign("moving", int32(p), target[p])
	}
	var took time.Duration
	withAdmin(b, c.addrs(), func(adm *kadm.Client) {
		sp.measure(during)
		b.StartTimer()
		start := time.Now()
		resp, err := adm.AlterPartitionAssignments(ctx, req)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			b.Fatalf("reassignment: %v", err)
		}
		lastLog := time.Now()
		for {
			ongoing, err := adm.ListPartitionReassignments(ctx, moving)
			if err == nil && len(ongoing["moving"]) == 0 {
				break
			}
			if ctx.Err() != nil {
				b.Fatalf("reassignment not done: %v (last answer %v)", ctx.Err(), err)
			}
			time.Sleep(5 * time.Millisecond) // polling the controller's list is the measurement
			if *flagMoveProgress && time.Since(lastLog) >= time.Second {
				lastLog = time.Now()
				n, _ := c.logSize(ctx, moveNewBroker, "moving")
				b.Logf("%5.1f s: %4d MB on broker %d, %d partitions moving", time.Since(start).Seconds(), n/1e6, moveNewBroker, len(ongoing["moving"]))
			}
		}
		took = time.Since(start)
		b.StopTimer()
		sp.measure(nil)
	})
	if err := sp.close(); err != nil {
		b.Fatal(err)
	}
	c.waitMetadata("every partition on its target replicas, ISR whole", placedOn("moving", target))
	copied, err := c.logSize(ctx, moveNewBroker, "moving")
	if err != nil {
		b.Fatal(err)
	}
	if copied < *flagMoveBytes {
		b.Fatalf("broker %d holds %d bytes of the moved partitions, want at least the %d written", moveNewBroker, copied, *flagMoveBytes)
	}
	logs, err := filepath.Glob(filepath.Join(c.dirs[moveNewBroker], "moving-*", "*.log"))
	if err != nil || len(logs) == 0 {
		b.Fatalf("no segment of the moved partitions in %s (%v)", c.dirs[moveNewBroker], err)
	}
	raw, rawTook := rawCopyFloor(b, logs, b.TempDir())
	return moveResult{took: took, copied: copied, raw: raw, rawTook: rawTook}
}

// throttleMove sets the replication throttles of a move from placement
// to target as kafka-reassign-partitions.sh --throttle does: both rates on
// every broker of either, the current replicas leader-throttled and the
// adding ones follower-throttled; it waits until every broker's view of
// the topic's configs has them.
func (c *cluster) throttleMove(ctx context.Context, topic string, placement, target [][]int32, rate int64) {
	c.tb.Helper()
	var leaders, followers []string
	for p := range placement {
		for _, id := range placement[p] {
			leaders = append(leaders, fmt.Sprintf("%d:%d", p, id))
		}
		for _, id := range target[p] {
			if !slices.Contains(placement[p], id) {
				followers = append(followers, fmt.Sprintf("%d:%d", p, id))
			}
		}
	}
	want := map[string]string{
		"leader.replication.throttled.replicas":   strings.Join(leaders, ","),
		"follower.replication.throttled.replicas": strings.Join(followers, ","),
	}
	c.alterConfigs(ctx, 0, kmsg.ConfigResourceTypeTopic, topic, want)
	r := strconv.FormatInt(rate, 10)
	for id := range c.live {
		c.setBrokerConfigs(ctx, int32(id), map[string]string{"leader.replication.throttled.rate": r, "follower.replication.throttled.rate": r})
	}
	deadline := time.Now().Add(30 * time.Second)
	for id := range c.live {
		for !c.hasTopicConfigs(ctx, int32(id), topic, want) {
			if time.Now().After(deadline) {
				c.tb.Fatalf("broker %d: %s's throttled replicas not set after 30 s", id, topic)
			}
			time.Sleep(10 * time.Millisecond) // a change notification through ZooKeeper: nothing to wait on from outside
		}
	}
}

// hasTopicConfigs reports whether broker id describes topic with every
// config of want.
func (c *cluster) hasTopicConfigs(ctx context.Context, id int32, topic string, want map[string]string) bool {
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	for k := range want {
		rr.ConfigNames = append(rr.ConfigNames, k)
	}
	req.Resources = append(req.Resources, rr)
	resp, err := c.request(ctx, id, req)
	if err != nil {
		return false
	}
	got := 0
	for _, e := range resp.(*kmsg.DescribeConfigsResponse).Resources[0].Configs {
		if e.Value != nil && *e.Value == want[e.Name] {
			got++
		}
	}
	return got == len(want)
}

// placedOn reports whether partition p of topic has exactly the replicas
// of target[p], in any order, all in its ISR.
func placedOn(topic string, target [][]int32) func(*kmsg.MetadataResponse) bool {
	return func(md *kmsg.MetadataResponse) bool {
		ps := partitionsOf(md, topic)
		if len(ps) != len(target) {
			return false
		}
		for _, p := range ps {
			want := slices.Sorted(slices.Values(target[p.Partition]))
			if !slices.Equal(slices.Sorted(slices.Values(p.Replicas)), want) || !slices.Equal(slices.Sorted(slices.Values(p.ISR)), want) {
				return false
			}
		}
		return true
	}
}

// A steadyProducer sends steadyRate records/s of 100 B with acks=all
// until closed, each acknowledgement's latency recorded in the histogram
// that was being measured when the record was sent (none before the first
// measure, or after measure(nil)).
type steadyProducer struct {
	cl    *kgo.Client
	phase atomic.Pointer[Histogram]
	acked atomic.Int64
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
	mu    struct {
		sync.Mutex
		err error // the first produce error
	}
}

func startSteady(b *testing.B, addrs []string, topic string) *steadyProducer {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
	if err != nil {
		b.Fatal(err)
	}
	sp := &steadyProducer{cl: cl, stop: make(chan struct{}), done: make(chan struct{})}
	value := make([]byte, benchRecordBytes)
	rand.Read(value)
	go sp.run(value)
	return sp
}

func (sp *steadyProducer) run(value []byte) {
	defer close(sp.done)
	start := time.Now()
	for i := int64(0); ; i++ {
		if due := int64(time.Since(start).Seconds()*steadyRate) + 1; i >= due {
			time.Sleep(time.Duration(float64(i-due+1) / steadyRate * float64(time.Second)))
		}
		select {
		case <-sp.stop:
			return
		default:
		}
		h := sp.phase.Load()
		sent := time.Now()
		sp.cl.Produce(context.Background(), &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				sp.mu.Lock()
				if sp.mu.err == nil {
					sp.mu.err = fmt.Errorf("steady producer: %w", err)
				}
				sp.mu.Unlock()
				return
			}
			if h != nil {
				h.Record(time.Since(sent))
			}
			sp.acked.Add(1)
		})
	}
}

// measure records the latencies of records sent from now on in h (nil:
// nowhere).
func (sp *steadyProducer) measure(h *Histogram) { sp.phase.Store(h) }

// waitAcked waits until the records of d at the producer's rate from now
// on are acknowledged, so the window covers d of acknowledgements whatever
// the producer's lag.
func (sp *steadyProducer) waitAcked(ctx context.Context, d time.Duration) {
	want := sp.acked.Load() + int64(d.Seconds()*steadyRate)
	for sp.acked.Load() < want && ctx.Err() == nil && sp.err() == nil {
		time.Sleep(10 * time.Millisecond) // the window is of time: nothing to wait on but the count
	}
}

// err is the producer's first error so far.
func (sp *steadyProducer) err() error {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.mu.err
}

// close stops the producer, waits for what it sent, and returns its first
// error. It may be called again.
func (sp *steadyProducer) close() error {
	sp.once.Do(func() {
		close(sp.stop)
		<-sp.done
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := sp.cl.Flush(ctx); err != nil {
			sp.mu.Lock()
			if sp.mu.err == nil {
				sp.mu.err = fmt.Errorf("steady producer: flush: %w", err)
			}
			sp.mu.Unlock()
		}
		sp.cl.Close()
	})
	return sp.err()
}
