package bench

// The end-to-end benchmark suite: the same workload, through franz-go over
// loopback, against an in-process sluice broker, franz-go's kfake and the
// null broker, interleaved (A B C A B C ...) so that whatever else the
// machine is doing falls on all of them alike. Each benchmark reports the
// median records/s of each broker and sluice's ratios to the others, and
// logs every round and the goal it is held against.
//
//	go test -run '^$' -bench . ./bench/
//	go test -run '^$' -bench 'Produce/p=8/acks=1' -sluice.brokers sluice \
//	    -cpuprofile cpu.out -memprofile mem.out ./bench/
//
// Each benchmark runs its rounds once, whatever b.N is (a round is a fixed
// record count; ns/op is reported as sluice's nanoseconds per record).

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var (
	flagRounds         = flag.Int("sluice.rounds", 5, "interleaved rounds per comparison")
	flagProduceRecords = flag.Int64("sluice.records", 1_000_000, "records per produce round")
	flagConsumeRecords = flag.Int64("sluice.consume-records", 2_000_000, "records in the warm log, read whole by each consume round")
	flagE2ERecords     = flag.Int64("sluice.e2e-records", 200_000, "records per e2e round (at 50,000 records/s)")
	flagBrokers        = flag.String("sluice.brokers", "sluice,kfake,null", "brokers to compare")
)

// The goals of issue #4 (100 B records, one node, no forced flush).
const (
	goalProduceRate  = 1_000_000 // records/s, 8 partitions, acks=1
	goalVsKfake      = 1.0
	goalVsNull       = 0.8
	goalConsumeRate  = 2_000_000 // records/s from a warm log
	goalE2EP99       = 5 * time.Millisecond
	e2eRate          = 50_000
	benchRecordBytes = 100
)

// benchCtx bounds one benchmark run.
func benchCtx(b *testing.B) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	b.Cleanup(cancel)
	return ctx
}

// runOn runs cfg against addr, failing the benchmark on error.
func runOn(b *testing.B, ctx context.Context, addr string, cfg Config) *Result {
	b.Helper()
	cfg.Brokers = []string{addr}
	return runAt(b, ctx, cfg)
}

// runAt runs cfg against its brokers, failing the benchmark on error.
func runAt(b *testing.B, ctx context.Context, cfg Config) *Result {
	b.Helper()
	res, err := Run(ctx, cfg)
	if err != nil {
		b.Fatalf("%s against %s: %v", cfg.Mode, strings.Join(cfg.Brokers, ","), err)
	}
	return res
}

// withAdmin runs fn with an admin client of the brokers at addrs.
func withAdmin(tb testing.TB, addrs []string, fn func(*kadm.Client)) {
	tb.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	fn(kadm.NewClient(cl))
}

// createTopicAt creates a topic through the brokers at addrs.
func createTopicAt(tb testing.TB, ctx context.Context, addrs []string, name string, partitions int32, rf int16, configs map[string]string) {
	tb.Helper()
	cfg := map[string]*string{}
	for k, v := range configs {
		cfg[k] = kadm.StringPtr(v)
	}
	withAdmin(tb, addrs, func(adm *kadm.Client) {
		resp, err := adm.CreateTopic(ctx, partitions, rf, cfg, name)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			tb.Fatalf("create topic %s: %v", name, err)
		}
	})
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT MET"
}

// cpuTime is the process's CPU time so far (user and system, every
// thread: client and broker alike).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cost is what has been spent so far: the CPU time of this process (the
// client and every in-process broker) and of the other processes named
// (ZooKeeper), and this process's heap allocations.
type cost struct {
	cpu     time.Duration
	mallocs uint64
}

func costNow(pids ...int) cost {
	c := cost{cpu: cpuTime()}
	for _, pid := range pids {
		if d, err := procCPU(pid); err == nil {
			c.cpu += d
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	c.mallocs = ms.Mallocs
	return c
}

// round is one run's figures.
type round struct {
	rate   float64 // records/s
	cpu    float64 // CPU ns per record (client + brokers + other processes measured)
	allocs float64 // heap allocations per record (client + in-process brokers)
}

// measure runs fn (one run returning its record count) and returns its
// records/s, CPU per record (this process's and pids') and allocations per
// record.
func measure(fn func() *Result, pids ...int) round {
	c0 := costNow(pids...)
	res := fn()
	c1 := costNow(pids...)
	n := float64(max(res.Records, 1))
	return round{rate: res.RecordsPerSec(), cpu: float64(c1.cpu-c0.cpu) / n, allocs: float64(c1.mallocs-c0.mallocs) / n}
}

// report logs a throughput comparison (at most ten lines: go test trims
// benchmark logs there) and reports each broker's median records/s and
// sluice's ratios to the others. The ratio judged against a goal is the
// median of the per-round ratios (each round's runs are adjacent in time,
// so they share the machine's load); the ratio of the medians is shown
// beside it. It returns the median rates and sluice's per-round ratios.
func report(b *testing.B, targets []target, rounds map[string][]round) (med, ratio map[string]float64) {
	var sb strings.Builder
	n := len(rounds[targets[0].name])
	fmt.Fprintf(&sb, "records/s, median | %d interleaved rounds; process CPU µs/record (client+broker), median:", n)
	med, ratio = map[string]float64{}, map[string]float64{}
	for _, t := range targets {
		rs := rounds[t.name]
		rates, cpus := make([]float64, len(rs)), make([]float64, len(rs))
		cells := make([]string, len(rs))
		for i, r := range rs {
			rates[i], cpus[i], cells[i] = r.rate, r.cpu, Count(int64(r.rate))
		}
		med[t.name] = median(rates)
		fmt.Fprintf(&sb, "\n  %-7s %11s | %s; CPU %.2f", t.name, Count(int64(med[t.name])), strings.Join(cells, " "), median(cpus)/1e3)
		b.ReportMetric(med[t.name], t.name+"-rec/s")
	}
	s := med["sluice"]
	if s == 0 {
		b.Log(sb.String())
		return med, ratio
	}
	b.ReportMetric(1e9/s, "ns/op")
	for _, t := range targets {
		if t.name == "sluice" || med[t.name] == 0 {
			continue
		}
		per := make([]float64, n)
		for i := range n {
			per[i] = rounds["sluice"][i].rate / rounds[t.name][i].rate
		}
		ratio[t.name] = median(per)
		fmt.Fprintf(&sb, "\n  sluice/%s: %.2fx (median of per-round ratios; ratio of medians %.2fx)", t.name, ratio[t.name], s/med[t.name])
		b.ReportMetric(ratio[t.name], "x-"+t.name)
	}
	b.Log(sb.String())
	return med, ratio
}

// BenchmarkProduce: 100 B records as fast as each broker acknowledges them,
// for 1 and 8 partitions and acks 1 and all; a fresh broker for every run.
func BenchmarkProduce(b *testing.B) {
	for _, p := range []int32{1, 8} {
		for _, acks := range []int{1, -1} {
			b.Run(fmt.Sprintf("p=%d/acks=%s", p, AcksString(acks)), func(b *testing.B) {
				benchProduce(b, p, acks)
			})
		}
	}
}

func benchProduce(b *testing.B, partitions int32, acks int) {
	targets := selectTargets(b, *flagBrokers, false)
	nullPartitions = partitions
	ctx := benchCtx(b)
	cfg := Config{Mode: Produce, Topic: "bench", Records: *flagProduceRecords, RecordBytes: benchRecordBytes,
		Partitions: partitions, Acks: acks, AcksSet: true}
	rounds := map[string][]round{}
	for range *flagRounds {
		for _, t := range targets {
			addr, stop, err := t.start(b)
			if err != nil {
				b.Fatalf("start %s: %v", t.name, err)
			}
			rounds[t.name] = append(rounds[t.name], measure(func() *Result { return runOn(b, ctx, addr, cfg) }))
			stop()
		}
	}
	med, ratio := report(b, targets, rounds)
	s := med["sluice"]
	if s == 0 {
		return
	}
	var goals []string
	if partitions == 8 && acks == 1 {
		goals = append(goals, fmt.Sprintf(">= %s records/s: %s", Count(goalProduceRate), verdict(s >= goalProduceRate)))
	}
	if k, ok := ratio["kfake"]; ok {
		goals = append(goals, fmt.Sprintf(">= %.1fx kfake: %s", goalVsKfake, verdict(k >= goalVsKfake)))
	}
	if n, ok := ratio["null"]; ok {
		goals = append(goals, fmt.Sprintf(">= %.1fx null: %s", goalVsNull, verdict(n >= goalVsNull)))
	}
	b.Log("goals: " + strings.Join(goals, "; "))
}

// BenchmarkConsume: each broker gets a warm log of -sluice.consume-records
// records (8 partitions, produced untimed), then every round reads it whole
// from the start with a new client.
func BenchmarkConsume(b *testing.B) {
	targets := selectTargets(b, *flagBrokers, true)
	ctx := benchCtx(b)
	addrs := map[string]string{}
	for _, t := range targets {
		addr, stop, err := t.start(b)
		if err != nil {
			b.Fatalf("start %s: %v", t.name, err)
		}
		b.Cleanup(stop)
		addrs[t.name] = addr
		runOn(b, ctx, addr, Config{Mode: Produce, Topic: "warm", Records: *flagConsumeRecords, RecordBytes: benchRecordBytes,
			Partitions: 8, Acks: 1, AcksSet: true})
	}
	rounds := map[string][]round{}
	for range *flagRounds {
		for _, t := range targets {
			rounds[t.name] = append(rounds[t.name], measure(func() *Result {
				return runOn(b, ctx, addrs[t.name], Config{Mode: Consume, Topic: "warm", Records: *flagConsumeRecords})
			}))
		}
	}
	med, _ := report(b, targets, rounds)
	if s, ok := med["sluice"]; ok {
		b.Logf("goal: >= %s records/s: %s", Count(goalConsumeRate), verdict(s >= goalConsumeRate))
	}
}

// BenchmarkE2E: produce and consume at once at a fixed 50,000 records/s,
// acks=all, 8 partitions, linger 0; latency from handing a record to the
// producer to the consumer seeing it (latencies.run: a failed round is
// counted, not fatal; the machine's scheduling noise is gauged beside).
func BenchmarkE2E(b *testing.B) {
	targets := selectTargets(b, *flagBrokers, true)
	ctx := benchCtx(b)
	addrs := map[string]string{}
	for _, t := range targets {
		addr, stop, err := t.start(b)
		if err != nil {
			b.Fatalf("start %s: %v", t.name, err)
		}
		b.Cleanup(stop)
		addrs[t.name] = addr
	}
	cfg := Config{Mode: E2E, Topic: "e2e", Records: *flagE2ERecords, RecordBytes: benchRecordBytes, Partitions: 8,
		Acks: -1, AcksSet: true, Rate: e2eRate}
	lat := map[string]*latencies{}
	for round := range *flagRounds {
		for _, t := range targets {
			if lat[t.name] == nil {
				lat[t.name] = &latencies{}
			}
			c := cfg
			c.Brokers = []string{addrs[t.name]}
			lat[t.name].run(ctx, round, c)
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "produce → consume at %s records/s, acks=all, ms, median of %d rounds (each round's p99 in brackets):", Count(e2eRate), *flagRounds)
	for _, t := range targets {
		lat[t.name].write(&sb, t.name)
		lat[t.name].report(b, t.name)
	}
	if l, ok := lat["sluice"]; ok {
		met := len(l.p99) > 0 && len(l.failed) == 0 && median(l.p99) <= ms(goalE2EP99)
		fmt.Fprintf(&sb, "\ngoal: sluice p99 (median of rounds) <= %v, no failed round: %s", goalE2EP99, verdict(met))
	}
	b.Log(sb.String())
}

// latencies are the quantiles of a broker's e2e rounds, in ms, and the
// rounds that failed.
type latencies struct {
	p50, p99, p999, max, noise []float64
	failed                     []string
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// run runs one e2e round of cfg and adds its quantiles, or its failure
// (not fatal: the other rounds and brokers still report). Beside it runs
// a gauge of the machine's own noise: how much a 1 ms sleep oversleeps
// (p99), which bounds what any broker's tail can show.
func (l *latencies) run(ctx context.Context, round int, cfg Config) {
	stopGauge := sleepGauge()
	res, err := Run(ctx, cfg)
	noise := stopGauge()
	if err != nil {
		l.failed = append(l.failed, fmt.Sprintf("round %d: %v", round+1, err))
		return
	}
	l.p50 = append(l.p50, ms(res.Latency.Quantile(0.5)))
	l.p99 = append(l.p99, ms(res.Latency.Quantile(0.99)))
	l.p999 = append(l.p999, ms(res.Latency.Quantile(0.999)))
	l.max = append(l.max, ms(res.Latency.Max()))
	l.noise = append(l.noise, ms(noise))
}

// write writes a line of the medians and of each round's p99.
func (l *latencies) write(sb *strings.Builder, name string) {
	p99s := make([]string, len(l.p99))
	for i, v := range l.p99 {
		p99s[i] = fmt.Sprintf("%.1f", v)
	}
	if len(l.p99) > 0 {
		fmt.Fprintf(sb, "\n  %-7s p50 %.2f  p99 %.1f  p99.9 %.1f  max %.1f  [%s]; 1 ms sleep oversleeps p99 %.1f",
			name, median(l.p50), median(l.p99), median(l.p999), median(l.max), strings.Join(p99s, " "), median(l.noise))
	}
	if len(l.failed) > 0 {
		fmt.Fprintf(sb, "\n  %-7s %d of %d rounds FAILED; %s", name, len(l.failed), len(l.failed)+len(l.p99), l.failed[0])
	}
}

// report reports the medians of the quantiles as name-p50-ms and so on.
func (l *latencies) report(b *testing.B, name string) {
	if len(l.p99) == 0 {
		return
	}
	b.ReportMetric(median(l.p50), name+"-p50-ms")
	b.ReportMetric(median(l.p99), name+"-p99-ms")
	b.ReportMetric(median(l.p999), name+"-p999-ms")
}

// sleepGauge measures, until the returned function is called, how much a
// 1 ms sleep oversleeps, and returns the p99: the scheduling noise of the
// machine (other processes, the runtime) during a latency run.
func sleepGauge() func() time.Duration {
	var h Histogram
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			default:
			}
			t0 := time.Now()
			time.Sleep(time.Millisecond)
			h.Record(time.Since(t0) - time.Millisecond)
		}
	}()
	return func() time.Duration {
		close(quit)
		<-done
		return h.Quantile(0.99)
	}
}
