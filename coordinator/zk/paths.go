package zk

// The znode paths of Kafka's ZooKeeper mode (kafka.zk.ZkData), relative to
// the chroot of zookeeper.connect. doc.go describes each znode's payload.

import (
	"fmt"
	"strconv"
	"strings"
)

// Fixed paths.
const (
	ClusterPath            = "/cluster"
	ClusterIDPath          = "/cluster/id"
	ControllerPath         = "/controller"
	ControllerEpochPath    = "/controller_epoch"
	BrokersPath            = "/brokers"
	BrokerIDsPath          = "/brokers/ids"
	BrokerSeqIDPath        = "/brokers/seqid"
	TopicsPath             = "/brokers/topics"
	ConfigPath             = "/config"
	ConfigChangesPath      = "/config/changes"
	AdminPath              = "/admin"
	DeleteTopicsPath       = "/admin/delete_topics"
	ReassignPartitionsPath = "/admin/reassign_partitions"
	ProducerIDBlockPath    = "/latest_producer_id_block"
	ISRChangeNotifyPath    = "/isr_change_notification"
	LogDirEventNotifyPath  = "/log_dir_event_notification"
	ConsumersPath          = "/consumers"
	ConfigChangePrefix     = "config_change_"
	ConfigChangeCreatePath = ConfigChangesPath + "/" + ConfigChangePrefix
	partitionsChild        = "/partitions"
	partitionStateChild    = "/state"
	configChangeSeqDigits  = 10
	maxChangeSeqSize       = 11 // a negative sequence: "-2147483648"
)

// Config entity types: the children of /config (Kafka's ConfigType.ALL).
const (
	ConfigTopics  = "topics"
	ConfigClients = "clients"
	ConfigUsers   = "users"
	ConfigBrokers = "brokers"
	ConfigIPs     = "ips"
)

// DefaultEntity names the default entity of a config type:
// /config/brokers/<default> holds the cluster-wide dynamic broker configs.
const DefaultEntity = "<default>"

// ConfigTypes lists the config entity types in Kafka's order.
var ConfigTypes = []string{ConfigTopics, ConfigClients, ConfigUsers, ConfigBrokers, ConfigIPs}

// PersistentPaths are the znodes a Kafka broker creates (empty, if missing)
// when it starts (ZkData.PersistentZkPaths), in Kafka's order.
var PersistentPaths = []string{
	ConsumersPath,
	BrokerIDsPath,
	TopicsPath,
	ConfigChangesPath,
	DeleteTopicsPath,
	BrokerSeqIDPath,
	ISRChangeNotifyPath,
	ProducerIDBlockPath,
	LogDirEventNotifyPath,
	ConfigPath + "/" + ConfigTopics,
	ConfigPath + "/" + ConfigClients,
	ConfigPath + "/" + ConfigUsers,
	ConfigPath + "/" + ConfigBrokers,
	ConfigPath + "/" + ConfigIPs,
}

// BrokerPath is broker id's registration, /brokers/ids/<id>.
func BrokerPath(id int32) string { return BrokerIDsPath + "/" + strconv.Itoa(int(id)) }

// TopicPath is a topic's assignment, /brokers/topics/<topic>.
func TopicPath(topic string) string { return TopicsPath + "/" + topic }

// PartitionsPath is the parent of a topic's partitions,
// /brokers/topics/<topic>/partitions (no data).
func PartitionsPath(topic string) string { return TopicPath(topic) + partitionsChild }

// PartitionPath is /brokers/topics/<topic>/partitions/<p> (no data).
func PartitionPath(topic string, partition int32) string {
	return PartitionsPath(topic) + "/" + strconv.Itoa(int(partition))
}

// PartitionStatePath is a partition's leader and ISR,
// /brokers/topics/<topic>/partitions/<p>/state.
func PartitionStatePath(topic string, partition int32) string {
	return PartitionPath(topic, partition) + partitionStateChild
}

// ConfigTypePath is /config/<entityType>.
func ConfigTypePath(entityType string) string { return ConfigPath + "/" + entityType }

// ConfigEntityPath is an entity's config, /config/<entityType>/<name>. Topic
// and broker names are used as they are; Kafka URL-encodes user and client
// names first (Sanitizer), which is the caller's job.
func ConfigEntityPath(entityType, name string) string {
	return ConfigTypePath(entityType) + "/" + name
}

// DeleteTopicPath marks a topic for deletion, /admin/delete_topics/<topic>.
func DeleteTopicPath(topic string) string { return DeleteTopicsPath + "/" + topic }

// ParseBrokerID parses a child name of /brokers/ids. Kafka's ids are
// non-negative int32s.
func ParseBrokerID(name string) (int32, error) {
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil || id < 0 {
		return 0, bad(BrokerIDsPath+"/"+name, "not a broker id")
	}
	return int32(id), nil
}

// ParsePartition parses a child name of /brokers/topics/<topic>/partitions.
func ParsePartition(topic, name string) (int32, error) {
	p, err := strconv.ParseInt(name, 10, 32)
	if err != nil || p < 0 {
		return 0, bad(PartitionsPath(topic)+"/"+name, "not a partition number")
	}
	return int32(p), nil
}

// ConfigChangeSeq parses the sequence number of a child of /config/changes,
// config_change_<10 digits> (ZooKeeper's sequential suffix: the parent's
// cversion as %010d, which goes negative after 2^31 children). Notifications
// are processed in increasing sequence order.
func ConfigChangeSeq(name string) (int64, error) {
	return changeSeq(ConfigChangesPath, ConfigChangePrefix, name)
}

// changeSeq parses the sequence number of a child of the change path
// parent named prefix<10 digits>.
func changeSeq(parent, prefix, name string) (int64, error) {
	seq, ok := strings.CutPrefix(name, prefix)
	if !ok || len(seq) > maxChangeSeqSize || len(seq) < configChangeSeqDigits {
		return 0, bad(parent+"/"+name, "not a change notification")
	}
	n, err := strconv.ParseInt(seq, 10, 32)
	if err != nil {
		return 0, bad(parent+"/"+name, "not a change notification")
	}
	return n, nil
}

// ConfigChangeName is the child name ZooKeeper gives the notification of
// sequence seq.
func ConfigChangeName(seq int64) string {
	return fmt.Sprintf("%s%0*d", ConfigChangePrefix, configChangeSeqDigits, seq)
}
