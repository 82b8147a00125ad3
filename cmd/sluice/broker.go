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
)

func runBroker(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice broker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "", "address to listen on (default localhost:9092)")
	advertise := fs.String("advertise", "", "address clients are told to connect to (default: the listen address)")
	data := fs.String("data", "", "data directory (default ./sluice-data)")
	id := fs.Int("id", -1, "broker id (default 0)")
	config := fs.String("config", "", "server.properties file with Kafka's key names")
	zookeeper := fs.String("zookeeper", "", "ZooKeeper to join a cluster through, host:port[,host:port...][/chroot] (default: none, a single node)")
	rack := fs.String("rack", "", "this broker's rack (broker.rack)")
	verbose := fs.Bool("v", false, "log debug events")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	var cfg broker.Config
	if *config != "" {
		f, err := os.Open(*config)
		if err != nil {
			fmt.Fprintf(stderr, "sluice broker: %v\n", err)
			return 1
		}
		props, err := broker.ParseProperties(f)
		f.Close()
		if err == nil {
			var unknown []string
			unknown, err = cfg.Apply(props)
			for _, k := range unknown {
				logger.Warn("ignoring unknown configuration key", "key", k, "file", *config)
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "sluice broker: %s: %v\n", *config, err)
			return 1
		}
	}
	// Flags override the file.
	if *listen != "" {
		cfg.Listen = *listen
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
