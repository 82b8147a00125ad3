package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestCountAndMillis(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 1234567: "1,234,567", -45000: "-45,000"} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
	for d, want := range map[time.Duration]string{
		412 * time.Microsecond: "0.412 ms", 4120 * time.Microsecond: "4.12 ms",
		41200 * time.Microsecond: "41.2 ms", 412 * time.Millisecond: "412 ms",
	} {
		if got := Millis(d); got != want {
			t.Errorf("Millis(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestParseAcksAndCompression(t *testing.T) {
	for s, want := range map[string]int{"all": -1, "-1": -1, "1": 1, "0": 0, "ALL": -1} {
		if got, err := ParseAcks(s); err != nil || got != want {
			t.Errorf("ParseAcks(%q) = %d, %v", s, got, err)
		}
	}
	if _, err := ParseAcks("2"); err == nil {
		t.Error("acks 2 accepted")
	}
	for _, s := range []string{"", "none", "gzip", "snappy", "lz4", "zstd"} {
		if _, err := ParseCompression(s); err != nil {
			t.Errorf("ParseCompression(%q): %v", s, err)
		}
	}
	if _, err := ParseCompression("brotli"); err == nil {
		t.Error("brotli accepted")
	}
	if AcksString(-1) != "all" || AcksString(1) != "1" {
		t.Error("AcksString")
	}
}

func TestConfigDefaultsAndErrors(t *testing.T) {
	c, err := (&Config{Mode: Produce}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Records != 1_000_000 || c.RecordBytes != 100 || c.Partitions != 8 || c.Acks != -1 || c.Producers != 1 ||
		c.Compression != "none" || c.Inflight != 5 || c.Topic == "" || len(c.Brokers) != 1 || c.Linger != 0 {
		t.Errorf("defaults: %+v", c)
	}
	if c, _ := (&Config{Mode: Consume}).withDefaults(); c.Records != 0 {
		t.Errorf("consume default records %d, want 0 (all)", c.Records)
	}
	for name, bad := range map[string]Config{
		"mode":        {Mode: "fetch"},
		"acks":        {Mode: Produce, Acks: 2, AcksSet: true},
		"e2e size":    {Mode: E2E, RecordBytes: 4},
		"compression": {Mode: Produce, Compression: "brotli"},
		"rate":        {Mode: Produce, Rate: -1},
		"producers":   {Mode: Produce, Records: 2, Producers: 3},
	} {
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("%s: accepted %+v", name, bad)
		}
	}
}

func TestResultSummary(t *testing.T) {
	r := &Result{Mode: E2E, Topic: "t", Partitions: 8, Records: 50_000, RecordBytes: 100, Bytes: 5_000_000, Elapsed: time.Second, Rate: 50_000, Latency: &Histogram{}}
	r.Latency.Record(time.Millisecond)
	var buf bytes.Buffer
	r.WriteSummary(&buf)
	for _, want := range []string{"e2e: 50,000 records of 100 B in 1.00 s", "50,000 records/s, 5.0 MB/s", "target 50,000", "produce → consume", "p99.9 1.00 ms"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("summary %q lacks %q", buf.String(), want)
		}
	}
}

// runQuick runs a small benchmark against addr, failing the test on error.
func runQuick(t *testing.T, cfg Config) (*Result, string) {
	t.Helper()
	var progress bytes.Buffer
	cfg.Progress = &progress
	cfg.ProgressInterval = 5 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("%s: %v", cfg.Mode, err)
	}
	return res, progress.String()
}

func TestRunAgainstSluice(t *testing.T) {
	addr, stop, err := startSluice(t)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	const n = 20_000
	res, progress := runQuick(t, Config{Brokers: []string{addr}, Mode: Produce, Topic: "t", Records: n, Partitions: 4, Producers: 2, Acks: 1, AcksSet: true})
	if res.Records != n || res.Bytes != n*100 || res.Partitions != 4 || res.RecordsPerSec() <= 0 {
		t.Fatalf("produce result %+v", res)
	}
	if c := res.Latency.Count(); c < n/latencySample || c > n {
		t.Errorf("%d latency samples for %d records", c, n)
	}
	if progress != "" && !strings.Contains(progress, "records/s") {
		t.Errorf("progress lines: %q", progress)
	}
	// Consume everything: the records and the two producers' warm-up records.
	res, _ = runQuick(t, Config{Brokers: []string{addr}, Mode: Consume, Topic: "t"})
	if res.Records != n+2 || res.Latency != nil {
		t.Fatalf("consume result %+v", res)
	}
	var buf bytes.Buffer
	res.WriteSummary(&buf)
	if !strings.Contains(buf.String(), "consume: 20,002 records") {
		t.Errorf("summary %q", buf.String())
	}
	// A topic that does not exist has nothing to consume.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := Run(ctx, Config{Brokers: []string{addr}, Mode: Consume, Topic: "missing"}); err == nil {
		t.Error("consuming a missing topic succeeded")
	}
}

func TestRunE2EAgainstKfake(t *testing.T) {
	addr, stop, err := startKfake(t)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	const n = 4000
	res, _ := runQuick(t, Config{Brokers: []string{addr}, Mode: E2E, Topic: "e", Records: n, Partitions: 2, Rate: 20_000})
	if res.Records != n || res.Latency.Count() != n {
		t.Fatalf("e2e: %d records, %d latencies", res.Records, res.Latency.Count())
	}
	if d := res.Elapsed; d < 150*time.Millisecond {
		t.Errorf("%d records at 20,000/s took %v", n, d)
	}
	if res.Latency.Min() <= 0 || res.Latency.Max() > 10*time.Second {
		t.Errorf("latencies min %v max %v", res.Latency.Min(), res.Latency.Max())
	}
}

func TestRunProduceAgainstNull(t *testing.T) {
	nullPartitions = 3
	addr, stop, err := startNull(t)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	for _, acks := range []int{0, 1, -1} {
		res, _ := runQuick(t, Config{Brokers: []string{addr}, Mode: Produce, Topic: "n", Records: 10_000, Partitions: 8, Acks: acks, AcksSet: true, Compression: "lz4"})
		if res.Records != 10_000 || res.Partitions != 3 {
			t.Fatalf("acks=%d: %+v", acks, res)
		}
	}
}
