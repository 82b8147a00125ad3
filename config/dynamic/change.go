package dynamic

// Changes: a new override set of a topic, or a new dynamic broker layer,
// validated as Kafka does, persisted in the Store and applied (ApplyTopic,
// ApplyBroker). The caller holds Admin from validation until applied.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator"
)

// SetTopicConfigsLocked validates a topic's complete new override set and,
// unless validateOnly, persists and applies it. Errors in Kafka's order
// (its controller's): the name, the configs, then whether the topic
// exists. The values of configs are normalized in place. Admin is held.
func (s *Service) SetTopicConfigsLocked(name string, configs map[string]string, validateOnly bool) (int16, string) {
	if name == "" {
		return kerr.InvalidRequest.Code, "Default topic resources are not allowed."
	}
	if err := s.o.ValidTopicName(name); err != nil {
		return kerr.InvalidTopicException.Code, err.Error()
	}
	for _, k := range slices.Sorted(maps.Keys(configs)) { // the first error, in key order
		v := configs[k]
		nv, err := config.ValidateTopicConfig(k, &v)
		if err != nil {
			return kerr.InvalidConfig.Code, err.Error()
		}
		configs[k] = nv
	}
	if err := config.ValidateTopicConfigs(configs, func(k string) string { return s.Layers().TopicValue(k, nil) }); err != nil {
		return kerr.InvalidConfig.Code, err.Error()
	}
	if !s.o.TopicExists(name) {
		return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("topic %s does not exist", name)
	}
	if validateOnly {
		return 0, ""
	}
	if len(configs) == 0 {
		configs = nil
	}
	t, err := s.o.Store.SetTopicConfigs(name, configs)
	if errors.Is(err, coordinator.ErrUnknownTopic) {
		return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("topic %s does not exist", name)
	}
	if err != nil {
		s.o.Log.Error("saving topic configs", "topic", name, "err", err)
		return kerr.UnknownServerError.Code, err.Error()
	}
	s.o.ApplyTopic(name, t.ID, t.Configs)
	s.o.Log.Info("altered topic configs", "topic", name, "configs", t.Configs)
	return 0, ""
}

// brokerConfigs returns a copy of one dynamic broker layer.
func (s *Service) brokerConfigs(perBroker bool) map[string]string {
	d := s.dynamic.Load()
	if perBroker {
		return maps.Clone(d.Node)
	}
	return maps.Clone(d.Cluster)
}

// setBrokerConfigsLocked validates one dynamic broker layer's complete new
// set and, unless validateOnly, persists it and applies it everywhere.
// Kafka answers a broker config it refuses with INVALID_REQUEST, not
// INVALID_CONFIG (KAFKA-13609), and so does sluice. Admin is held.
func (s *Service) setBrokerConfigsLocked(perBroker bool, configs map[string]string, validateOnly bool) (int16, string) {
	var readOnly []string
	for k := range configs {
		if config.ReadOnlyBrokerKey(k) {
			readOnly = append(readOnly, k)
		}
	}
	if len(readOnly) > 0 {
		slices.Sort(readOnly)
		return kerr.InvalidRequest.Code, fmt.Sprintf("Cannot update these configs dynamically: %v", readOnly)
	}
	if !perBroker {
		var onlyPerBroker []string
		for k := range configs {
			if bk := config.BrokerKeyByName[k]; bk != nil && bk.PerBroker {
				onlyPerBroker = append(onlyPerBroker, k)
			}
		}
		if len(onlyPerBroker) > 0 {
			slices.Sort(onlyPerBroker)
			return kerr.InvalidRequest.Code, fmt.Sprintf("Cannot update these configs at default cluster level, broker id must be specified: %v", onlyPerBroker)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(configs)) { // the first error, in key order
		nv, err := config.ValidateBrokerConfig(k, configs[k])
		if err != nil {
			return kerr.InvalidRequest.Code, err.Error()
		}
		configs[k] = nv
	}
	if validateOnly {
		return 0, ""
	}
	if len(configs) == 0 {
		configs = nil
	}
	cur := s.dynamic.Load()
	next := &config.DynamicConfigs{Node: cur.Node, Cluster: cur.Cluster}
	var err error
	if perBroker {
		err = s.o.Store.SetNodeConfigs(s.o.ID, configs)
		next.Node = configs
	} else {
		err = s.o.Store.SetBrokerConfigs(configs)
		next.Cluster = configs
	}
	if err != nil {
		s.o.Log.Error("saving dynamic broker configs", "err", err)
		return kerr.UnknownServerError.Code, err.Error()
	}
	s.dynamic.Store(next)
	s.o.ApplyBroker()
	resource := "cluster default"
	if perBroker {
		resource = "broker " + strconv.Itoa(int(s.o.ID))
	}
	s.o.Log.Info("altered dynamic broker configs", "resource", resource, "configs", configs)
	return 0, ""
}
