package dynamic

// DescribeConfigs: every resource's entries, with their values, sources,
// synonyms and documentation, read through the layers.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
)

// Describe answers a DescribeConfigs request. A resource type Kafka does
// not know fails every resource of the request with INVALID_REQUEST, as
// Kafka's authorization pass throws on it before describing anything;
// otherwise each resource is authorized, then described.
func (s *Service) Describe(req *kmsg.DescribeConfigsRequest, authorize Authorize) *kmsg.DescribeConfigsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	var unknown *kmsg.DescribeConfigsRequestResource
	for i, rr := range req.Resources {
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeClientMetrics:
		default:
			unknown = &req.Resources[i]
		}
	}
	for _, rr := range req.Resources {
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		var code int16
		var msg string
		if unknown != nil {
			code, msg = kerr.InvalidRequest.Code, fmt.Sprintf("Unexpected resource type %d for resource %s", int8(unknown.ResourceType), unknown.ResourceName)
		} else if code, msg = authorize(rr.ResourceType, rr.ResourceName); code == 0 {
			res.Configs, code, msg = s.describe(req, &rr)
		}
		if code != 0 {
			res.ErrorCode, res.ErrorMessage, res.Configs = code, &msg, nil
		}
		resp.Resources = append(resp.Resources, res)
	}
	return resp
}

func (s *Service) describe(req *kmsg.DescribeConfigsRequest, rr *kmsg.DescribeConfigsRequestResource) ([]kmsg.DescribeConfigsResponseResourceConfig, int16, string) {
	var entries []kmsg.DescribeConfigsResponseResourceConfig
	wanted := func(name string) bool {
		return len(rr.ConfigNames) == 0 || slices.Contains(rr.ConfigNames, name)
	}
	add := func(k *config.Key, value *string, chain []config.SourcedValue, readOnly bool) {
		if !wanted(k.Name) {
			return
		}
		e := kmsg.NewDescribeConfigsResponseResourceConfig()
		e.Name, e.Value, e.ReadOnly = k.Name, value, readOnly
		e.IsSensitive = k.Sensitive()
		if e.IsSensitive {
			e.Value = nil // never the secret, in the synonyms either
		}
		e.Source = kmsg.ConfigSourceDefaultConfig
		if len(chain) > 0 {
			e.Source = chain[0].Source
		}
		e.IsDefault = e.Source == kmsg.ConfigSourceDefaultConfig
		if req.IncludeSynonyms {
			for _, sv := range chain {
				syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				syn.Name, syn.Value, syn.Source = sv.Name, sv.Value, sv.Source
				if e.IsSensitive {
					syn.Value = nil
				}
				e.ConfigSynonyms = append(e.ConfigSynonyms, syn)
			}
		}
		e.ConfigType = k.Type
		if req.IncludeDocumentation && k.Doc != "" {
			// A key Kafka does not document (a listener-prefixed or an
			// undefined one) has none: null, as in Kafka.
			doc := k.Doc
			e.Documentation = &doc
		}
		entries = append(entries, e)
	}
	switch rr.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		name := rr.ResourceName
		if err := s.o.ValidTopicName(name); err != nil {
			return nil, kerr.InvalidTopicException.Code, err.Error()
		}
		overrides, ok := s.TopicConfigs(name)
		if !ok {
			return nil, kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("topic %s does not exist", name)
		}
		for i := range config.TopicKeys {
			k := &config.TopicKeys[i]
			v, chain := s.Layers().TopicChain(k, overrides)
			add(k, v, chain, false)
		}
	case kmsg.ConfigResourceTypeBroker:
		perBroker, code, msg := s.brokerResource(rr.ResourceName)
		if code != 0 {
			return nil, code, msg
		}
		for i := range config.BrokerKeys {
			k := &config.BrokerKeys[i]
			chain := s.Layers().BrokerChain(config.BrokerSynonyms(k.Name), perBroker)
			// As Kafka: a key's own synonyms start at the key itself
			// (log.retention.hours does not report log.retention.ms).
			for len(chain) > 0 && chain[0].Name != k.Name {
				chain = chain[1:]
			}
			if !perBroker {
				// The cluster default lists what is set there, alone.
				chain = slices.DeleteFunc(chain, func(sv config.SourcedValue) bool { return sv.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig })
				if len(chain) == 0 {
					continue
				}
			}
			if k.Undefined && len(chain) == 0 {
				continue // described only when set, as Kafka
			}
			var v *string
			if len(chain) > 0 {
				v = chain[0].Value
			}
			add(k, v, chain, !k.Dynamic)
		}
		if perBroker {
			// The listener-prefixed keys the configuration sets.
			for name := range s.o.Static {
				base := config.ListenerKey(name)
				if base == nil {
					continue
				}
				chain := s.Layers().BrokerChain(config.BrokerSynonyms(name), true)
				add(config.ListenerPrefixedDescription(name, base), chain[0].Value, chain, true)
			}
		}
	default:
		kind := "BROKER_LOGGER"
		if rr.ResourceType == kmsg.ConfigResourceTypeClientMetrics {
			kind = "CLIENT_METRICS"
		}
		return nil, kerr.InvalidRequest.Code, kind + " resources are not supported by sluice"
	}
	slices.SortFunc(entries, func(a, b kmsg.DescribeConfigsResponseResourceConfig) int { return strings.Compare(a.Name, b.Name) })
	return entries, 0, ""
}
