// Package coordinator keeps sluice's cluster metadata (brokers, topics,
// their IDs, partition counts and configurations) behind one interface with
// two backends: the embedded one here, for a single node, which keeps the
// metadata in a file of the data directory, and the ZooKeeper one of
// coordinator/zk (Backend) for clusters.
package coordinator

import (
	"errors"

	"github.com/sluice-io/sluice/engine"
)

// Errors of every backend.
var (
	// ErrTopicExists is returned when creating a topic that exists.
	ErrTopicExists = errors.New("coordinator: topic already exists")
	// ErrUnknownTopic is returned for a topic that does not exist.
	ErrUnknownTopic = errors.New("coordinator: unknown topic")
	// ErrInvalidPartitions is returned when a partition count does not
	// grow.
	ErrInvalidPartitions = errors.New("coordinator: partition count must grow")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("coordinator: closed")
)

// Broker is a registered broker.
type Broker struct {
	ID   int32
	Host string
	Port int32
	Rack *string
}

// Topic is a topic's metadata.
type Topic struct {
	Name              string
	ID                engine.TopicID
	Partitions        int32
	ReplicationFactor int16
	// Configs holds the topic's overrides of broker defaults, by Kafka key.
	Configs map[string]string
}

// Coordinator is the cluster metadata service the broker uses.
type Coordinator interface {
	// ClusterID is the cluster's ID, fixed when the cluster first started.
	ClusterID() string
	// ControllerID is the broker acting as controller.
	ControllerID() int32
	// Brokers lists the live brokers.
	Brokers() []Broker
	// Topics lists every topic.
	Topics() []Topic
	// Topic returns one topic by name.
	Topic(name string) (Topic, bool)
	// CreateTopic records a new topic (its ID is assigned if zero) and
	// returns it. ErrTopicExists if the name is taken.
	CreateTopic(t Topic) (Topic, error)
	// DeleteTopic removes a topic. ErrUnknownTopic if it does not exist.
	DeleteTopic(name string) error
	// SetPartitions raises a topic's partition count to n and returns the
	// topic. ErrUnknownTopic if it does not exist; ErrInvalidPartitions if n
	// is not above the current count.
	SetPartitions(name string, n int32) (Topic, error)
	// SetTopicConfigs replaces a topic's configuration overrides and returns
	// the topic. ErrUnknownTopic if it does not exist.
	SetTopicConfigs(name string, configs map[string]string) (Topic, error)
	// BrokerConfigs returns the dynamic broker configuration: the
	// cluster-wide defaults set at run time, by Kafka key.
	BrokerConfigs() map[string]string
	// SetBrokerConfigs replaces the dynamic broker configuration.
	SetBrokerConfigs(configs map[string]string) error
	// NodeConfigs returns one broker's own dynamic configuration (Kafka's
	// broker resource named by its id), which overrides BrokerConfigs on
	// that broker.
	NodeConfigs(id int32) map[string]string
	// SetNodeConfigs replaces one broker's own dynamic configuration.
	SetNodeConfigs(id int32, configs map[string]string) error
	// AllocateProducerIDs reserves a block of n producer ids [first,
	// first+n) for idempotent producers, recorded durably before it returns:
	// no id of it is ever returned again, across restarts. Blocks increase.
	// ErrProducerIDsExhausted once they would pass the largest int64.
	AllocateProducerIDs(n int64) (first int64, err error)
	// Close releases the backend.
	Close() error
}
