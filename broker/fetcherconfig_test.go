package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/config"
)

// The fetcher keys parse with Kafka's names and defaults, bad values are
// refused, and a fetch wait longer than replica.lag.time.max.ms is refused
// at start as Kafka refuses it.
func TestFetcherConfigKeys(t *testing.T) {
	var c config.Config
	if _, err := c.Apply(map[string]string{
		"replica.fetch.max.bytes": "2048", "replica.fetch.response.max.bytes": "4096", "replica.fetch.min.bytes": "10",
		"replica.fetch.wait.max.ms": "250", "replica.fetch.backoff.ms": "20", "num.replica.fetchers": "4",
	}); err != nil {
		t.Fatal(err)
	}
	want := config.FetcherConfig{MaxBytes: 2048, ResponseMaxBytes: 4096, MinBytes: 10, WaitMax: 250 * time.Millisecond, Backoff: 20 * time.Millisecond, Fetchers: 4}
	if got := c.Cluster.Fetch.WithDefaults(); got != want {
		t.Fatalf("applied %+v, want %+v", got, want)
	}
	def := config.FetcherConfig{}.WithDefaults()
	if kafka := (config.FetcherConfig{MaxBytes: 1 << 20, ResponseMaxBytes: 10 << 20, MinBytes: 1, WaitMax: 500 * time.Millisecond, Backoff: time.Second, Fetchers: 1}); def != kafka {
		t.Fatalf("defaults %+v, want Kafka's %+v", def, kafka)
	}
	for k, v := range map[string]string{"num.replica.fetchers": "0", "replica.fetch.min.bytes": "0", "replica.fetch.wait.max.ms": "x", "replica.fetch.max.bytes": "-1"} {
		var c config.Config
		if _, err := c.Apply(map[string]string{k: v}); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v, want an error naming the key", k, v, err)
		}
	}
	bad := config.Config{DataDir: t.TempDir(), Cluster: config.ClusterConfig{ZooKeeper: "127.0.0.1:1", ReplicaLagTimeMax: time.Second, Fetch: config.FetcherConfig{WaitMax: 2 * time.Second}}}
	if _, err := New(bad); err == nil || !strings.Contains(err.Error(), "replica.fetch.wait.max.ms") {
		t.Fatalf("a fetch wait above the lag time: %v, want an error naming replica.fetch.wait.max.ms", err)
	}
}
