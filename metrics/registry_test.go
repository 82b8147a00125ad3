package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// value is the value of the series of family name whose labels include
// every name=value pair of want; ok false if there is none.
func value(t *testing.T, m *Registry, name string, want ...string) (float64, bool) {
	t.Helper()
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, s := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if len(want) == 0 && len(labels) != 0 {
				continue
			}
			for _, kv := range want {
				k, v, _ := strings.Cut(kv, "=")
				if labels[k] != v {
					continue series
				}
			}
			return seriesValue(s), true
		}
	}
	return 0, false
}

func seriesValue(s *dto.Metric) float64 {
	switch {
	case s.Counter != nil:
		return s.Counter.GetValue()
	case s.Gauge != nil:
		return s.Gauge.GetValue()
	case s.Summary != nil:
		return float64(s.Summary.GetSampleCount())
	case s.Histogram != nil:
		return float64(s.Histogram.GetSampleCount())
	}
	return 0
}

func maxVersion(key int16) (int16, bool) {
	switch key {
	case 0:
		return 11, true
	case 1:
		return 16, true
	}
	return 0, false
}

// A partition counts into its topic's series and the broker-wide one; a
// dropped topic's series go; requests count by API name and version, a
// Fetch again as FetchConsumer or FetchFollower; a version beyond the
// served ones counts nothing.
func TestCounters(t *testing.T) {
	m := New(Sources{MaxVersion: maxVersion})
	a, b := m.ForTopic("a"), m.ForTopic("b")
	a.Add(MessagesIn, 3)
	b.Add(MessagesIn, 4)
	m.FailedUnknown(FailedProduce)
	const in, failed, total = "kafka_server_brokertopicmetrics_messagesin_total", "kafka_server_brokertopicmetrics_failedproducerequests_total", "kafka_server_brokertopicmetrics_totalproducerequests_total"
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{{in, []string{"topic=a"}, 3}, {in, []string{"topic=b"}, 4}, {in, nil, 7}, {failed, nil, 1}, {total, nil, 1}} {
		if got, _ := value(t, m, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	m.DropTopic("a")
	if _, ok := value(t, m, in, "topic=a"); ok {
		t.Error("a dropped topic's series is still there")
	}
	m.Request(0, 9, false, time.Millisecond)
	m.Request(1, 12, true, time.Millisecond)
	m.Request(1, 12, false, time.Millisecond)
	m.Request(0, 12, false, time.Millisecond) // beyond Produce's 11
	const reqs = "kafka_network_requestmetrics_requests_total"
	for _, c := range []struct {
		request, version string
		want             float64
	}{{"Produce", "9", 1}, {"Fetch", "12", 2}, {"FetchFollower", "12", 1}, {"FetchConsumer", "12", 1}, {"Produce", "12", 0}} {
		if got, _ := value(t, m, reqs, "request="+c.request, "version="+c.version); got != c.want {
			t.Errorf("%s v%s: %v requests, want %v", c.request, c.version, got, c.want)
		}
	}
	m.ISRChanged(3, 2)
	m.ISRChanged(2, 3)
	m.ISRChanged(2, 3)
	if s, _ := value(t, m, "kafka_server_replicamanager_isrshrinks_total"); s != 1 {
		t.Errorf("isr shrinks %v, want 1", s)
	}
	if e, _ := value(t, m, "kafka_server_replicamanager_isrexpands_total"); e != 2 {
		t.Errorf("isr expands %v, want 2", e)
	}
}

// Off (a nil Registry and its nil Topics), every recording call is a no-op.
func TestNilRegistry(t *testing.T) {
	var m *Registry
	p := m.ForTopic("a")
	p.Add(MessagesIn, 1)
	p.Replicated(ReplicationBytesIn, 1)
	m.FailedUnknown(FailedFetch)
	m.Request(0, 1, false, time.Millisecond)
	m.Elected(time.Millisecond, true)
	m.Flushed(time.Millisecond)
	m.ISRChanged(1, 2)
	m.DropTopic("a")
}

// The request paths' counting allocates nothing, once a key and version's
// series exists.
func TestCountingAllocatesNothing(t *testing.T) {
	m := New(Sources{MaxVersion: maxVersion})
	p := m.ForTopic("a")
	m.Request(1, 12, true, time.Millisecond)
	if n := testing.AllocsPerRun(100, func() {
		p.Add(BytesOut, 100)
		p.Replicated(ReplicationBytesOut, 100)
		m.Request(1, 12, true, time.Millisecond)
	}); n != 0 {
		t.Errorf("%v allocations per request counted", n)
	}
}

// The scrape-time gauges are computed from the State and Groups sources;
// /readyz answers what Ready says.
func TestCollectors(t *testing.T) {
	ready := "not listening yet"
	m := New(Sources{
		State: func() State {
			return State{Connections: 2, Controller: true, OfflinePartitions: 1, ControllerEpoch: 5, Partitions: []PartitionState{
				{Topic: "a", Partition: 0, Leader: true, UnderReplicated: true, Size: 100, EndOffset: 7, Segments: 1},
				{Topic: "a", Partition: 1, Failed: true, StartOffset: 2, EndOffset: 3, Segments: 2},
			}}
		},
		Groups: func() (Groups, bool) {
			return Groups{Rebalances: 3, Groups: []Group{{ID: "g", State: "Stable", Members: 2, Offsets: 2}},
				Lag: []Lag{{Group: "g", Topic: "a", Partition: 0, Committed: 4, End: 7, Lag: 3}, {Group: "g", Topic: "a", Partition: 1, Committed: 1, End: -1}}}, true
		},
	})
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"kafka_server_replicamanager_partitioncount", nil, 2},
		{"kafka_server_replicamanager_leadercount", nil, 1},
		{"kafka_server_replicamanager_underreplicatedpartitions", nil, 1},
		{"kafka_server_replicafetchermanager_failedpartitionscount", []string{"clientId=Replica"}, 1},
		{"kafka_controller_kafkacontroller_activecontrollercount", nil, 1},
		{"kafka_controller_kafkacontroller_offlinepartitionscount", nil, 1},
		{"kafka_controller_kafkacontroller_controllerepoch", nil, 5},
		{"kafka_log_log_logendoffset", []string{"topic=a", "partition=0"}, 7},
		{"kafka_log_log_numlogsegments", []string{"topic=a", "partition=1"}, 2},
		{"kafka_server_socket_server_metrics_connection_count", []string{"listener=PLAINTEXT"}, 2},
		{"kafka_coordinator_group_groupmetadatamanager_numgroupsstable", nil, 1},
		{"kafka_coordinator_group_groupmetadatamanager_numoffsets", nil, 2},
		{"sluice_group_rebalances_total", nil, 3},
		{"kafka_consumergroup_lag", []string{"consumergroup=g", "partition=0"}, 3},
		{"kafka_consumergroup_lag_sum", []string{"consumergroup=g", "topic=a"}, 3},
		{"kafka_consumergroup_current_offset", []string{"consumergroup=g", "partition=1"}, 1},
	} {
		if got, ok := value(t, m, c.name, c.labels...); !ok || got != c.want {
			t.Errorf("%s%v = %v (%v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if _, ok := value(t, m, "kafka_consumergroup_lag", "partition=1"); ok {
		t.Error("a partition whose leader could not be asked has a lag series")
	}

	h := Handler(m, ServerOptions{Ready: func() string { return ready }})
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		body, _ := io.ReadAll(rec.Body)
		return rec.Code, strings.TrimSpace(string(body))
	}
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || body != ready {
		t.Errorf("/readyz not ready: %d %q", code, body)
	}
	ready = ""
	if code, _ := get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz ready: %d", code)
	}
	if code, body := get("/metrics"); code != http.StatusOK || !strings.Contains(body, "kafka_log_log_size{partition=\"0\",topic=\"a\"} 100") {
		t.Errorf("/metrics: %d, no log size of a-0 in %.200q", code, body)
	}
	if code, _ := get("/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("/debug/pprof without Pprof: %d", code)
	}
}
