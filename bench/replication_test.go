package bench

// The replication benchmarks of issue 15, on a 3-broker sluice cluster in
// this process (cluster_test.go: loopback, a real ZooKeeper) beside a
// single embedded node, through franz-go:
//
//   - produce: 100 B records as fast as they are acknowledged, 8
//     partitions, interleaved round by round: the single node acks=1, the
//     cluster's RF 1 topic acks=1, its RF 3 topic (min.insync.replicas 2)
//     acks=all; records/s, CPU per record of everything (this process: the
//     client and the brokers; ZooKeeper's from /proc) and heap
//     allocations per record (the client's are alike in every case, so
//     the difference is the brokers').
//   - catchup: a follower stopped while an RF 3 topic takes a backlog of
//     records, then started while a paced producer runs: records/s it
//     copies until it is back in every partition's ISR.
//   - e2e: produce → consume latency at 50,000 records/s, acks=all, RF 3
//     beside the single node, interleaved.
//
// Each benchmark runs its rounds once, whatever b.N is, on a cluster of its
// own; -count repeats it (a new cluster each time) for benchstat:
//
//	go test -run '^$' -bench 'Replication/' -count 6 -sluice.rounds 1 ./bench/ | tee repl.txt
//	benchstat repl.txt
//	go test -run '^$' -bench ReplicaAllocs ./bench/   # the replication path's allocations, exactly

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	flagCatchupRecords = flag.Int64("sluice.catchup-records", 2_000_000, "records an RF 3 topic takes while a follower is down, per catch-up round")
	flagCatchupRate    = flag.Float64("sluice.catchup-rate", 10_000, "records/s of the producer that runs while the follower catches up")
	flagReplicated     = flag.String("sluice.replicated", "single,rf1,rf3", "cases of the replicated produce benchmark (all three for its ratios; one to profile it)")
)

// The goals of issue 15.
const (
	goalReplicatedCPU    = 3.0 // RF 3 acks=all CPU per record / the single node's at acks=1
	goalReplicatedE2EP99 = 10 * time.Millisecond
)

// minISR2 is the RF 3 topics' configuration.
var minISR2 = map[string]string{"min.insync.replicas": "2"}

func BenchmarkReplication(b *testing.B) {
	b.Run("produce", benchReplicatedProduce)
	b.Run("catchup", benchCatchup)
	b.Run("e2e", benchReplicatedE2E)
}

// replicated is a case of the produce benchmark.
type replicated struct {
	name string
	rf   int16 // 0: the single node
	acks int
}

var replicatedCases = []replicated{{"single", 0, 1}, {"rf1", 1, 1}, {"rf3", 3, -1}}

// produceRotation is the case the next produce round starts with.
var produceRotation int

func benchReplicatedProduce(b *testing.B) {
	ctx := benchCtx(b)
	c, single := clusterAndSingle(b)
	var cases []replicated
	for _, k := range replicatedCases {
		if slices.Contains(strings.Split(*flagReplicated, ","), k.name) {
			cases = append(cases, k)
		}
	}
	rounds := map[string][]round{}
	for r := range *flagRounds {
		for i := range cases {
			// Each round starts with the next case (and so does the next
			// invocation's first): no case always runs first or last.
			k := cases[(i+produceRotation)%len(cases)]
			topic := fmt.Sprintf("%s-%d", k.name, r)
			addrs := []string{single}
			if k.rf == 0 {
				createTopicAt(b, ctx, addrs, topic, 8, 1, nil)
			} else {
				addrs = c.addrs()
				cfg := map[string]string(nil)
				if k.rf == 3 {
					cfg = minISR2
				}
				c.createTopic(ctx, topic, 8, k.rf, cfg)
			}
			cfg := Config{Brokers: addrs, Mode: Produce, Topic: topic, Records: *flagProduceRecords, RecordBytes: benchRecordBytes,
				Partitions: 8, Acks: k.acks, AcksSet: true}
			rounds[k.name] = append(rounds[k.name], measure(func() *Result { return runAt(b, ctx, cfg) }, c.zk.Pid()))
			// What is dirty is written back outside every measured window.
			// The round's topic stays (until the benchmark's end): a
			// deleted replicated topic's followers go on fetching it, from
			// a leader that answers UNKNOWN_TOPIC_OR_PARTITION, without
			// backoff, taking a core away from every later round.
			syscall.Sync()
		}
		produceRotation++
	}
	reportReplicated(b, cases, rounds)
}

// clusterAndSingle starts a 3-broker cluster and a single node, stopped
// at the benchmark's cleanup, and returns the single node's address.
func clusterAndSingle(b *testing.B) (*cluster, string) {
	c := startCluster(b, 3)
	single, stop, err := startSluice(b)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(stop)
	return c, single
}

// reportReplicated logs and reports each case's medians and, when every
// case ran, the per-round ratios of RF 3's CPU per record to the others'.
func reportReplicated(b *testing.B, cases []replicated, rounds map[string][]round) {
	var sb strings.Builder
	n := *flagRounds
	fmt.Fprintf(&sb, "medians of %d interleaved rounds; CPU of the process (client + brokers) and ZooKeeper:", n)
	defer func() { b.Log(sb.String()) }()
	for _, k := range cases {
		rs := rounds[k.name]
		rates, cpus, allocs := make([]float64, n), make([]float64, n), make([]float64, n)
		for i, r := range rs {
			rates[i], cpus[i], allocs[i] = r.rate, r.cpu, r.allocs
		}
		fmt.Fprintf(&sb, "\n  %-6s acks=%-3s %11s records/s  %7.0f CPU ns/record  %6.3f allocs/record", k.name, AcksString(k.acks),
			Count(int64(median(rates))), median(cpus), median(allocs))
		b.ReportMetric(median(rates), k.name+"-rec/s")
		b.ReportMetric(median(cpus), k.name+"-cpu-ns/rec")
		b.ReportMetric(median(allocs), k.name+"-allocs/rec")
	}
	if len(cases) < len(replicatedCases) {
		return // no ratios
	}
	perRound := func(f func(i int) float64) float64 {
		xs := make([]float64, n)
		for i := range n {
			xs[i] = f(i)
		}
		return median(xs)
	}
	rf3, rf1, single := rounds["rf3"], rounds["rf1"], rounds["single"]
	cpuVsSingle := perRound(func(i int) float64 { return rf3[i].cpu / single[i].cpu })
	cpuVsRF1 := perRound(func(i int) float64 { return rf3[i].cpu / rf1[i].cpu })
	rateVsSingle := perRound(func(i int) float64 { return rf3[i].rate / single[i].rate })
	rf1VsSingle := perRound(func(i int) float64 { return rf1[i].rate / single[i].rate })
	extraAllocs := perRound(func(i int) float64 { return rf3[i].allocs - rf1[i].allocs })
	fmt.Fprintf(&sb, "\n  rf3/single: CPU per record %.2fx, records/s %.2fx; rf3/rf1 CPU per record %.2fx; rf1/single records/s %.2fx (medians of per-round ratios)",
		cpuVsSingle, rateVsSingle, cpuVsRF1, rf1VsSingle)
	fmt.Fprintf(&sb, "\n  rf3 - rf1 allocations per record: %+.3f", extraAllocs)
	fmt.Fprintf(&sb, "\ngoal: rf3 acks=all CPU per record <= %.1fx single acks=1: %s", goalReplicatedCPU, verdict(cpuVsSingle <= goalReplicatedCPU))
	b.ReportMetric(cpuVsSingle, "rf3/single-cpu")
	b.ReportMetric(cpuVsRF1, "rf3/rf1-cpu")
	b.ReportMetric(rateVsSingle, "rf3/single-rate")
	b.ReportMetric(1e9/median(rates(rf3)), "ns/op")
}

func rates(rs []round) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = r.rate
	}
	return out
}

// benchCatchup: each round an RF 3 topic (min.insync.replicas 2) is
// created, a follower (not the controller) stopped, the backlog produced
// (acks=all, to the two left), then the follower started while a producer
// sends -sluice.catchup-rate records/s; the round ends when every
// partition's ISR holds the follower again (the leader lets it in once it
// has fetched up to the high watermark). Its rate is the records it then
// holds (the leader's high watermarks) over the time from its start, and
// over the time from its first copied byte (its start, registration and
// LeaderAndIsr excluded).
func benchCatchup(b *testing.B) {
	ctx := benchCtx(b)
	c := startCluster(b, 3)
	var fromStart, fromFirst, startup []float64
	for r := range *flagRounds {
		topic := fmt.Sprintf("catchup-%d", r)
		c.createTopic(ctx, topic, 8, 3, minISR2)
		md, err := c.metadata(ctx, 0)
		if err != nil {
			b.Fatal(err)
		}
		ctl := md.ControllerID
		f := (ctl + 1 + int32(r%2)) % 3 // not the controller; alternating
		c.stop(f)
		c.waitMetadata(topic+" without its stopped follower", inSync(topic, 8, 2, -1))
		runAt(b, ctx, Config{Brokers: c.addrs(), Mode: Produce, Topic: topic, Records: *flagCatchupRecords, RecordBytes: benchRecordBytes,
			Acks: -1, AcksSet: true})
		backlog := endOffsets(b, ctx, c.addrs(), topic)

		pctx, pcancel := context.WithCancel(ctx)
		pdone := make(chan struct{})
		go func() {
			defer close(pdone)
			Run(pctx, Config{Brokers: c.addrs(), Mode: Produce, Topic: topic, Records: 1 << 40, RecordBytes: benchRecordBytes,
				Acks: -1, AcksSet: true, Rate: *flagCatchupRate}) // ends with pctx: its error is that
		}()
		waitEnds(b, ctx, c.addrs(), topic, backlog) // the producer is running

		other := (f + 1) % 3 // holds every partition (RF 3)
		held, err := c.logSize(ctx, other, topic)
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		c.start(f)
		var first time.Time
		for !inSync(topic, 8, 3, f)(mustMetadata(b, ctx, c, ctl)) {
			if first.IsZero() {
				if n, err := c.logSize(ctx, f, topic); err == nil && n > 0 {
					first = time.Now()
				}
			}
			time.Sleep(5 * time.Millisecond) // ISR changes come from ZooKeeper: nothing to wait on from outside
		}
		t1 := time.Now()
		copied := endOffsets(b, ctx, c.addrs(), topic)
		if got, err := c.logSize(ctx, f, topic); err != nil || got < held {
			b.Fatalf("follower %d back in the ISR with %d bytes of the %d its peers held at its start (%v)", f, got, held, err)
		}
		pcancel()
		<-pdone
		if first.IsZero() {
			first = t1
		}
		fromStart = append(fromStart, float64(copied)/t1.Sub(t0).Seconds())
		fromFirst = append(fromFirst, float64(copied)/t1.Sub(first).Seconds())
		startup = append(startup, float64(first.Sub(t0))/1e6)
		b.Logf("round %d: follower %d copied %s records (%s before its start) in %.2f s, the first byte %.0f ms after its start",
			r+1, f, Count(copied), Count(backlog), t1.Sub(t0).Seconds(), startup[len(startup)-1])
		syscall.Sync() // the topic stays: see benchReplicatedProduce
	}
	b.Logf("catch-up, medians of %d rounds, a producer at %s records/s meanwhile: %s records/s from the follower's start, %s from its first copied byte (%.0f ms after its start)",
		len(fromStart), Count(int64(*flagCatchupRate)), Count(int64(median(fromStart))), Count(int64(median(fromFirst))), median(startup))
	b.ReportMetric(median(fromStart), "catchup-rec/s")
	b.ReportMetric(median(fromFirst), "copy-rec/s")
	b.ReportMetric(median(startup), "startup-ms")
}

func mustMetadata(b *testing.B, ctx context.Context, c *cluster, id int32) *kmsg.MetadataResponse {
	b.Helper()
	md, err := c.metadata(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	return md
}

// endOffsets is the sum of a topic's partitions' end offsets (their high
// watermarks).
func endOffsets(b *testing.B, ctx context.Context, addrs []string, topic string) int64 {
	b.Helper()
	var sum int64
	withAdmin(b, addrs, func(adm *kadm.Client) {
		l, err := adm.ListEndOffsets(ctx, topic)
		if err == nil {
			err = l.Error()
		}
		if err != nil {
			b.Fatalf("list end offsets of %s: %v", topic, err)
		}
		l.Each(func(o kadm.ListedOffset) { sum += o.Offset })
	})
	return sum
}

// waitEnds waits until a topic's end offsets sum past n.
func waitEnds(b *testing.B, ctx context.Context, addrs []string, topic string, n int64) {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for endOffsets(b, ctx, addrs, topic) <= n {
		if time.Now().After(deadline) {
			b.Fatalf("%s: no record past %d after 30 s", topic, n)
		}
		time.Sleep(10 * time.Millisecond) // records arriving: polled from outside
	}
}

// benchReplicatedE2E: produce → consume at 50,000 records/s, acks=all, 8
// partitions, linger 0, on the cluster's RF 3 topic (min.insync.replicas
// 2) and on the single node, interleaved round by round. A record reaches
// the consumer once the high watermark passes it: after both followers'
// next fetches.
func benchReplicatedE2E(b *testing.B) {
	ctx := benchCtx(b)
	c, single := clusterAndSingle(b)
	c.createTopic(ctx, "e2e-rf3", 8, 3, minISR2)
	createTopicAt(b, ctx, []string{single}, "e2e-single", 8, 1, nil)
	cfg := Config{Mode: E2E, Records: *flagE2ERecords, RecordBytes: benchRecordBytes, Partitions: 8, Acks: -1, AcksSet: true, Rate: e2eRate}
	cases := []struct {
		name, topic string
		addrs       []string
	}{{"single", "e2e-single", []string{single}}, {"rf3", "e2e-rf3", c.addrs()}}
	lat := map[string]*latencies{}
	for round := range *flagRounds {
		for _, k := range cases {
			if lat[k.name] == nil {
				lat[k.name] = &latencies{}
			}
			c := cfg
			c.Brokers, c.Topic = k.addrs, k.topic
			lat[k.name].run(ctx, round, c)
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "produce → consume at %s records/s, acks=all, ms, median of %d rounds (each round's p99 in brackets):", Count(e2eRate), *flagRounds)
	for _, k := range cases {
		lat[k.name].write(&sb, k.name)
		lat[k.name].report(b, k.name)
	}
	l := lat["rf3"]
	met := len(l.p99) > 0 && len(l.failed) == 0 && median(l.p99) <= float64(goalReplicatedE2EP99)/1e6
	fmt.Fprintf(&sb, "\ngoal: rf3 p99 (median of rounds) <= %v, no failed round: %s", goalReplicatedE2EP99, verdict(met))
	b.Log(sb.String())
}
