// Package coordinator keeps sluice's cluster metadata (topics, their IDs,
// replica assignments and configurations, broker configurations, producer
// id blocks) behind one interface with two backends: the embedded one
// here, for a single node, which keeps the metadata in a file of the data
// directory and runs the cluster's controller in-process
// (localcontroller.go), so that a single node is the one-broker case of a
// cluster; and the ZooKeeper one of coordinator/zk (Backend), whose
// controller is elected among the brokers.
package coordinator

import (
	"context"
	"errors"

	"github.com/sluice-io/sluice/coordinator/controller"
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
	// ErrTopicDeleting is partitions added to a topic being deleted.
	ErrTopicDeleting = errors.New("coordinator: topic is being deleted")
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

// Assignment is a topic's replica assignment: its id and each partition's
// replicas, the preferred leader first.
type Assignment struct {
	ID       engine.TopicID
	Replicas [][]int32
}

// Coordinator is the cluster metadata service a broker uses beside the
// controller's requests: topic and broker configurations, topic
// administration (carried out by the controller, which tells the brokers
// with LeaderAndIsr, UpdateMetadata and StopReplica) and producer id
// blocks. Partition state reaches the broker only from the controller.
//
// Calls never block for long, except where said; a broker may call
// Topic under its own locks (it is served from memory).
type Coordinator interface {
	// ClusterID is the cluster's ID, fixed when the cluster first started.
	ClusterID() string
	// Topics lists every topic (from the backend's store: it may be slow).
	Topics() []Topic
	// Topic returns one topic's configuration (and, on the single node,
	// its id and counts) from memory; false when not known here: see
	// LoadTopic.
	Topic(name string) (Topic, bool)
	// LoadTopic makes a topic's configuration known to Topic, and kept
	// current as it changes.
	LoadTopic(name string) error
	// CreateTopic writes a new topic, placed as req asks over the live
	// brokers, for the controller to create. ErrTopicExists if the name
	// is taken; placement refusals carry controller.Code's codes.
	CreateTopic(name string, req controller.TopicRequest, configs map[string]string) (Assignment, error)
	// AddPartitions grows a topic to count partitions, placed or as
	// assignments gives them, for the controller to create.
	// ErrUnknownTopic if it does not exist.
	AddPartitions(name string, count int32, assignments [][]int32) (Assignment, error)
	// DeleteTopic marks a topic for deletion by the controller.
	// ErrUnknownTopic if it does not exist.
	DeleteTopic(name string) error
	// AwaitDeleted waits, until ctx ends, for a topic marked for deletion
	// to be gone from the backend, where that is quick to learn (the
	// single node); others return at once.
	AwaitDeleted(ctx context.Context, name string) error
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
	// OnConfigChange sets fn to be called when another broker changed a
	// configuration entity ("topics" and a topic, "brokers" and
	// "<default>" or an id); the single node, alone, never calls it.
	OnConfigChange(fn func(entityType, name string))
	// EntityConfigs returns the configs of a client entity, named by its
	// entity path (sanitize.go: "users/<user>", "clients/<id>",
	// "users/<user>/clients/<id>"): SCRAM credentials and quotas. An
	// entity with none has an empty map. It reads the backend's store.
	EntityConfigs(path string) (map[string]string, error)
	// AlterEntityConfigs replaces an entity's configs with what alter
	// returns from the current ones, atomically (a concurrent writer makes
	// it read and call alter again); an empty result leaves the entity
	// with none. Every broker learns of the change (OnConfigChange with
	// "users" or "clients" and the rest of the path), except, on the
	// single node, this one: the caller applies its own change.
	AlterEntityConfigs(path string, alter func(cur map[string]string) (map[string]string, error)) error
	// Entities lists the entity paths under "users" or "clients" that
	// have configs (users/<user>/clients/<id> among the users), sorted.
	Entities(entityType string) ([]string, error)
	// AllocateProducerIDs reserves a block of n producer ids [first,
	// first+n) for idempotent producers, recorded durably before it returns:
	// no id of it is ever returned again, across restarts. Blocks increase.
	// ErrProducerIDsExhausted once they would pass the largest int64.
	AllocateProducerIDs(n int64) (first int64, err error)
	// Close releases the backend.
	Close() error
}
