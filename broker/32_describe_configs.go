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
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(32, 0, 4, handleDescribeConfigs) }

func handleDescribeConfigs(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeConfigsRequest)
	return c.b.cfgs.Describe(req, func(kind kmsg.ConfigResourceType, name string) (int16, string) {
		return c.configAuthorized(acl.OpDescribeConfigs, kind, name)
	}), nil
}
