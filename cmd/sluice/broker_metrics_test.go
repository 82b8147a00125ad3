package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The binary with --metrics-addr, --log-format json and log.level=debug
// from its server.properties: it logs JSON, each request at debug, serves
// /metrics with the records produced, and /readyz once it listens.
func TestBrokerBinaryMetricsAndLogs(t *testing.T) {
	bin := buildSluice(t)
	dir := t.TempDir()
	props := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(props, []byte("log.level=debug\nlog.dirs="+filepath.Join(dir, "data")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "broker", "--config", props, "--listen", "127.0.0.1:0",
		"--metrics-addr", "127.0.0.1:0", "--log-format", "json")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	type line struct {
		Level, Msg, Addr, API string
	}
	lines := make(chan line, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var l line
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Errorf("not a JSON log line: %q", sc.Text())
				continue
			}
			select {
			case lines <- l:
			default:
			}
		}
	}()
	var addr, maddr string
	for addr == "" || maddr == "" {
		select {
		case l := <-lines:
			switch l.Msg {
			case "sluice broker listening":
				addr = l.Addr
			case "serving metrics":
				maddr = l.Addr
			}
		case <-ctx.Done():
			t.Fatal("the broker never said where it listens and serves metrics")
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DisableIdempotentWrite(), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "events", Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	cl.Close()
	for sawProduce := false; !sawProduce; {
		select {
		case l := <-lines:
			sawProduce = l.Msg == "request" && l.Level == "DEBUG" && l.API == "Produce"
		case <-ctx.Done():
			t.Fatal("no debug log of a Produce request")
		}
	}
	for _, path := range []string{"/readyz", "/metrics"} {
		resp, err := http.Get("http://" + maddr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
		if path == "/metrics" && !strings.Contains(string(body), `kafka_server_brokertopicmetrics_messagesin_total{topic="events"} 3`) {
			t.Errorf("/metrics has no 3 messages in for events:\n%s", body)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("broker did not exit 0 after SIGTERM: %v", err)
	}
}
