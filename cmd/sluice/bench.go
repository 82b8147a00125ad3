package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-io/sluice/bench"
)

const benchUsage = `usage: sluice bench produce|consume|e2e [flags]

  produce   send --records records as fast as the broker acknowledges them
            (or at --rate); latency is produce → acknowledgement (of every
            16th record when unpaced)
  consume   read --records records (default: all) from the start of the topic
  e2e       produce at --rate and consume at once; latency is produce → consume,
            the send time travels in each record's first 8 bytes

Works against any Kafka-compatible broker. Idempotent production is off unless
--idempotent (the figures in BENCHMARKS.md were taken without it).

flags:
`

// benchFlags are sluice bench's flags.
type benchFlags struct {
	fs          *flag.FlagSet
	brokers     string
	cmdConfig   string
	topic       string
	records     int64
	recordSize  int
	partitions  int
	acks        string
	producers   int
	compression string
	rate        float64
	linger      time.Duration
	inflight    int
	idempotent  bool
	progress    time.Duration
}

func newBenchFlags(out io.Writer) *benchFlags {
	f := &benchFlags{fs: flag.NewFlagSet("sluice bench", flag.ContinueOnError)}
	fs := f.fs
	fs.SetOutput(out)
	fs.Usage = func() { fmt.Fprint(out, benchUsage); fs.PrintDefaults() }
	fs.StringVar(&f.brokers, "brokers", "localhost:9092", "comma-separated seed brokers")
	fs.StringVar(&f.cmdConfig, "command-config", "", "Kafka client properties `file`: security.protocol, sasl.*, ssl.* (PEM)")
	fs.StringVar(&f.topic, "topic", "sluice-bench", "topic (produce and e2e create it if missing)")
	fs.Int64Var(&f.records, "records", 0, "records to measure (0: produce 1000000, e2e 500000, consume every record in the topic)")
	fs.IntVar(&f.recordSize, "record-size", 100, "bytes of each record's value (random bytes; e2e needs 8 or more)")
	fs.IntVar(&f.partitions, "partitions", 8, "partitions of a topic the run creates")
	fs.StringVar(&f.acks, "acks", "all", "acks: all, 1 or 0")
	fs.IntVar(&f.producers, "producers", 1, "producer clients, each with its own connections, sharing --records and --rate")
	fs.StringVar(&f.compression, "compression", "none", "none, gzip, snappy, lz4 or zstd")
	fs.Float64Var(&f.rate, "rate", 0, "target records/s over all producers (0: as fast as possible)")
	fs.DurationVar(&f.linger, "linger", 0, "producer linger (franz-go's own default is 10ms)")
	fs.IntVar(&f.inflight, "inflight", 5, "produce requests in flight per broker and producer")
	fs.BoolVar(&f.idempotent, "idempotent", false, "use the idempotent producer (the broker must serve InitProducerId)")
	fs.DurationVar(&f.progress, "progress", time.Second, "interval of the progress lines")
	return f
}

// config turns the parsed flags into a bench.Config.
func (f *benchFlags) config(mode bench.Mode) (bench.Config, error) {
	cfg := bench.Config{
		Mode:             mode,
		Brokers:          strings.Split(f.brokers, ","),
		Topic:            f.topic,
		Records:          f.records,
		RecordBytes:      f.recordSize,
		Partitions:       int32(f.partitions),
		Producers:        f.producers,
		Compression:      f.compression,
		Rate:             f.rate,
		Linger:           f.linger,
		Inflight:         f.inflight,
		Idempotent:       f.idempotent,
		ProgressInterval: f.progress,
		AcksSet:          true,
	}
	var err error
	if cfg.Acks, err = bench.ParseAcks(f.acks); err != nil {
		return cfg, err
	}
	if _, err = bench.ParseCompression(f.compression); err != nil {
		return cfg, err
	}
	if f.records < 0 || f.recordSize <= 0 || f.partitions <= 0 || f.producers <= 0 || f.inflight <= 0 || f.progress <= 0 {
		return cfg, fmt.Errorf("--records must not be negative; --record-size, --partitions, --producers, --inflight and --progress must be positive")
	}
	if mode == bench.E2E && f.records == 0 {
		cfg.Records = 500_000
	}
	if f.cmdConfig != "" {
		cc, err := loadCommandConfig(f.cmdConfig)
		if err != nil {
			return cfg, err
		}
		cfg.ClientOpts = cc.opts()
	}
	return cfg, nil
}

func runBench(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		newBenchFlags(stdout).fs.Usage()
		return 0
	}
	if len(args) == 0 {
		newBenchFlags(stderr).fs.Usage()
		return 2
	}
	mode := bench.Mode(args[0])
	switch mode {
	case bench.Produce, bench.Consume, bench.E2E:
	default:
		fmt.Fprintf(stderr, "sluice bench: unknown mode %q\n\n", args[0])
		newBenchFlags(stderr).fs.Usage()
		return 2
	}
	f := newBenchFlags(stderr)
	if err := f.fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if f.fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sluice bench: unexpected argument %q\n", f.fs.Arg(0))
		return 2
	}
	cfg, err := f.config(mode)
	if err != nil {
		fmt.Fprintf(stderr, "sluice bench: %v\n", err)
		return 2
	}
	cfg.Progress = stdout

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(stdout, "sluice bench %s: brokers %s, topic %s", mode, f.brokers, cfg.Topic)
	if mode != bench.Consume {
		fmt.Fprintf(stdout, ", %d B records, acks=%s, %d producer(s), compression %s",
			cfg.RecordBytes, bench.AcksString(cfg.Acks), cfg.Producers, cfg.Compression)
	}
	if cfg.Rate > 0 {
		fmt.Fprintf(stdout, ", target %s records/s", bench.Count(int64(cfg.Rate)))
	}
	fmt.Fprintln(stdout)
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "sluice bench %s: %v\n", mode, err)
		return 1
	}
	res.WriteSummary(stdout)
	return 0
}
