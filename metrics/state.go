package metrics

// The gauges computed at each scrape from the broker's State (their names
// are listed in doc.go): the replica manager's partition counts, the
// controller's, each hosted log's size, offsets and segments, and the open
// connections. Nothing of them is kept on the produce or fetch paths.

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// State is the broker's state at a scrape.
type State struct {
	Partitions  []PartitionState // hosted
	Connections int              // open client connections
	// Controller: this broker is the active controller (the single node
	// always is); OfflinePartitions, on it, partitions without a leader.
	Controller        bool
	OfflinePartitions int
	// ControllerEpoch is the epoch of the controller whose metadata the
	// broker holds.
	ControllerEpoch int32
}

// PartitionState is one hosted partition at a scrape.
type PartitionState struct {
	Topic     string
	Partition int32
	Leader    bool // led here
	// Failed: followed, and its log could not take the leader's records.
	Failed bool
	// UnderReplicated, UnderMinISR (led partitions): the ISR is smaller
	// than the replicas, than min.insync.replicas.
	UnderReplicated, UnderMinISR bool
	Size, StartOffset, EndOffset int64
	Segments                     int
}

// stateCollector collects the scrape-time metrics of a State.
type stateCollector struct {
	state func() State

	partitions, leaders, underReplicated, underMinISR *prometheus.Desc
	activeController, offline, controllerEpoch        *prometheus.Desc
	logSize, logStart, logEnd, logSegments            *prometheus.Desc
	connections, failedPartitions                     *prometheus.Desc
}

func newStateCollector(state func() State) *stateCollector {
	gauge := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	const rm, kc, ll = "kafka_server_replicamanager_", "kafka_controller_kafkacontroller_", "kafka_log_log_"
	return &stateCollector{state: state,
		partitions:       gauge(rm+"partitioncount", "Partitions hosted by this broker."),
		leaders:          gauge(rm+"leadercount", "Partitions this broker leads."),
		underReplicated:  gauge(rm+"underreplicatedpartitions", "Led partitions whose ISR is smaller than their replicas."),
		underMinISR:      gauge(rm+"underminisrpartitioncount", "Led partitions whose ISR is under min.insync.replicas."),
		activeController: gauge(kc+"activecontrollercount", "1 on the controller's broker, else 0."),
		offline:          gauge(kc+"offlinepartitionscount", "On the controller, partitions without a leader; 0 elsewhere."),
		controllerEpoch:  gauge(kc+"controllerepoch", "Epoch of the controller whose metadata this broker holds."),
		logSize:          gauge(ll+"size", "Bytes of the partition's log segments.", "topic", "partition"),
		logStart:         gauge(ll+"logstartoffset", "The partition's log start offset.", "topic", "partition"),
		logEnd:           gauge(ll+"logendoffset", "The partition's log end offset.", "topic", "partition"),
		logSegments:      gauge(ll+"numlogsegments", "The partition's log segments.", "topic", "partition"),
		connections: gauge("kafka_server_socket_server_metrics_connection_count", "Open client connections.",
			"listener", "networkprocessor"),
		failedPartitions: gauge("kafka_server_replicafetchermanager_failedpartitionscount",
			"Followed partitions whose log could not take the leader's records: they fetch nothing until they resume.", "clientId"),
	}
}

func (s *stateCollector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(s, ch) }

func (s *stateCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	st := s.state()
	var leaders, under, underMin, failed int
	for _, p := range st.Partitions {
		if p.Leader {
			leaders++
		}
		if p.Failed {
			failed++
		}
		if p.UnderReplicated {
			under++
		}
		if p.UnderMinISR {
			underMin++
		}
		idx := strconv.Itoa(int(p.Partition))
		gauge(s.logSize, float64(p.Size), p.Topic, idx)
		gauge(s.logStart, float64(p.StartOffset), p.Topic, idx)
		gauge(s.logEnd, float64(p.EndOffset), p.Topic, idx)
		gauge(s.logSegments, float64(p.Segments), p.Topic, idx)
	}
	gauge(s.partitions, float64(len(st.Partitions)))
	gauge(s.leaders, float64(leaders))
	gauge(s.underReplicated, float64(under))
	gauge(s.underMinISR, float64(underMin))
	gauge(s.failedPartitions, float64(failed), "Replica")
	active := 0
	if st.Controller {
		active = 1
	}
	gauge(s.activeController, float64(active))
	gauge(s.offline, float64(st.OfflinePartitions))
	gauge(s.controllerEpoch, float64(st.ControllerEpoch))
	gauge(s.connections, float64(st.Connections), "PLAINTEXT", "0")
}
