package broker

// The metrics computed at scrape time from the broker's state (their names
// are listed in metrics.go): the replica manager's partition counts, the
// controller's, each hosted log's size, offsets and segments, and the open
// connections. Nothing of them is kept on the produce or fetch paths.
//
// A scrape takes Broker.mu (read) to list the partitions, releases it, then
// each partition's replicaDriver.mu in turn, with no other lock held.

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// stateCollector collects the scrape-time metrics of b.
type stateCollector struct {
	b *Broker

	partitions, leaders, underReplicated, underMinISR *prometheus.Desc
	activeController, offline, controllerEpoch        *prometheus.Desc
	logSize, logStart, logEnd, logSegments            *prometheus.Desc
	connections, failedPartitions                     *prometheus.Desc
}

func newStateCollector(b *Broker) *stateCollector {
	gauge := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	const rm, kc, ll = "kafka_server_replicamanager_", "kafka_controller_kafkacontroller_", "kafka_log_log_"
	return &stateCollector{b: b,
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
	b := s.b
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	b.mu.RLock()
	parts := b.hostedLocked()
	conns := len(b.mu.conns)
	b.mu.RUnlock()

	var leaders, under, underMin, failed int
	for _, p := range parts {
		if p.leader.Load() {
			leaders++
		}
		if p.rep.failed.Load() {
			failed++
		}
		p.rep.mu.Lock()
		if p.rep.mu.r.UnderReplicated() {
			under++
		}
		if p.rep.mu.r.UnderMinISR() {
			underMin++
		}
		p.rep.mu.Unlock()
		idx := strconv.Itoa(int(p.index))
		gauge(s.logSize, float64(p.log.Size()), p.topic, idx)
		gauge(s.logStart, float64(p.log.StartOffset()), p.topic, idx)
		gauge(s.logEnd, float64(p.log.EndOffset()), p.topic, idx)
		gauge(s.logSegments, float64(len(p.log.SegmentBases())), p.topic, idx)
	}
	gauge(s.partitions, float64(len(parts)))
	gauge(s.leaders, float64(leaders))
	gauge(s.underReplicated, float64(under))
	gauge(s.underMinISR, float64(underMin))
	gauge(s.failedPartitions, float64(failed), "Replica")

	active, offline, epoch := 0, 0, int32(0)
	if b.isController() {
		active = 1
	}
	if snap := b.ctl.cache.snap.Load(); snap != nil {
		epoch = snap.controllerEpoch
		if active == 1 {
			for _, t := range snap.topics {
				for _, p := range t.partitions {
					if p.leader < 0 && p.leader != leaderDuringDelete {
						offline++
					}
				}
			}
		}
	}
	gauge(s.activeController, float64(active))
	gauge(s.offline, float64(offline))
	gauge(s.controllerEpoch, float64(epoch))
	gauge(s.connections, float64(conns), "PLAINTEXT", "0")
}

// isController reports whether this broker is the active controller: in
// ZooKeeper mode the one elected, on the single node always (it runs its
// own).
func (b *Broker) isController() bool {
	if b.cluster == nil {
		return true
	}
	l := b.cluster.loop.Load()
	return l != nil && l.IsController()
}
