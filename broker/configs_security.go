package broker

// The catalogue's listener and security keys (listeners.go, tlsconfig.go,
// saslconfig.go, authzconfig.go), and how DescribeConfigs treats what
// Kafka 3.9's ConfigHelper treats apart: secrets, listener-prefixed keys
// and keys KafkaConfig does not define.
//
//   - A key of Kafka's PASSWORD type (ssl.key.password, sasl.jaas.config,
//     ...) is sensitive: described with a null value, in its synonyms too,
//     and IsSensitive set, whether it is set or not.
//   - A listener-prefixed key the configuration file sets
//     (listener.name.<listener>.ssl.client.auth,
//     listener.name.<listener>.<mechanism>.sasl.jaas.config) is described
//     under its own name, as Kafka describes the originals of its
//     configuration: with the base key's type (sensitive if the base key
//     is), read-only, no documentation, and as synonyms itself then the
//     base key's layers (DynamicBrokerConfig.brokerConfigSynonyms: a
//     mechanism's sasl.jaas.config has sasl.jaas.config as its base).
//   - super.users and allow.everyone.if.no.acl.found are the authorizer's,
//     not KafkaConfig's: Kafka describes them only when the file sets them,
//     as a key of unknown type, which it treats as sensitive (value null,
//     type UNKNOWN, no documentation). sluice answers the same.
//
// All of them are read at start only: sluice refuses to alter them
// dynamically as it refuses any read-only key, listener-prefixed ones
// included (Kafka can reconfigure some of them at run time; sluice
// cannot).

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaProtocolMapDefault is Kafka's default listener.security.protocol.map
// as it describes it (the order of its hash map).
const kafkaProtocolMapDefault = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"

// securityKeys are the listener, TLS, SASL, authorizer keys, static in
// sluice. Kafka's types and defaults, but for sluice's where it differs:
// listeners (localhost), the keystore and truststore types (sluice reads
// PEM only) and the SASL mechanisms (sluice serves no GSSAPI).
var securityKeys = []configKey{
	{name: "listeners", typ: kmsg.ConfigTypeString, def: str("PLAINTEXT://localhost:9092"),
		doc: "The listeners the broker accepts on, NAME://host:port, comma separated; an empty host is every interface. Kafka's default is PLAINTEXT://:9092."},
	{name: "advertised.listeners", typ: kmsg.ConfigTypeString,
		doc: "The addresses given to clients and other brokers for each listener, NAME://host:port; default the listeners' own (their bound port for port 0)."},
	{name: "listener.security.protocol.map", typ: kmsg.ConfigTypeString, def: str(kafkaProtocolMapDefault),
		doc: "Each listener's security protocol, NAME:PROTOCOL, comma separated: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL."},
	{name: "inter.broker.listener.name", typ: kmsg.ConfigTypeString,
		doc: "The listener brokers use with each other (ZooKeeper mode); exclusive with security.inter.broker.protocol."},
	{name: "security.inter.broker.protocol", typ: kmsg.ConfigTypeString, def: str(protoPlaintext),
		doc: "The inter-broker listener named by its security protocol, when inter.broker.listener.name is not set."},

	{name: "ssl.keystore.type", typ: kmsg.ConfigTypeString, def: str("PEM"),
		doc: "Format of the keystore: sluice reads PEM only (Kafka's default, JKS, is refused)."},
	{name: "ssl.keystore.location", typ: kmsg.ConfigTypeString,
		doc: "PEM file with the listener's private key and certificate chain; reread when it changes."},
	{name: "ssl.keystore.password", typ: kmsg.ConfigTypePassword,
		doc: "Password of a keystore file; refused with PEM, as Kafka refuses it."},
	{name: "ssl.keystore.key", typ: kmsg.ConfigTypePassword,
		doc: "The private key in PEM, inline, instead of ssl.keystore.location."},
	{name: "ssl.keystore.certificate.chain", typ: kmsg.ConfigTypePassword,
		doc: "The certificate chain in PEM, inline, with ssl.keystore.key."},
	{name: "ssl.key.password", typ: kmsg.ConfigTypePassword,
		doc: "Password of an encrypted (PKCS#8) private key."},
	{name: "ssl.truststore.type", typ: kmsg.ConfigTypeString, def: str("PEM"),
		doc: "Format of the truststore: sluice reads PEM only (Kafka's default, JKS, is refused)."},
	{name: "ssl.truststore.location", typ: kmsg.ConfigTypeString,
		doc: "PEM file of the certificates client certificates are verified against; reread when it changes."},
	{name: "ssl.truststore.password", typ: kmsg.ConfigTypePassword,
		doc: "Password of a truststore file; refused with PEM, as Kafka refuses it."},
	{name: "ssl.truststore.certificates", typ: kmsg.ConfigTypePassword,
		doc: "The trusted certificates in PEM, inline, instead of ssl.truststore.location."},
	{name: "ssl.client.auth", typ: kmsg.ConfigTypeString, def: str("none"),
		doc: "Whether the listener asks for a client certificate: none, requested or required."},
	{name: "ssl.enabled.protocols", typ: kmsg.ConfigTypeList, def: str("TLSv1.2,TLSv1.3"),
		doc: "TLS versions the listener accepts."},
	{name: "ssl.protocol", typ: kmsg.ConfigTypeString, def: str("TLSv1.3"),
		doc: "The highest TLS version the listener negotiates."},
	{name: "ssl.cipher.suites", typ: kmsg.ConfigTypeList, def: str(""),
		doc: "TLS 1.2 cipher suites the listener accepts, by their IANA names; empty: Go's default suites."},
	{name: "ssl.principal.mapping.rules", typ: kmsg.ConfigTypeString, def: str("DEFAULT"),
		doc: "Rules turning a client certificate's distinguished name into the principal's name; DEFAULT keeps the whole name."},
	{name: "ssl.endpoint.identification.algorithm", typ: kmsg.ConfigTypeString, def: str("https"),
		doc: "https: the broker, as a TLS client of other brokers, checks their certificate names their host; empty: no check."},
	{name: "ssl.handshake.timeout.ms", typ: kmsg.ConfigTypeLong, def: str("10000"),
		doc: "sluice's bound on a client's TLS handshake, from the connection; a slower client is closed."},
	{name: "ssl.reload.check.interval.ms", typ: kmsg.ConfigTypeLong, def: str("10000"),
		doc: "sluice's: how often, at most, a handshake rereads the keystore and truststore files for a rotated certificate; negative: never."},

	{name: "sasl.enabled.mechanisms", typ: kmsg.ConfigTypeList, def: str(mechSCRAM512 + "," + mechSCRAM256),
		doc: "SASL mechanisms a SASL listener serves: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512. By default SCRAM-SHA-512 and SCRAM-SHA-256, and PLAIN on a listener with a PlainLoginModule JAAS entry (Kafka's default, GSSAPI, is not served)."},
	{name: "sasl.mechanism.inter.broker.protocol", typ: kmsg.ConfigTypeString, def: str(mechSCRAM512),
		doc: "The SASL mechanism brokers use with each other (Kafka's default is GSSAPI)."},
	{name: "sasl.jaas.config", typ: kmsg.ConfigTypePassword,
		doc: "JAAS entries of the SASL listeners: PlainLoginModule's users, the broker's own username and password."},
	{name: "connections.max.reauth.ms", typ: kmsg.ConfigTypeLong, def: str("0"),
		doc: "Lifetime of an authenticated SASL session: the client must re-authenticate on the connection before it ends or lose it. 0: sessions do not expire."},
	{name: "sasl.server.max.receive.size", typ: kmsg.ConfigTypeInt, def: str("524288"),
		doc: "Largest request a SASL listener reads before the client is authenticated."},

	{name: "authorizer.class.name", typ: kmsg.ConfigTypeString, def: str(""),
		doc: "The authorizer: kafka.security.authorizer.AclAuthorizer (or its former and KRaft names) checks ACLs; empty allows everything."},
	{name: "super.users", typ: kmsg.ConfigTypeUnknown, undefined: true},
	{name: "allow.everyone.if.no.acl.found", typ: kmsg.ConfigTypeUnknown, undefined: true},
}

// sensitive is Kafka's maybeSensitive: a password, or a key whose type is
// not known.
func (k *configKey) sensitive() bool {
	return k.typ == kmsg.ConfigTypePassword || k.typ == kmsg.ConfigTypeUnknown
}

// Kafka's mechanism configs (ListenerMechanismConfigs) sluice takes: with
// a listener prefix they may also name a mechanism,
// listener.name.<l>.<mechanism>.<key>.
var listenerMechanismKeys = []string{"sasl.jaas.config", "connections.max.reauth.ms"}

// listenerBase is the key a listener-prefixed key overrides:
// listener.name.<l>.<key> gives <key>, listener.name.<l>.<mech>.sasl.jaas.config
// gives sasl.jaas.config; "" if name has no listener prefix.
func listenerBase(name string) string {
	rest, ok := strings.CutPrefix(name, "listener.name.")
	if !ok {
		return ""
	}
	l, base, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(l, ".") || base == "" {
		return ""
	}
	for _, m := range listenerMechanismKeys {
		if strings.HasSuffix(base, m) {
			return m
		}
	}
	return base
}

// listenerKey is the catalogue key a listener-prefixed key overrides, or
// nil.
func listenerKey(name string) *configKey {
	if base := listenerBase(name); base != "" {
		return brokerKeyByName[base]
	}
	return nil
}

// readOnlyBrokerKey: sluice knows the key and cannot change it at run time.
func readOnlyBrokerKey(name string) bool {
	if k := brokerKeyByName[name]; k != nil {
		return !k.dynamic
	}
	return listenerKey(name) != nil
}

// sensitiveBrokerKey: the key's value must not be shown, in a response or
// a log line (a listener-prefixed key by its base key; an unknown key, as
// Kafka, to be safe).
func sensitiveBrokerKey(name string) bool {
	k := brokerKeyByName[name]
	if k == nil {
		k = listenerKey(name)
	}
	return k == nil || k.sensitive()
}

// listenerPrefixedDescription is the catalogue entry DescribeConfigs
// describes a set listener-prefixed key with: the base key's type, no
// documentation (Kafka's documentationOf knows no such name), read-only.
func listenerPrefixedDescription(name string, base *configKey) *configKey {
	return &configKey{name: name, typ: base.typ}
}
