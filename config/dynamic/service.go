package dynamic

import (
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/engine"
)

// Store is where the configurations are kept: the metadata backend's
// (coordinator.Coordinator satisfies it). Topic is called under Admin and
// must answer from memory.
type Store interface {
	// Topic returns a topic's metadata, its overrides among them; false
	// when not known here (see LoadTopic).
	Topic(name string) (coordinator.Topic, bool)
	// LoadTopic makes a topic's configuration known to Topic.
	LoadTopic(name string) error
	// SetTopicConfigs replaces a topic's overrides and returns the topic;
	// coordinator.ErrUnknownTopic if it does not exist.
	SetTopicConfigs(name string, configs map[string]string) (coordinator.Topic, error)
	// BrokerConfigs returns the cluster-wide dynamic default layer.
	BrokerConfigs() map[string]string
	// SetBrokerConfigs replaces the cluster-wide dynamic default layer.
	SetBrokerConfigs(configs map[string]string) error
	// NodeConfigs returns one broker's own dynamic layer.
	NodeConfigs(id int32) map[string]string
	// SetNodeConfigs replaces one broker's own dynamic layer.
	SetNodeConfigs(id int32, configs map[string]string) error
}

// Options are a Service's collaborators.
type Options struct {
	// ID is this broker's id: its broker resource's name.
	ID int32
	// Static is the static layer (config.StaticBrokerConfigs of the
	// configuration as given); read-only.
	Static map[string]string
	// Store keeps the topic overrides and the dynamic broker layers.
	Store Store
	// Admin is the broker's administration lock, held from a change's
	// validation until it is applied (and around a remote change).
	Admin sync.Locker
	// ValidTopicName checks a topic name by Kafka's rules.
	ValidTopicName func(name string) error
	// TopicExists reports whether the cluster has a topic (the
	// controller's metadata), hosted here or not.
	TopicExists func(name string) bool
	// ApplyTopic makes a topic's new overrides current for its open logs
	// and partitions: the topic of that id, or of that name when id is
	// zero. Called with Admin held.
	ApplyTopic func(name string, id engine.TopicID, configs map[string]string)
	// ApplyBroker applies the dynamic broker layers, just changed, to every
	// open log and the broker-wide settings. Called with Admin held.
	ApplyBroker func()
	// Log is the service's logger.
	Log *slog.Logger
}

// Service is the broker's run-time configuration: its layers and the
// changes DescribeConfigs, AlterConfigs and IncrementalAlterConfigs make.
type Service struct {
	o       Options
	dynamic atomic.Pointer[config.DynamicConfigs]
}

// New makes the Service and reads the dynamic layers from the Store.
func New(o Options) *Service {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	s := &Service{o: o}
	s.Load()
	return s
}

// Load (re)reads the dynamic layers from the Store. Persisted entries that
// no longer validate are dropped with a warning, as Kafka does.
func (s *Service) Load() {
	valid := func(layer string, m map[string]string) map[string]string {
		for k, v := range m {
			if _, err := config.ValidateBrokerConfig(k, v); err != nil {
				if config.SensitiveBrokerKey(k) {
					v = "[hidden]" // as Kafka logs a secret
				}
				s.o.Log.Warn("ignoring invalid dynamic broker config", "layer", layer, "key", k, "value", v, "err", err)
				delete(m, k)
			}
		}
		return m
	}
	s.dynamic.Store(&config.DynamicConfigs{
		Node:    valid("broker "+strconv.Itoa(int(s.o.ID)), s.o.Store.NodeConfigs(s.o.ID)),
		Cluster: valid("cluster default", s.o.Store.BrokerConfigs()),
	})
}

// Layers are the broker's layers now, for reading effective values
// through config (config/effective.go).
func (s *Service) Layers() config.Layers {
	return config.Layers{Static: s.o.Static, Dynamic: s.dynamic.Load()}
}

// Dynamic is the dynamic layers now; immutable.
func (s *Service) Dynamic() *config.DynamicConfigs { return s.dynamic.Load() }

// Static is the static layer; read-only.
func (s *Service) Static() map[string]string { return s.o.Static }

// TopicConfigs returns a topic's overrides, or false if the cluster has no
// such topic.
func (s *Service) TopicConfigs(name string) (map[string]string, bool) {
	if !s.o.TopicExists(name) {
		return nil, false
	}
	t, ok := s.o.Store.Topic(name)
	if !ok {
		if err := s.o.Store.LoadTopic(name); err != nil {
			s.o.Log.Warn("reading a topic's config", "topic", name, "err", err)
		}
		t, _ = s.o.Store.Topic(name)
	}
	return t.Configs, true
}

// brokerResource checks a broker resource name: "" (the cluster-wide
// default) or this broker's id. It returns whether it names this broker.
func (s *Service) brokerResource(name string) (perBroker bool, code int16, msg string) {
	if name == "" {
		return false, 0, ""
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return false, kerr.InvalidRequest.Code, "Broker id must be an integer, but it is: " + name
	}
	if int32(id) != s.o.ID {
		return false, kerr.InvalidRequest.Code, fmt.Sprintf("Unexpected broker id, expected %d or empty string, but received %s", s.o.ID, name)
	}
	return true, 0, ""
}

// Changed applies a change another broker made (ZooKeeper mode's
// /config/changes): a topic's overrides ("topics"), read again from the
// Store, or the dynamic broker layers ("brokers"), read again and applied
// everywhere. It takes Admin; other entity types are not the Service's.
func (s *Service) Changed(entityType, name string) {
	s.o.Admin.Lock()
	defer s.o.Admin.Unlock()
	switch entityType {
	case "topics":
		t, _ := s.o.Store.Topic(name)
		s.o.ApplyTopic(name, engine.TopicID{}, t.Configs)
		s.o.Log.Info("topic configs changed", "topic", name, "configs", t.Configs)
	case "brokers":
		s.Load()
		s.o.ApplyBroker()
		s.o.Log.Info("dynamic broker configs changed", "entity", name)
	}
}
