// Package metrics is a sluice broker's Prometheus metrics and the HTTP
// endpoints that serve them (/metrics, /healthz, /readyz, /debug/pprof).
//
// It owns the registry (Registry), the counters the request paths count
// into (resolved once per topic and per API key and version: no map lookup
// or allocation per request or record), and the collectors that compute
// the rest at each scrape from what their owners report: the broker's
// state (State, given by a func the broker passes to New) and the group
// coordinator's (Groups). It imports prometheus and kmsg only: the broker,
// the replica manager and the coordinators count into it, never the other
// way.
//
// The metrics are named as Prometheus's jmx_exporter names
// Kafka's MBeans with its standard Kafka rules (example_configs
// kafka-2_0_0.yml: lowercased, "PerSec" dropped, counters "_total"), so that
// Kafka dashboards and alerts work unchanged. The broker makes a
// Registry only when metrics.listen is set; otherwise its *Registry is nil
// and every recording method returns at its nil check.
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
// Computed at each scrape (state.go, from the broker's State), nothing on the write path:
//
//	kafka_server_replicamanager_partitioncount              gauge  partitions hosted
//	kafka_server_replicamanager_leadercount                 gauge  partitions led
//	kafka_server_replicamanager_underreplicatedpartitions   gauge  led partitions whose ISR is smaller than their replicas
//	kafka_server_replicamanager_underminisrpartitioncount   gauge  led partitions whose ISR is under min.insync.replicas
//	kafka_server_replicafetchermanager_failedpartitionscount{clientId="Replica"}  gauge  followed partitions whose log could not take the leader's records (replication/host)
//	kafka_controller_kafkacontroller_activecontrollercount  gauge  1 on the controller's broker (the single node is its own), else 0
//	kafka_controller_kafkacontroller_offlinepartitionscount gauge  on the controller, partitions without a leader; 0 elsewhere
//	kafka_controller_kafkacontroller_controllerepoch        gauge  the epoch of the controller whose metadata the broker holds (sluice's; Kafka has no such MBean)
//	kafka_log_log_size{topic,partition}                     gauge  bytes of the partition's segments
//	kafka_log_log_logstartoffset{topic,partition}           gauge  log start offset
//	kafka_log_log_logendoffset{topic,partition}             gauge  log end offset
//	kafka_log_log_numlogsegments{topic,partition}           gauge  segments
//	kafka_server_socket_server_metrics_connection_count{listener,networkprocessor}  gauge  open client connections
//
// And the Go runtime's and the process's collectors (go_*, process_*).
//
// The group coordinator's, computed at each scrape (groups.go) from the
// groups the broker coordinates and their sampled lag: nothing on the
// request paths. Names as jmx_exporter names
// Kafka's GroupMetadataManager MBeans where Kafka has one; consumer lag as
// kafka_exporter (danielqsj/kafka_exporter) names it, which lag dashboards
// query (Kafka exports none):
//
//	kafka_coordinator_group_groupmetadatamanager_numgroups                        gauge  groups coordinated here
//	kafka_coordinator_group_groupmetadatamanager_numgroups<state>                 gauge  of them in a state: stable, preparingrebalance,
//	                                                                                     completingrebalance, empty, dead (Kafka's NumGroupsStable...)
//	kafka_coordinator_group_groupmetadatamanager_numoffsets                       gauge  committed offsets held
//	sluice_group_members{group}                                                   gauge  members of each group
//	sluice_group_rebalances_total                                                 counter rebalances begun since the coordinator started
//	kafka_consumergroup_current_offset{consumergroup,topic,partition}             gauge  a group's committed offset
//	kafka_consumergroup_lag{consumergroup,topic,partition}                        gauge  the partition's high watermark less it (sampled at most every 10 s)
//	kafka_consumergroup_lag_sum{consumergroup,topic}                              gauge  the lag summed over the topic's partitions
//
// A partition whose leader could not be asked has no lag series in that
// scrape.
//
// Lock order: the package holds no lock of its own across a call out; a
// scrape calls the State and Groups funcs with no lock held, and they take
// their owners' locks (broker/doc.go).
package metrics
