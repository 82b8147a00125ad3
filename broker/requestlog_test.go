package broker

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
)

// syncBuffer is a log destination shared by connection goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A Fetch that waits longer than log.slow.request.ms for data is logged at
// info as a slow request, with its API, version and client id; with
// metrics off the broker keeps no metrics.
func TestSlowRequestLog(t *testing.T) {
	var logs syncBuffer
	tb := startBroker(t, t.TempDir(), func(c *config.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) // info
		if _, err := c.Apply(map[string]string{"log.slow.request.ms": "100"}); err != nil {
			t.Fatal(err)
		}
	})
	if tb.metrics.reg != nil || tb.MetricsAddr() != nil {
		t.Fatal("metrics kept without metrics.listen")
	}
	id := tb.createTopic(t, "quiet", 1)
	rc := dialRaw(t, tb.addr)
	req := fetchReq("quiet", id, 0, 0, 1<<20)
	req.MaxWaitMillis, req.MinBytes = 300, 1
	start := time.Now()
	rc.roundTrip(req, 12)
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("the fetch answered after %v, before its max wait", took)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), `msg="slow request" api=Fetch version=12`) {
		if time.Now().After(deadline) {
			t.Fatalf("no slow-request line for the Fetch:\n%s", logs.String())
		}
		time.Sleep(5 * time.Millisecond) // the line is written after the response
	}
	if strings.Contains(logs.String(), `msg=request `) {
		t.Errorf("requests logged at info:\n%s", logs.String())
	}
}

// The observability keys as server.properties gives them; bad values are
// refused with the key named.
func TestObservabilityKeys(t *testing.T) {
	var c config.Config
	unknown, err := c.Apply(map[string]string{"metrics.listen": "0.0.0.0:9404", "metrics.pprof.enable": "true",
		"log.level": "DEBUG", "log.format": "json", "log.slow.request.ms": "250"})
	if err != nil || len(unknown) != 0 {
		t.Fatalf("Apply: %v %v", unknown, err)
	}
	want := config.ObservabilityConfig{MetricsListen: "0.0.0.0:9404", Pprof: true, LogLevel: "DEBUG", LogFormat: "json", SlowRequest: 250 * time.Millisecond}
	if c.Observability != want {
		t.Errorf("got %+v, want %+v", c.Observability, want)
	}
	for k, v := range map[string]string{"log.level": "loud", "log.format": "xml", "log.slow.request.ms": "-1", "metrics.pprof.enable": "yes"} {
		if _, err := c.Apply(map[string]string{k: v}); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v, want an error naming the key", k, v, err)
		}
	}
}
