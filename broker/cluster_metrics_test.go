package broker

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/sluice-io/sluice/config"
	"github.com/twmb/franz-go/pkg/kgo"
)

// waitMetric scrapes tb's /metrics until name (with labels) has want,
// failing after 30 s with the last value.
func waitMetric(t testing.TB, tb *testBroker, what, name string, want float64, labels ...string) {
	t.Helper()
	untilScraped(t, tb.MetricsAddr().String(), 30*time.Second, func(mfs map[string]*dto.MetricFamily) string {
		if v, ok := metricValue(mfs, name, labels...); !ok || v != want {
			return fmt.Sprintf("%s: broker %d %s = %v (present %v) after 30 s, want %v", what, tb.cfg.ID, name, v, ok, want)
		}
		return ""
	})
}

// TestClusterMetrics: only the controller's broker reports an active
// controller; a follower stopped makes the leader report its partitions
// under-replicated, and they are no longer once it rejoins (the leader
// counts the ISR expansion); every broker is ready.
func TestClusterMetrics(t *testing.T) {
	c := startCluster(t, 3, func(cfg *config.Config) { cfg.Observability.MetricsListen = "127.0.0.1:0" })
	ctx := ctxTimeout(t, 60*time.Second)
	const topic = "watched"
	c.createTopic(ctx, topic, 2, 3)

	md := metadataOf(t, c.broker(0))
	controller := md.ControllerID
	actives := 0
	for _, tb := range c.live() {
		want := 0.0
		if tb.cfg.ID == controller {
			want = 1
		}
		waitMetric(t, tb, "active controller", "kafka_controller_kafkacontroller_activecontrollercount", want)
		v, _ := metricValue(scrape(t, tb.MetricsAddr().String()), "kafka_controller_kafkacontroller_activecontrollercount")
		actives += int(v)
		if code, why, err := readyz(tb.MetricsAddr().String()); err != nil || code != http.StatusOK {
			t.Errorf("broker %d /readyz: %d %q %v", tb.cfg.ID, code, why, err)
		}
	}
	if actives != 1 {
		t.Fatalf("%d brokers report an active controller", actives)
	}

	// The leader of partition 0, and a follower that is not the controller.
	p0 := topicOf(md, topic).Partitions[0]
	leader := c.broker(p0.Leader)
	follower := int32(-1)
	for _, r := range p0.Replicas {
		if r != p0.Leader && r != controller {
			follower = r
		}
	}
	if follower < 0 { // of two followers at most one is the controller
		t.Fatalf("no follower of %s-0 besides the controller: %v", topic, p0.Replicas)
	}
	waitMetric(t, leader, "all in sync", "kafka_server_replicamanager_underreplicatedpartitions", 0)
	c.stopBroker(follower)
	// Every partition has the follower as a replica (RF 3 of 3), so each
	// the leader leads (its own, and any the follower's controlled shutdown
	// moved to it) is under-replicated.
	untilScraped(t, leader.MetricsAddr().String(), 30*time.Second, func(mfs map[string]*dto.MetricFamily) string {
		under, _ := metricValue(mfs, "kafka_server_replicamanager_underreplicatedpartitions")
		leads, _ := metricValue(mfs, "kafka_server_replicamanager_leadercount")
		if leads < 1 || under != leads {
			return fmt.Sprintf("broker %d stopped: leader %d reports %v under-replicated of %v led", follower, p0.Leader, under, leads)
		}
		return ""
	})
	// Records the follower must copy when it is back, acknowledged by the
	// two replicas left.
	var hooks batchBytes
	prod := clusterClient(t, c.bootstrap(), kgo.WithHooks(&hooks), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 20 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: fmt.Appendf(nil, "while away %d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produced := hooks.produced
	c.start(follower)
	waitMetric(t, leader, fmt.Sprintf("broker %d back", follower), "kafka_server_replicamanager_underreplicatedpartitions", 0)
	if v, _ := metricValue(scrape(t, leader.MetricsAddr().String()), "kafka_server_replicamanager_isrexpands_total"); v < 1 {
		t.Errorf("isrexpands_total %v on the leader after the follower rejoined, want at least 1", v)
	}
	// The follower copied what was produced while it was away: the leader
	// counts it out as replication, the follower in.
	untilScraped(t, leader.MetricsAddr().String(), 30*time.Second, func(mfs map[string]*dto.MetricFamily) string {
		if v, _ := metricValue(mfs, "kafka_server_brokertopicmetrics_replicationbytesout_total"); v < float64(produced) {
			return fmt.Sprintf("leader's replicationbytesout_total %v, want at least %d", v, produced)
		}
		return ""
	})
	untilScraped(t, c.broker(follower).MetricsAddr().String(), 30*time.Second, func(mfs map[string]*dto.MetricFamily) string {
		if v, _ := metricValue(mfs, "kafka_server_brokertopicmetrics_replicationbytesin_total"); v < float64(produced) {
			return fmt.Sprintf("follower's replicationbytesin_total %v, want at least %d", v, produced)
		}
		return ""
	})
	if v, _ := metricValue(scrape(t, c.broker(follower).MetricsAddr().String()), "kafka_server_brokertopicmetrics_bytesout_total"); v != 0 {
		t.Errorf("follower's bytesout_total %v: replication counted as consumers' bytes", v)
	}
	// A follower's fetch is counted when it is answered: at data, or after
	// replica.fetch.wait.max.ms.
	untilScraped(t, leader.MetricsAddr().String(), 30*time.Second, func(mfs map[string]*dto.MetricFamily) string {
		if sumOver(mfs, "kafka_network_requestmetrics_requests_total", "request", "FetchFollower") == 0 {
			return "the leader counts no FetchFollower request"
		}
		return ""
	})
}

// A leader's broker stopped: its controlled shutdown moves its
// leaderships, and the controller's broker counts each leader elected (and
// no unclean one); the other brokers count none.
func TestClusterMetricsLeaderElections(t *testing.T) {
	c := startCluster(t, 3, func(cfg *config.Config) { cfg.Observability.MetricsListen = "127.0.0.1:0" })
	ctx := ctxTimeout(t, 60*time.Second)
	const topic = "elected"
	c.createTopic(ctx, topic, 6, 2)
	const elections, unclean = "kafka_controller_controllerstats_leaderelectionrateandtimems", "kafka_controller_controllerstats_uncleanleaderelections_total"
	controller := metadataOf(t, c.broker(0)).ControllerID
	stopped := (controller + 1) % 3
	led := 0
	for _, p := range topicOf(metadataOf(t, c.broker(0)), topic).Partitions {
		if p.Leader == stopped {
			led++
		}
	}
	if led == 0 {
		t.Fatalf("broker %d leads no partition of %s", stopped, topic)
	}
	ctl := c.broker(controller)
	before, ok := metricValue(scrape(t, ctl.MetricsAddr().String()), elections)
	if !ok {
		t.Fatalf("the controller's broker has no %s", elections)
	}
	c.stopBroker(stopped)
	untilScraped(t, ctl.MetricsAddr().String(), 30*time.Second, func(mfs map[string]*dto.MetricFamily) string {
		if v, _ := metricValue(mfs, elections); v < before+float64(led) {
			return fmt.Sprintf("broker %d, leading %d partitions, stopped: the controller counts %v elections, %v before", stopped, led, v, before)
		}
		return ""
	})
	mfs := scrape(t, ctl.MetricsAddr().String())
	if v, ok := metricValue(mfs, unclean); !ok || v != 0 {
		t.Errorf("%s = %v (present %v) on the controller, want 0", unclean, v, ok)
	}
	if mf := mfs[elections]; len(mf.GetMetric()) != 1 || len(mf.Metric[0].GetSummary().GetQuantile()) != 6 {
		t.Errorf("%s is not a summary of six quantiles: %v", elections, mf)
	}
	other := c.broker(3 - controller - stopped)
	if v, _ := metricValue(scrape(t, other.MetricsAddr().String()), elections); v != 0 {
		t.Errorf("broker %d, not the controller, counts %v elections", other.cfg.ID, v)
	}
}
