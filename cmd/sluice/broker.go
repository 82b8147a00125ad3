package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluice-io/sluice/broker"
	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/engine"
)

func runBroker(args []string, stdout, stderr io.Writer) int {
	return runBrokerOn(args, stdout, stderr, nil)
}

// runBrokerOn is runBroker with its logs in the file system fsys, the
// engine's seam (nil: the operating system's): a test's faulty disk.
func runBrokerOn(args []string, stdout, stderr io.Writer, fsys engine.FS) int {
	fs := flag.NewFlagSet("sluice broker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "", "address to listen on (default localhost:9092; with listeners= in --config, the first listener's)")
	advertise := fs.String("advertise", "", "address clients are told to connect to (default: the listen address)")
	data := fs.String("data", "", "data directory (default ./sluice-data)")
	id := fs.Int("id", -1, "broker id (default 0)")
	configFile := fs.String("config", "", "server.properties file with Kafka's key names")
	zookeeper := fs.String("zookeeper", "", "ZooKeeper to join a cluster through, host:port[,host:port...][/chroot] (default: none, a single node)")
	rack := fs.String("rack", "", "this broker's rack (broker.rack)")
	verbose := fs.Bool("v", false, "log debug events (as --log-level debug)")
	metricsAddr := fs.String("metrics-addr", "", "HOST:PORT to serve /metrics, /healthz and /readyz on (metrics.listen; default: none)")
	pprofOn := fs.Bool("pprof", false, "also serve /debug/pprof on the metrics address (metrics.pprof.enable)")
	logLevel := fs.String("log-level", "", "debug, info, warn or error (log.level; default info)")
	logFormat := fs.String("log-format", "", "text or json (log.format; default text)")
	if err := fs.Parse(args); err != nil {
		return 2
	}

	var cfg config.Config
	var unknown []string
	if *configFile != "" {
		f, err := os.Open(*configFile)
		if err != nil {
			fmt.Fprintf(stderr, "sluice broker: %v\n", err)
			return 1
		}
		props, err := config.ParseProperties(f)
		f.Close()
		if err == nil {
			unknown, err = cfg.Apply(props)
		}
		if err != nil {
			fmt.Fprintf(stderr, "sluice broker: %s: %v\n", *configFile, err)
			return 1
		}
	}
	obs := &cfg.Observability
	if *metricsAddr != "" {
		obs.MetricsListen = *metricsAddr
	}
	if *pprofOn {
		obs.Pprof = true
	}
	if *logLevel != "" {
		obs.LogLevel = *logLevel
	}
	if *verbose {
		obs.LogLevel = "debug"
	}
	if *logFormat != "" {
		obs.LogFormat = *logFormat
	}
	logger, err := newLogger(*obs, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "sluice broker: %v\n", err)
		return 2
	}
	for _, k := range unknown {
		logger.Warn("ignoring unknown configuration key", "key", k, "file", *configFile)
	}
	// Flags override the file.
	if *listen != "" {
		cfg.Listen = *listen
		if len(cfg.Listeners) > 0 {
			cfg.Listeners[0].Addr = *listen // the first listener's address
		}
	}
	if *advertise != "" {
		cfg.Advertise = *advertise
	}
	if *data != "" {
		cfg.DataDir = *data
	}
	if *id >= 0 {
		cfg.ID = int32(*id)
	}
	if *zookeeper != "" {
		cfg.Cluster.ZooKeeper = *zookeeper
	}
	if *rack != "" {
		cfg.Cluster.Rack = *rack
	}
	cfg.Logger = logger
	cfg.FS = fsys

	b, err := broker.New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "sluice broker: %v\n", err)
		return 1
	}
	served := make(chan error, 1)
	go func() { served <- b.ListenAndServe() }()

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case err := <-served:
		b.Close()
		if err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintf(stderr, "sluice broker: %v\n", err)
			return 1
		}
		return 0
	case s := <-sig:
		logger.Info("shutting down", "signal", s.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Shutdown(ctx); err != nil {
		fmt.Fprintf(stderr, "sluice broker: shutdown: %v\n", err)
		return 1
	}
	logger.Info("stopped cleanly")
	return 0
}

// newLogger is the broker's logger as log.level and log.format ask.
func newLogger(obs config.ObservabilityConfig, w io.Writer) (*slog.Logger, error) {
	level, err := config.ParseLogLevel(obs.LogLevel)
	if err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: level}
	switch obs.LogFormat {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log format %q: text or json", obs.LogFormat)
}
