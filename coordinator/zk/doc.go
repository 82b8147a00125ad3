// Package zk is the ZooKeeper side of sluice's cluster mode: the znode
// layout of Kafka's ZooKeeper mode (Kafka 3.9 is the reference; 4.0 removed
// the mode), with encoders and decoders of every payload (znodes.go,
// broker.go, config.go) and the paths (paths.go). A Kafka operator who opens zookeeper-shell on a
// sluice cluster sees the layout, and the bytes, they know; Kafka's tools
// that read ZooKeeper read it.
//
// # Layout
//
// Paths are relative to the chroot of zookeeper.connect (host:port/chroot).
// "persistent" znodes outlive the session that wrote them; "ephemeral" ones
// go when it expires; "sequential" ones get a 10-digit suffix from
// ZooKeeper. Payloads are compact JSON (no spaces) unless said otherwise;
// the examples below are exactly what Kafka 3.9 writes, field order
// included (order.go explains the order).
//
//	/cluster/id                     persistent, written once by the first broker
//	    {"version":"1","id":"0-qO5c0cSx6Xr_0aaXdpZg"}
//	    The version is a string here, and only here.
//
//	/controller                     ephemeral, created by the broker that wins the election
//	    {"version":2,"brokerid":1,"timestamp":"1689018188126","kraftControllerEpoch":-1}
//	    Version 1 (before 3.4) has no kraftControllerEpoch. A value other than -1
//	    means a KRaft controller holds the znode (persistent then) during a
//	    migration.
//
//	/controller_epoch               persistent, not JSON: the epoch in decimal
//	    1
//	    Created as 0; each election writes epoch+1 in the same multi-op that
//	    creates /controller, with a version check on this znode. Every later
//	    write of the controller carries a check of this znode's version (its
//	    zkVersion), so a deposed controller's writes fail.
//
//	/brokers/ids/<id>               ephemeral, one per live broker
//	    {"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},
//	     "endpoints":["PLAINTEXT://localhost:9092"],"jmx_port":-1,"port":9092,
//	     "host":"localhost","version":5,"timestamp":"1700000000000"}
//	    (one line). With broker.rack, "rack":"r1" follows "endpoints". host and
//	    port are the first PLAINTEXT endpoint's, for clients older than 0.10,
//	    null and -1 without one. Versions: 1 host and port only; 2 endpoints
//	    (listener names are protocol names); 3 rack; 4 (0.10.2+)
//	    listener_security_protocol_map; 5 (2.7+) features, each
//	    {"min_version":1,"max_version":3}. Readers take any version >= 1. The
//	    broker epoch (KIP-380) is this znode's czxid.
//
//	/brokers/topics/<topic>         persistent, the topic's replica assignment
//	    {"partitions":{"0":[1,2],"1":[2,0]},"topic_id":"cMr3GpVESX2L3byPGf93lQ",
//	     "adding_replicas":{},"removing_replicas":{},"version":3}
//	    Partition numbers are 0 to n-1; the first replica is the preferred
//	    leader. topic_id (2.8+) is Kafka's Uuid: 16 bytes in URL-safe base64
//	    without padding; topics created before 2.8 have none. Versions: 1
//	    partitions only; 2 (2.4+) adding_replicas and removing_replicas
//	    (KIP-455 reassignments, only partitions being reassigned appear); 3
//	    topic_id. Kafka 3.9 writes version 3 even without a topic_id.
//
//	/brokers/topics/<topic>/partitions            persistent, no data
//	/brokers/topics/<topic>/partitions/<p>        persistent, no data
//	/brokers/topics/<topic>/partitions/<p>/state  persistent, written by the controller
//	    {"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[2,3,1]}
//	    leader -1 when no replica leads. When the leader came from an unclean
//	    election and has not recovered (KIP-704, 3.2+),
//	    "leader_recovery_state":1 follows "version"; it is never written as 0.
//	    The partition epoch is this znode's version: every update is
//	    conditional on it.
//
//	/config/<type>/<name>           persistent; type is topics, brokers, users, clients or ips
//	    {"version":1,"config":{"retention.ms":"86400000"}}
//	    Values are strings. /config/brokers/<default> holds cluster-wide
//	    dynamic broker configs, /config/brokers/<id> one broker's. Kafka
//	    writes the config map in java.util.Properties order; sluice sorts it.
//
//	/config/changes/config_change_<seq>   persistent sequential, one per config change
//	    {"version":2,"entity_path":"topics/orders"}
//	    Written after the config znode, so that every broker (they all watch
//	    /config/changes) re-reads that entity. Version 1 was
//	    {"version":1,"entity_type":"topics","entity_name":"orders"}. Kafka
//	    removes notifications older than 15 minutes.
//
//	/admin/delete_topics/<topic>    persistent, no data: the topic is to be deleted
//	    The controller deletes the topic's partitions from every replica, then
//	    the topic's znodes, its config, and this marker.
//
//	/admin/reassign_partitions      persistent (legacy: before Kafka 2.4's AlterPartitionReassignments)
//	    {"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2]}]}
//
//	/latest_producer_id_block       persistent, the last producer-id block handed out
//	    {"version":1,"broker":1,"block_start":"0","block_end":"999"}
//	    Ids as decimal strings, both ends inclusive, blocks of 1000. A broker
//	    takes the next block with a conditional update on this znode's version.
//
//	/kafka-acl/<Type>/<name>        persistent, a literal resource pattern's ACLs
//	/kafka-acl-extended/prefixed/<Type>/<name>   persistent, a prefixed pattern's ACLs
//	    {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}
//	    <Type> is Topic, Group, Cluster, TransactionalId, DelegationToken or
//	    User (the cluster's one name is kafka-cluster); operations and
//	    permissions in the same camel case ("DescribeConfigs", "Deny"); host
//	    "*" or an IP address. Written only with an authorizer configured,
//	    conditionally on the znode's version; the last ACL removed removes
//	    the znode. The broker creates the roots, each type's child and both
//	    change paths when its authorizer starts.
//
//	/kafka-acl-changes/acl_changes_<seq>            persistent sequential, a literal pattern changed
//	    TOPIC:orders
//	    Not JSON: the Java enum name of the type, a colon, the name.
//	/kafka-acl-extended-changes/acl_changes_<seq>   persistent sequential, a prefixed one changed
//	    {"version":1,"resourceType":"TOPIC","name":"orders-","patternType":"PREFIXED"}
//	    Every broker watches both paths and re-reads the pattern named;
//	    notifications older than 15 minutes are removed, as under
//	    /config/changes.
//
//	/log_dir_event_notification/log_dir_event_<seq> persistent sequential, a broker's log failed or recovered
//	    {"version":1,"broker":2,"event":1}
//	    Read and removed by the controller, which asks the broker about its
//	    replicas (logdirevents.go).
//
// Kafka creates PersistentPaths (empty) when a broker starts, including
// /isr_change_notification, /log_dir_event_notification, /brokers/seqid and
// the old consumers' /consumers; sluice writes nothing under the others. Znodes of
// Kafka features sluice does not have (/feature, /delegation_token,
// /migration) are left alone.
//
// # Files
//
// The session (client.go), registration (registration.go), election and
// fenced writes (election.go), topic administration from any broker
// (admin.go), and the controller driver: the loop around the decision core
// of coordinator/controller (controllerloop.go), its reads (loader.go),
// writes (writes.go), channel to the brokers (sender.go), and its part in
// elections: ElectLeaders, topics' unclean election setting, the
// rebalance's ticks (elections.go).
//
// Smaller jobs, one file each:
//
//	clusterid.go   ClusterID: read /cluster/id, or create it (first broker wins)
//	configstore.go Config, SetConfig: /config/<type>/<name> and its change notification
//	configwatch.go WatchConfigChanges: every broker's listener on /config/changes
//	               (ChangeWatcher, the loop of every change path)
//	acls.go        LoadACLs, UpdateACLs, WatchACLChanges: /kafka-acl*, the authorizer's store
//	producerids.go AllocateProducerIDBlock: the next block of /latest_producer_id_block
//	logdirevents.go NotifyLogDirEvent, and the controller's reading of them
//
// The connections to the brokers' listeners are wire/interbroker's Client,
// which finds a broker from its registration through BrokerAddress
// (registration.go).
//
// Lock order: the driver's channels.mu before a brokerQueue's mu; no lock
// is held across a ZooKeeper call or a Send. The driver's configNotices.mu
// is a leaf, taken alone.
//
// These payloads are part of the format: Kafka's brokers and tools read
// them, and a cluster's ZooKeeper outlives any one sluice release. Do not
// change them; a new field is a new payload version, as in Kafka.
package zk
