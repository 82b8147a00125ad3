package broker

// The broker's Prometheus metrics, named as Prometheus's jmx_exporter names
// Kafka's MBeans with its standard Kafka rules (example_configs
// kafka-2_0_0.yml: lowercased, "PerSec" dropped, counters "_total"), so that
// Kafka dashboards and alerts work unchanged. They exist only when
// metrics.listen is set (Config.Observability); otherwise Broker.metrics is
// nil and every recording method below returns at its nil check.
//
// Counted as requests are served (counters resolved once per partition when
// it is hosted, and per API key and version at its first request: no map
// lookup or allocation per request or record):
//
//	kafka_server_brokertopicmetrics_messagesin_total{topic}      counter  records appended by Produce
//	kafka_server_brokertopicmetrics_bytesin_total{topic}         counter  record-batch bytes appended by Produce
//	kafka_server_brokertopicmetrics_bytesout_total{topic}        counter  record bytes sent to consumers' Fetch (followers': replicationbytesout)
//	kafka_server_brokertopicmetrics_failedproducerequests_total{topic}  counter  partitions of Produce answered an error
//	kafka_server_brokertopicmetrics_failedfetchrequests_total{topic}    counter  partitions of Fetch answered an error
//	kafka_server_brokertopicmetrics_totalproducerequests_total{topic}   counter  partitions of Produce requests
//	kafka_server_brokertopicmetrics_totalfetchrequests_total{topic}     counter  partitions of Fetch requests
//
//	kafka_server_brokertopicmetrics_replicationbytesin_total   counter  record bytes a follower appended from its leaders (broker-wide only, as Kafka)
//	kafka_server_brokertopicmetrics_replicationbytesout_total  counter  record bytes sent to followers' Fetch (broker-wide only)
//
// Each of the topic counters also without the topic label: the broker-wide figure (Kafka's
// BrokerTopicMetrics without a topic). A partition of an unknown topic
// counts only there.
//
//	kafka_network_requestmetrics_requests_total{request,version}  counter  requests served, by API name (Kafka's: Produce, Fetch, ...) and version;
//	                                                                       a Fetch counts also as FetchConsumer or FetchFollower (a replica's)
//	kafka_network_requestmetrics_totaltimems{request,quantile}    summary  milliseconds from a request's last byte read to its response written;
//	                                                                       quantiles 0.5, 0.75, 0.95, 0.98, 0.99, 0.999 over 10 minutes, _sum, _count
//	sluice_request_duration_seconds{request}                       histogram  the same time, in seconds (buckets 0.5 ms to 10 s)
//	kafka_server_replicamanager_isrshrinks_total                   counter  ISR shrinks of partitions this broker leads, as the controller accepted them
//	kafka_server_replicamanager_isrexpands_total                   counter  ISR expansions, likewise
//	kafka_controller_controllerstats_leaderelectionrateandtimems   summary  on the controller's broker, per leader elected (a state write changing a
//	                                                                       partition's leader, or unclean, succeeded): milliseconds from the decision to
//	                                                                       the write's success; quantiles as totaltimems, _count the elections
//	kafka_controller_controllerstats_uncleanleaderelections_total  counter  of them, the unclean ones
//	kafka_log_logflushstats_logflushrateandtimems                  summary  milliseconds of each flush of a log that synced appends (flush.messages,
//	                                                                       flush.ms, a clean stop), from the engine's OnFlush; quantiles as totaltimems
//
// Computed at each scrape (metricscollect.go), nothing on the write path:
//
//	kafka_server_replicamanager_partitioncount              gauge  partitions hosted
//	kafka_server_replicamanager_leadercount                 gauge  partitions led
//	kafka_server_replicamanager_underreplicatedpartitions   gauge  led partitions whose ISR is smaller than their replicas
//	kafka_server_replicamanager_underminisrpartitioncount   gauge  led partitions whose ISR is under min.insync.replicas
//	kafka_server_replicafetchermanager_failedpartitionscount{clientId="Replica"}  gauge  followed partitions whose log could not take the leader's records (owner.go)
//	kafka_controller_kafkacontroller_activecontrollercount  gauge  1 on the controller's broker (the single node is its own), else 0
//	kafka_controller_kafkacontroller_offlinepartitionscount gauge  on the controller, partitions without a leader; 0 elsewhere
//	kafka_controller_kafkacontroller_controllerepoch        gauge  the epoch of the controller whose metadata the broker holds (sluice's; Kafka has no such MBean)
//	kafka_log_log_size{topic,partition}                     gauge  bytes of the partition's segments
//	kafka_log_log_logstartoffset{topic,partition}           gauge  log start offset
//	kafka_log_log_logendoffset{topic,partition}             gauge  log end offset
//	kafka_log_log_numlogsegments{topic,partition}           gauge  segments
//	kafka_server_socket_server_metrics_connection_count{listener,networkprocessor}  gauge  open client connections
//
// The group coordinator's (metricsgroups.go lists them): groups by state,
// members, rebalances, committed offsets and consumer lag.
//
// And the Go runtime's and the process's collectors (go_*, process_*).

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator/zk"
)

// brokerMetrics holds the registry and the metrics counted as requests are
// served.
type brokerMetrics struct {
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
	replication            [2]prometheus.Counter // by replicationBytesIn, replicationBytesOut

	elections prometheus.Summary // milliseconds
	unclean   prometheus.Counter
	flushes   prometheus.Summary // milliseconds
}

// kafkaQuantiles are the quantiles of the summaries standing for Kafka's
// timers, as jmx_exporter shows them (50thPercentile ... 999thPercentile),
// over 10 minutes.
var kafkaQuantiles = map[float64]float64{0.5: 0.05, 0.75: 0.02, 0.95: 0.005, 0.98: 0.002, 0.99: 0.001, 0.999: 0.0001}

// The replication byte counters, in brokerMetrics.replication's order.
const (
	replicationBytesIn = iota
	replicationBytesOut
)

// requestBuckets are sluice_request_duration_seconds' upper bounds: 0.5 ms
// to 10 s, 1-2.5-5 per decade.
var requestBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// maxAPIKey bounds the served keys (DescribeCluster, 60, is the highest).
const maxAPIKey = 127

// The topic counters, in topicVecs' order.
const (
	messagesIn = iota
	bytesIn
	bytesOut
	failedProduce
	failedFetch
	totalProduce
	totalFetch
	numTopicCounters
)

var topicCounterNames = [numTopicCounters]string{"messagesin", "bytesin", "bytesout", "failedproducerequests",
	"failedfetchrequests", "totalproducerequests", "totalfetchrequests"}

// topicCounters are one topic's (or the broker's) counters.
type topicCounters [numTopicCounters]prometheus.Counter

// partitionMetrics is what a hosted partition counts into: its topic's
// counters and the broker's. nil when metrics are off.
type partitionMetrics struct {
	topic, all  *topicCounters
	replication *[2]prometheus.Counter
}

// requestMetrics are one API key and version's.
type requestMetrics struct {
	count prometheus.Counter
	time  prometheus.Observer // milliseconds
	hist  prometheus.Observer // seconds
}

// newBrokerMetrics registers every metric of b.
func newBrokerMetrics(b *Broker) *brokerMetrics {
	m := &brokerMetrics{reg: prometheus.NewRegistry()}
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
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newStateCollector(b), newGroupCollector(b))
	for key, a := range apis {
		if key >= 0 && key <= maxAPIKey {
			m.perAPI[key] = make([]atomic.Pointer[requestMetrics], a.max+1)
		}
	}
	for i := range m.fetchBy {
		m.fetchBy[i] = make([]atomic.Pointer[requestMetrics], apis[fetchKey].max+1)
	}
	return m
}

const fetchKey = 1

// requestName is an API key's name as Kafka's ApiKeys gives it (the
// request label): kmsg's but for three spellings.
func requestName(key int16) string {
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

// forTopic resolves a partition's counters (nil when metrics are off).
func (m *brokerMetrics) forTopic(topic string) *partitionMetrics {
	if m == nil {
		return nil
	}
	var t topicCounters
	for i, v := range m.topicVecs {
		t[i] = v.WithLabelValues(topic)
	}
	return &partitionMetrics{topic: &t, all: &m.all, replication: &m.replication}
}

// dropTopic removes a deleted topic's series, as Kafka removes its
// BrokerTopicMetrics.
func (m *brokerMetrics) dropTopic(topic string) {
	if m == nil {
		return
	}
	for _, v := range m.topicVecs {
		v.DeleteLabelValues(topic)
	}
}

// add counts n into counter i of the partition's topic and of the broker.
func (pm *partitionMetrics) add(i int, n int64) {
	if pm == nil {
		return
	}
	pm.topic[i].Add(float64(n))
	pm.all[i].Add(float64(n))
}

// replicated counts n bytes of replication, in or out.
func (pm *partitionMetrics) replicated(i, n int) {
	if pm == nil {
		return
	}
	pm.replication[i].Add(float64(n))
}

// failedUnknown counts a failed partition of an unknown topic (or
// partition) broker-wide.
func (m *brokerMetrics) failedUnknown(i int) {
	if m == nil {
		return
	}
	m.all[i].Inc()
	m.all[i+totalProduce-failedProduce].Inc()
}

// request counts one served request and its time; a Fetch also as
// FetchConsumer or FetchFollower (follower: a replica's), as Kafka does.
func (m *brokerMetrics) request(key, version int16, follower bool, took time.Duration) {
	if key < 0 || int(key) >= len(m.perAPI) || int(version) >= len(m.perAPI[key]) || version < 0 {
		return
	}
	m.observe(&m.perAPI[key][version], requestName(key), version, took)
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
func (m *brokerMetrics) observe(slot *atomic.Pointer[requestMetrics], name string, version int16, took time.Duration) {
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

func (m *brokerMetrics) newRequestMetrics(name string, version int16) *requestMetrics {
	return &requestMetrics{
		count: m.requests.WithLabelValues(name, strconv.Itoa(int(version))),
		time:  m.times.WithLabelValues(name),
		hist:  m.hist.WithLabelValues(name),
	}
}

// elected counts a leader election of this broker's controller (the
// driver's LoopOptions.Elected).
func (m *brokerMetrics) elected(e zk.LeaderElection) {
	m.elections.Observe(float64(e.Took) / float64(time.Millisecond))
	if e.Unclean {
		m.unclean.Inc()
	}
}

// flushed times one flush of a log (the engine's Options.OnFlush).
func (m *brokerMetrics) flushed(took time.Duration) {
	m.flushes.Observe(float64(took) / float64(time.Millisecond))
}

// isrChanged counts an ISR change the controller accepted.
func (m *brokerMetrics) isrChanged(before, after int) {
	switch {
	case m == nil:
	case after < before:
		m.isrShrinks.Inc()
	case after > before:
		m.isrExpands.Inc()
	}
}
