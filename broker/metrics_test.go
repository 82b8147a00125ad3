package broker

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/sluice-io/sluice/config"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// scrape reads addr's /metrics with Prometheus's text parser.
func scrape(t testing.TB, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return mfs
}

// metricValue is the value of the series of name whose labels are exactly
// labels ("k=v" each), and whether it exists.
func metricValue(mfs map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
	for _, m := range mf.Metric {
		if len(m.Label) != len(labels) {
			continue
		}
		match := true
		for i, l := range m.Label {
			if l.GetName()+"="+l.GetValue() != labels[i] {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		case m.Summary != nil:
			return float64(m.Summary.GetSampleCount()), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// sumOver adds the values of name's series that have label=value.
func sumOver(mfs map[string]*dto.MetricFamily, name, label, value string) float64 {
	var sum float64
	for _, m := range mfs[name].GetMetric() {
		for _, l := range m.Label {
			if l.GetName() == label && l.GetValue() == value {
				switch {
				case m.Counter != nil:
					sum += m.Counter.GetValue()
				case m.Summary != nil:
					sum += float64(m.Summary.GetSampleCount())
				}
			}
		}
	}
	return sum
}

// untilScraped scrapes addr until bad returns "", failing with its last
// answer after within.
func untilScraped(t testing.TB, addr string, within time.Duration, bad func(map[string]*dto.MetricFamily) string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		why := bad(scrape(t, addr))
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(why)
		}
		time.Sleep(5 * time.Millisecond) // polling an endpoint, with a deadline
	}
}

func readyz(addr string) (int, string, error) {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body)), nil
}

// batchBytes counts what a franz-go client wrote and read, in record-batch
// bytes (its hooks leave out the 61-byte batch header).
type batchBytes struct {
	mu                sync.Mutex
	produced, fetched int64
	records           int
}

func (h *batchBytes) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	h.mu.Lock()
	h.produced += int64(m.CompressedBytes) + 61
	h.mu.Unlock()
}

func (h *batchBytes) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	h.mu.Lock()
	h.fetched += int64(m.CompressedBytes) + 61
	h.records += m.NumRecords
	h.mu.Unlock()
}

// TestMetricsProduceFetch: after N records produced and consumed, /metrics
// counts N messages in, the bytes the client sent and read, and the
// requests per API; /readyz is not ready before the broker serves and once
// its shutdown began; /healthz answers.
func TestMetricsProduceFetch(t *testing.T) {
	cfg := config.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	cfg.Observability.MetricsListen = "127.0.0.1:0"
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	maddr := b.MetricsAddr().String()
	if code, why, err := readyz(maddr); err != nil || code != http.StatusServiceUnavailable || why != "not listening yet" {
		t.Fatalf("/readyz before Serve: %d %q %v, want 503 not listening yet", code, why, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- b.Serve(ln) }()
	closed := false
	t.Cleanup(func() {
		if !closed {
			b.Close()
		}
	})
	tb := &testBroker{Broker: b, addr: ln.Addr().String()}
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, _, err := readyz(maddr)
		if err == nil && code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz not ready after Serve: %d %v", code, err)
		}
		time.Sleep(5 * time.Millisecond) // polling an endpoint, with a deadline
	}
	resp, err := http.Get("http://" + maddr + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %v %v", resp, err)
	}
	resp.Body.Close()

	const topic, n = "metered", 500
	ctx := ctxTimeout(t, 30*time.Second)
	if _, err := tb.admin(t).CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var hooks batchBytes
	prod := tb.client(t, kgo.WithHooks(&hooks), kgo.DefaultProduceTopic(topic))
	for i := range n {
		r := &kgo.Record{Key: fmt.Appendf(nil, "k%d", i%7), Value: fmt.Appendf(nil, "value %d", i)}
		prod.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
		if i%50 == 49 {
			if err := prod.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	cons := tb.ownClient(t, kgo.WithHooks(&hooks), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < n {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	cons.Close()

	mfs := scrape(t, maddr)
	const btm = "kafka_server_brokertopicmetrics_"
	check := func(name string, want float64, labels ...string) {
		t.Helper()
		if v, ok := metricValue(mfs, name, labels...); !ok || v != want {
			t.Errorf("%s%v = %v (present %v), want %v", name, labels, v, ok, want)
		}
	}
	for _, labels := range [][]string{{"topic=" + topic}, nil} {
		check(btm+"messagesin_total", n, labels...)
		check(btm+"bytesin_total", float64(hooks.produced), labels...)
		check(btm+"bytesout_total", float64(hooks.fetched), labels...)
		check(btm+"failedproducerequests_total", 0, labels...)
	}
	if hooks.records != n {
		t.Errorf("consumer read %d records, want %d", hooks.records, n)
	}
	var size, end float64
	for p := range 3 {
		s, _ := metricValue(mfs, "kafka_log_log_size", "partition="+fmt.Sprint(p), "topic="+topic)
		e, _ := metricValue(mfs, "kafka_log_log_logendoffset", "partition="+fmt.Sprint(p), "topic="+topic)
		size, end = size+s, end+e
		check("kafka_log_log_numlogsegments", 1, "partition="+fmt.Sprint(p), "topic="+topic)
		check("kafka_log_log_logstartoffset", 0, "partition="+fmt.Sprint(p), "topic="+topic)
	}
	if size != float64(hooks.produced) || end != n {
		t.Errorf("logs hold %v bytes to offset sum %v, want %d bytes and %d records", size, end, hooks.produced, n)
	}
	// A request is counted once its response is written, after the client
	// may have read it: scrape until the counts settle.
	untilScraped(t, maddr, 10*time.Second, func(mfs map[string]*dto.MetricFamily) string {
		for _, api := range []string{"Produce", "Fetch", "FetchConsumer", "Metadata", "ApiVersions", "CreateTopics"} {
			reqs := sumOver(mfs, "kafka_network_requestmetrics_requests_total", "request", api)
			timed := sumOver(mfs, "kafka_network_requestmetrics_totaltimems", "request", api)
			hist, _ := metricValue(mfs, "sluice_request_duration_seconds", "request="+api)
			if reqs == 0 || timed != reqs || hist != reqs {
				return fmt.Sprintf("%s: %v requests, %v timed, %v in the histogram", api, reqs, timed, hist)
			}
		}
		return ""
	})
	if mf := mfs["kafka_network_requestmetrics_totaltimems"]; mf == nil || len(mf.Metric[0].GetSummary().GetQuantile()) != 6 {
		t.Errorf("totaltimems has no six quantiles: %v", mf)
	}
	check("kafka_server_replicamanager_partitioncount", 3)
	check("kafka_server_replicamanager_leadercount", 3)
	check("kafka_server_replicamanager_underreplicatedpartitions", 0)
	check("kafka_controller_kafkacontroller_activecontrollercount", 1)
	// The admin's and the producer's clients are connected (franz-go may
	// hold more than one connection each).
	if v, _ := metricValue(mfs, "kafka_server_socket_server_metrics_connection_count", "listener=PLAINTEXT", "networkprocessor=0"); v < 2 {
		t.Errorf("connection_count %v, want at least 2", v)
	}
	if _, ok := mfs["go_goroutines"]; !ok {
		t.Error("no Go runtime metrics")
	}
	if _, ok := mfs["process_cpu_seconds_total"]; !ok {
		t.Error("no process metrics")
	}

	// Failures: a damaged batch counts against its topic and the broker, a
	// partition that does not exist against the broker alone.
	rc := dialRaw(t, tb.addr)
	damaged := batch("x")
	damaged[len(damaged)-1] ^= 0xff
	code, _ := rc.produceCode(9, topic, 0, damaged)
	wantCode(t, "damaged batch", code, kerr.CorruptMessage)
	code, _ = rc.produceCode(9, topic, 7, batch("x"))
	wantCode(t, "missing partition", code, kerr.UnknownTopicOrPartition)
	fr := rc.roundTrip(fetchReq(topic, [16]byte{}, 9, 0, 1<<20), 12).(*kmsg.FetchResponse)
	wantCode(t, "fetch of a missing partition", fr.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
	mfs = scrape(t, maddr)
	check(btm+"failedproducerequests_total", 1, "topic="+topic)
	check(btm+"failedproducerequests_total", 2)
	check(btm+"failedfetchrequests_total", 0, "topic="+topic)
	check(btm+"failedfetchrequests_total", 1)
	check(btm+"messagesin_total", n)
	untilScraped(t, maddr, 10*time.Second, func(mfs map[string]*dto.MetricFamily) string {
		p, _ := metricValue(mfs, "kafka_network_requestmetrics_requests_total", "request=Produce", "version=9")
		f, _ := metricValue(mfs, "kafka_network_requestmetrics_requests_total", "request=Fetch", "version=12")
		if p != 2 || f != 1 {
			return fmt.Sprintf("Produce v9 %v, Fetch v12 %v, want 2 and 1", p, f)
		}
		return ""
	})

	closed = true
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	b.metrics.srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable || strings.TrimSpace(rec.Body.String()) != "shutting down" {
		t.Errorf("/readyz after Close: %d %q, want 503 shutting down", rec.Code, rec.Body.String())
	}
	if resp, err := http.Get("http://" + maddr + "/healthz"); err == nil {
		resp.Body.Close()
		t.Error("metrics listener still up after Close")
	}
}

// /debug/pprof is served only with metrics.pprof.enable.
func TestMetricsPprof(t *testing.T) {
	for _, on := range []bool{false, true} {
		tb := startBroker(t, t.TempDir(), func(c *config.Config) {
			c.Observability.MetricsListen, c.Observability.Pprof = "127.0.0.1:0", on
		})
		resp, err := http.Get("http://" + tb.MetricsAddr().String() + "/debug/pprof/goroutine?debug=1")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := resp.StatusCode == http.StatusOK && strings.Contains(string(body), "goroutine profile"); got != on {
			t.Errorf("pprof %v: %d %.80q", on, resp.StatusCode, body)
		}
	}
}

// kafka_log_logflushstats_logflushrateandtimems times each flush of a log:
// records produced to a topic of flush.messages=1 raise its count by one
// each (sequential produces, one sync round each), those to a topic
// without a flush policy not at all.
func TestMetricsLogFlush(t *testing.T) {
	tb := startBroker(t, t.TempDir(), func(c *config.Config) { c.Observability.MetricsListen = "127.0.0.1:0" })
	ctx := ctxTimeout(t, 30*time.Second)
	one := "1"
	adm := tb.admin(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"flush.messages": &one}, "durable"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "plain"); err != nil {
		t.Fatal(err)
	}
	const flushes = "kafka_log_logflushstats_logflushrateandtimems"
	count := func() float64 {
		t.Helper()
		mfs := scrape(t, tb.MetricsAddr().String())
		if q := mfs[flushes].GetMetric(); len(q) != 1 || len(q[0].GetSummary().GetQuantile()) != 6 {
			t.Fatalf("%s is not a summary of six quantiles: %v", flushes, mfs[flushes])
		}
		v, _ := metricValue(mfs, flushes)
		return v
	}
	prod := tb.client(t)
	produce := func(topic string, n int) {
		t.Helper()
		for i := range n {
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "r%d", i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := count()
	produce("plain", 5)
	if got := count(); got != before {
		t.Errorf("records to a topic without a flush policy: %v flushes, %v before", got, before)
	}
	produce("durable", 5)
	if got := count(); got != before+5 {
		t.Errorf("5 records produced one by one to a flush.messages=1 topic: %v flushes, %v before", got, before)
	}
}
