package metrics

// The registry and the metrics counted as requests are served.

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Registry holds a broker's metrics. A nil *Registry records nothing.
type Registry struct {
	reg *prometheus.Registry

	topicVecs [numTopicCounters]*prometheus.CounterVec
	all       topicCounters // the broker-wide figures

	requests *prometheus.CounterVec
	times    *prometheus.SummaryVec
	hist     *prometheus.HistogramVec
	// perAPI holds each API key's metrics by version, made at the first
	// request of that key and version; fetchBy Fetch's again as Kafka
	// splits them, FetchConsumer [0] and FetchFollower [1].
	perAPI  [maxAPIKey + 1][]atomic.Pointer[requestMetrics]
	fetchBy [2][]atomic.Pointer[requestMetrics]

	isrShrinks, isrExpands prometheus.Counter
	replication            [2]prometheus.Counter // by ReplicationBytesIn, ReplicationBytesOut

	elections prometheus.Summary // milliseconds
	unclean   prometheus.Counter
	flushes   prometheus.Summary // milliseconds
}

// kafkaQuantiles are the quantiles of the summaries standing for Kafka's
// timers, as jmx_exporter shows them (50thPercentile ... 999thPercentile),
// over 10 minutes.
var kafkaQuantiles = map[float64]float64{0.5: 0.05, 0.75: 0.02, 0.95: 0.005, 0.98: 0.002, 0.99: 0.001, 0.999: 0.0001}

// The replication byte counters (Topic.Replicated).
const (
	ReplicationBytesIn = iota
	ReplicationBytesOut
)

// requestBuckets are sluice_request_duration_seconds' upper bounds: 0.5 ms
// to 10 s, 1-2.5-5 per decade.
var requestBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// maxAPIKey bounds the served keys (DescribeCluster, 60, is the highest).
const maxAPIKey = 127

// The topic counters (Topic.Add).
const (
	MessagesIn = iota
	BytesIn
	BytesOut
	FailedProduce
	FailedFetch
	TotalProduce
	TotalFetch
	numTopicCounters
)

var topicCounterNames = [numTopicCounters]string{"messagesin", "bytesin", "bytesout", "failedproducerequests",
	"failedfetchrequests", "totalproducerequests", "totalfetchrequests"}

// topicCounters are one topic's (or the broker's) counters.
type topicCounters [numTopicCounters]prometheus.Counter

// Topic is what a hosted partition counts into: its topic's counters and
// the broker's. A nil *Topic (metrics off) counts nothing.
type Topic struct {
	topic, all  *topicCounters
	replication *[2]prometheus.Counter
}

// requestMetrics are one API key and version's.
type requestMetrics struct {
	count prometheus.Counter
	time  prometheus.Observer // milliseconds
	hist  prometheus.Observer // seconds
}

// Sources are the collectors' owners: what a scrape computes its gauges
// from, called with no lock of the registry held.
type Sources struct {
	// MaxVersion is the highest version of each API key served (the
	// request metrics' slots); false for a key not served.
	MaxVersion func(key int16) (int16, bool)
	// State is the broker's state at a scrape (state.go).
	State func() State
	// Groups is the group coordinator's state at a scrape; false while no
	// coordinator runs (groups.go).
	Groups func() (Groups, bool)
}

// New registers every metric, with the collectors of src.
func New(src Sources) *Registry {
	m := &Registry{reg: prometheus.NewRegistry()}
	for i, name := range topicCounterNames {
		full := "kafka_server_brokertopicmetrics_" + name + "_total"
		help := "Kafka's BrokerTopicMetrics " + name + ", per topic."
		m.topicVecs[i] = prometheus.NewCounterVec(prometheus.CounterOpts{Name: full, Help: help}, []string{"topic"})
		// The broker-wide figure is the same name without labels: a
		// collector of its own, since a vector's series share its labels.
		m.all[i] = prometheus.NewCounter(prometheus.CounterOpts{Name: full, Help: help})
		m.reg.MustRegister(mergedCounter{m.topicVecs[i], m.all[i]})
	}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafka_network_requestmetrics_requests_total",
		Help: "Requests served, by API and version."}, []string{"request", "version"})
	m.times = prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: "kafka_network_requestmetrics_totaltimems",
		Help:       "Milliseconds from a request's last byte read to its response written.",
		Objectives: kafkaQuantiles, MaxAge: 10 * time.Minute}, []string{"request"})
	m.hist = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sluice_request_duration_seconds",
		Help:    "Seconds from a request's last byte read to its response written.",
		Buckets: requestBuckets}, []string{"request"})
	m.isrShrinks = prometheus.NewCounter(prometheus.CounterOpts{Name: "kafka_server_replicamanager_isrshrinks_total",
		Help: "ISR shrinks of partitions this broker leads."})
	m.isrExpands = prometheus.NewCounter(prometheus.CounterOpts{Name: "kafka_server_replicamanager_isrexpands_total",
		Help: "ISR expansions of partitions this broker leads."})
	for i, name := range []string{"replicationbytesin", "replicationbytesout"} {
		m.replication[i] = prometheus.NewCounter(prometheus.CounterOpts{Name: "kafka_server_brokertopicmetrics_" + name + "_total",
			Help: "Kafka's BrokerTopicMetrics " + name + ", broker-wide."})
	}
	m.elections = prometheus.NewSummary(prometheus.SummaryOpts{Name: "kafka_controller_controllerstats_leaderelectionrateandtimems",
		Help:       "Leaders elected by this broker as controller: milliseconds from the decision to the state write's success.",
		Objectives: kafkaQuantiles, MaxAge: 10 * time.Minute})
	m.unclean = prometheus.NewCounter(prometheus.CounterOpts{Name: "kafka_controller_controllerstats_uncleanleaderelections_total",
		Help: "Unclean leader elections by this broker as controller."})
	m.flushes = prometheus.NewSummary(prometheus.SummaryOpts{Name: "kafka_log_logflushstats_logflushrateandtimems",
		Help:       "Milliseconds of each flush of a log that synced appends.",
		Objectives: kafkaQuantiles, MaxAge: 10 * time.Minute})
	m.reg.MustRegister(m.requests, m.times, m.hist, m.isrShrinks, m.isrExpands, m.replication[0], m.replication[1],
		m.elections, m.unclean, m.flushes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if src.State != nil {
		m.reg.MustRegister(newStateCollector(src.State))
	}
	if src.Groups != nil {
		m.reg.MustRegister(newGroupCollector(src.Groups))
	}
	if src.MaxVersion != nil {
		for key := range m.perAPI {
			if max, ok := src.MaxVersion(int16(key)); ok {
				m.perAPI[key] = make([]atomic.Pointer[requestMetrics], max+1)
			}
		}
		for i := range m.fetchBy {
			m.fetchBy[i] = make([]atomic.Pointer[requestMetrics], len(m.perAPI[fetchKey]))
		}
	}
	return m
}

const fetchKey = 1

// RequestName is an API key's name as Kafka's ApiKeys gives it (the
// request label): kmsg's but for three spellings.
func RequestName(key int16) string {
	switch key {
	case 4:
		return "LeaderAndIsr"
	case 22:
		return "InitProducerId"
	case 45:
		return "AlterPartitionReassignments"
	}
	return kmsg.NameForKey(key)
}

// mergedCounter registers a vector and its label-less sibling under one
// name, as jmx_exporter shows Kafka's topic and broker-wide
// BrokerTopicMetrics. The registry refuses two descriptors of one name with
// different labels, so it is an unchecked collector: it describes nothing.
type mergedCounter struct {
	vec *prometheus.CounterVec
	all prometheus.Counter
}

func (c mergedCounter) Describe(chan<- *prometheus.Desc) {}
func (c mergedCounter) Collect(ch chan<- prometheus.Metric) {
	c.vec.Collect(ch)
	c.all.Collect(ch)
}

// ForTopic resolves the counters of a partition of topic (nil when
// metrics are off).
func (m *Registry) ForTopic(topic string) *Topic {
	if m == nil {
		return nil
	}
	var t topicCounters
	for i, v := range m.topicVecs {
		t[i] = v.WithLabelValues(topic)
	}
	return &Topic{topic: &t, all: &m.all, replication: &m.replication}
}

// DropTopic removes a deleted topic's series, as Kafka removes its
// BrokerTopicMetrics.
func (m *Registry) DropTopic(topic string) {
	if m == nil {
		return
	}
	for _, v := range m.topicVecs {
		v.DeleteLabelValues(topic)
	}
}

// Add counts n into counter i (MessagesIn, ...) of the partition's topic
// and of the broker.
func (pm *Topic) Add(i int, n int64) {
	if pm == nil {
		return
	}
	pm.topic[i].Add(float64(n))
	pm.all[i].Add(float64(n))
}

// Replicated counts n bytes of replication, in or out
// (ReplicationBytesIn, ReplicationBytesOut).
func (pm *Topic) Replicated(i, n int) {
	if pm == nil {
		return
	}
	pm.replication[i].Add(float64(n))
}

// FailedUnknown counts a failed partition of an unknown topic (or
// partition) broker-wide: i is FailedProduce or FailedFetch.
func (m *Registry) FailedUnknown(i int) {
	if m == nil {
		return
	}
	m.all[i].Inc()
	m.all[i+TotalProduce-FailedProduce].Inc()
}

// Request counts one served request and its time; a Fetch also as
// FetchConsumer or FetchFollower (follower: a replica's), as Kafka does.
func (m *Registry) Request(key, version int16, follower bool, took time.Duration) {
	if m == nil || key < 0 || int(key) >= len(m.perAPI) || int(version) >= len(m.perAPI[key]) || version < 0 {
		return
	}
	m.observe(&m.perAPI[key][version], RequestName(key), version, took)
	if key == fetchKey {
		kind, name := 0, "FetchConsumer"
		if follower {
			kind, name = 1, "FetchFollower"
		}
		m.observe(&m.fetchBy[kind][version], name, version, took)
	}
}

// observe counts one request into the metrics in slot, made (as name,
// version) at the first.
func (m *Registry) observe(slot *atomic.Pointer[requestMetrics], name string, version int16, took time.Duration) {
	rm := slot.Load()
	if rm == nil {
		rm = m.newRequestMetrics(name, version)
		if !slot.CompareAndSwap(nil, rm) {
			rm = slot.Load()
		}
	}
	rm.count.Inc()
	rm.time.Observe(float64(took) / float64(time.Millisecond))
	rm.hist.Observe(took.Seconds())
}

func (m *Registry) newRequestMetrics(name string, version int16) *requestMetrics {
	return &requestMetrics{
		count: m.requests.WithLabelValues(name, strconv.Itoa(int(version))),
		time:  m.times.WithLabelValues(name),
		hist:  m.hist.WithLabelValues(name),
	}
}

// Elected counts a leader election of this broker's controller: took from
// the decision to the state write's success.
func (m *Registry) Elected(took time.Duration, unclean bool) {
	if m == nil {
		return
	}
	m.elections.Observe(float64(took) / float64(time.Millisecond))
	if unclean {
		m.unclean.Inc()
	}
}

// Flushed times one flush of a log (the engine's Options.OnFlush).
func (m *Registry) Flushed(took time.Duration) {
	if m == nil {
		return
	}
	m.flushes.Observe(float64(took) / float64(time.Millisecond))
}

// ISRChanged counts an ISR change the controller accepted, from before to
// after replicas.
func (m *Registry) ISRChanged(before, after int) {
	switch {
	case m == nil:
	case after < before:
		m.isrShrinks.Inc()
	case after > before:
		m.isrExpands.Inc()
	}
}
