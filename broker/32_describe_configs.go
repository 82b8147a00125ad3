package broker

// DescribeConfigs (key 32), versions 0-4.
//
// Behavior:
//   - Topic resources (type 2) list every topic key (config/keys.go) with its
//     effective value and source: the topic's override
//     (DYNAMIC_TOPIC_CONFIG), else the first broker synonym set in this
//     broker's dynamic config, the cluster-wide dynamic default, the
//     configuration file, or Kafka's default, else the topic key's own
//     default (DEFAULT_CONFIG). Topic keys are never read-only. An invalid
//     name gets INVALID_TOPIC_EXCEPTION, an unknown topic
//     UNKNOWN_TOPIC_OR_PARTITION.
//   - Broker resources (type 4): "" is the cluster-wide dynamic default and
//     lists only the keys set there; this broker's id lists every broker
//     key sluice knows, each read-only unless sluice can change it at run
//     time, and the listener-prefixed keys its configuration sets; the
//     authorizer's super.users and allow.everyone.if.no.acl.found only when
//     set (config/keys_security.go). A name that is not an integer, or another
//     broker's id, gets INVALID_REQUEST, as Kafka.
//   - A sensitive key (Kafka's PASSWORD type, or a type Kafka does not
//     know) is described with IsSensitive and a null value, its synonyms'
//     values null too: a secret is never sent.
//   - BROKER_LOGGER (8) and CLIENT_METRICS (16) resources get
//     INVALID_REQUEST: sluice has neither. A type Kafka does not know fails
//     every resource of the request with INVALID_REQUEST, as in Kafka, whose
//     authorization pass throws on it before describing anything.
//   - ConfigurationKeys (ConfigNames), when not null or empty, keeps only the named keys
//     (unknown names are left out silently). Entries are sorted by name.
//
// Version notes: v0 reports IsDefault: the source is DEFAULT_CONFIG (Kafka
// 3.9's broker leaves it false, so its v0 clients take every value for
// set; sluice answers what the field means); v1+
// the source and, when IncludeSynonyms, the synonyms: every layer's value,
// highest priority first; v3+ the config type and, when
// IncludeDocumentation, a short documentation string.
//
// Authorization, as Kafka: DescribeConfigs on the topic, or on the cluster
// for broker, broker-logger and client-metrics resources
// (TOPIC_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED for that
// resource alone).

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/broker/cluster"
	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(32, 0, 4, handleDescribeConfigs) }

func handleDescribeConfigs(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeConfigsRequest)
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
		} else if code, msg = c.configAuthorized(acl.OpDescribeConfigs, rr.ResourceType, rr.ResourceName); code == 0 {
			res.Configs, code, msg = c.b.describeResource(req, &rr)
		}
		if code != 0 {
			res.ErrorCode, res.ErrorMessage, res.Configs = code, &msg, nil
		}
		resp.Resources = append(resp.Resources, res)
	}
	return resp, nil
}

func (b *Broker) describeResource(req *kmsg.DescribeConfigsRequest, rr *kmsg.DescribeConfigsRequestResource) ([]kmsg.DescribeConfigsResponseResourceConfig, int16, string) {
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
			for _, s := range chain {
				syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				syn.Name, syn.Value, syn.Source = s.Name, s.Value, s.Source
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
		if err := cluster.ValidateTopicName(name); err != nil {
			return nil, kerr.InvalidTopicException.Code, err.Error()
		}
		overrides, ok := b.topicConfigs(name)
		if !ok {
			return nil, kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("topic %s does not exist", name)
		}
		for i := range config.TopicKeys {
			k := &config.TopicKeys[i]
			v, chain := b.cfgs.layers().TopicChain(k, overrides)
			add(k, v, chain, false)
		}
	case kmsg.ConfigResourceTypeBroker:
		perBroker, code, msg := b.brokerResource(rr.ResourceName)
		if code != 0 {
			return nil, code, msg
		}
		for i := range config.BrokerKeys {
			k := &config.BrokerKeys[i]
			chain := b.cfgs.layers().BrokerChain(config.BrokerSynonyms(k.Name), perBroker)
			// As Kafka: a key's own synonyms start at the key itself
			// (log.retention.hours does not report log.retention.ms).
			for len(chain) > 0 && chain[0].Name != k.Name {
				chain = chain[1:]
			}
			if !perBroker {
				// The cluster default lists what is set there, alone.
				chain = slices.DeleteFunc(chain, func(s config.SourcedValue) bool { return s.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig })
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
			for name := range b.cfgs.static {
				base := config.ListenerKey(name)
				if base == nil {
					continue
				}
				chain := b.cfgs.layers().BrokerChain(config.BrokerSynonyms(name), true)
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
