package config

// The catalogue's listener and security keys (listeners.go, tls.go,
// sasl.go, authz.go), and how DescribeConfigs treats what
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
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// KafkaProtocolMapDefault is Kafka's default listener.security.protocol.map
// as it describes it (the order of its hash map).
const KafkaProtocolMapDefault = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"

// securityKeys are the listener, TLS, SASL, authorizer keys, static in
// sluice. Kafka's types and defaults, but for sluice's where it differs:
// listeners (localhost), the keystore and truststore types (sluice reads
// PEM only) and the SASL mechanisms (sluice serves no GSSAPI).
var securityKeys = []Key{
	{Name: "listeners", Type: kmsg.ConfigTypeString, Default: str("PLAINTEXT://localhost:9092"),
		field: listenerField, Doc: "The listeners the broker accepts on, NAME://host:port, comma separated; an empty host is every interface. Kafka's default is PLAINTEXT://:9092."},
	{Name: "advertised.listeners", Type: kmsg.ConfigTypeString,
		field: listenerField, Doc: "The addresses given to clients and other brokers for each listener, NAME://host:port; default the listeners' own (their bound port for port 0)."},
	{Name: "listener.security.protocol.map", Type: kmsg.ConfigTypeString, Default: str(KafkaProtocolMapDefault),
		field: listenerField, Doc: "Each listener's security protocol, NAME:PROTOCOL, comma separated: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL."},
	{Name: "inter.broker.listener.name", Type: kmsg.ConfigTypeString,
		field: listenerField, Doc: "The listener brokers use with each other (ZooKeeper mode); exclusive with security.inter.broker.protocol."},
	{Name: "security.inter.broker.protocol", Type: kmsg.ConfigTypeString, Default: str(ProtoPlaintext),
		field: listenerField, Doc: "The inter-broker listener named by its security protocol, when inter.broker.listener.name is not set."},

	{Name: "ssl.keystore.type", Type: kmsg.ConfigTypeString, Default: str("PEM"),
		field: tlsPropField, Doc: "Format of the keystore: sluice reads PEM only (Kafka's default, JKS, is refused)."},
	{Name: "ssl.keystore.location", Type: kmsg.ConfigTypeString,
		field: tlsPropField, Doc: "PEM file with the listener's private key and certificate chain; reread when it changes."},
	{Name: "ssl.keystore.password", Type: kmsg.ConfigTypePassword,
		field: tlsPropField, Doc: "Password of a keystore file; refused with PEM, as Kafka refuses it."},
	{Name: "ssl.keystore.key", Type: kmsg.ConfigTypePassword,
		field: tlsPropField, Doc: "The private key in PEM, inline, instead of ssl.keystore.location."},
	{Name: "ssl.keystore.certificate.chain", Type: kmsg.ConfigTypePassword,
		field: tlsPropField, Doc: "The certificate chain in PEM, inline, with ssl.keystore.key."},
	{Name: "ssl.key.password", Type: kmsg.ConfigTypePassword,
		field: tlsPropField, Doc: "Password of an encrypted (PKCS#8) private key."},
	{Name: "ssl.truststore.type", Type: kmsg.ConfigTypeString, Default: str("PEM"),
		field: tlsPropField, Doc: "Format of the truststore: sluice reads PEM only (Kafka's default, JKS, is refused)."},
	{Name: "ssl.truststore.location", Type: kmsg.ConfigTypeString,
		field: tlsPropField, Doc: "PEM file of the certificates client certificates are verified against; reread when it changes."},
	{Name: "ssl.truststore.password", Type: kmsg.ConfigTypePassword,
		field: tlsPropField, Doc: "Password of a truststore file; refused with PEM, as Kafka refuses it."},
	{Name: "ssl.truststore.certificates", Type: kmsg.ConfigTypePassword,
		field: tlsPropField, Doc: "The trusted certificates in PEM, inline, instead of ssl.truststore.location."},
	{Name: "ssl.client.auth", Type: kmsg.ConfigTypeString, Default: str("none"),
		field: tlsPropField, Doc: "Whether the listener asks for a client certificate: none, requested or required."},
	{Name: "ssl.enabled.protocols", Type: kmsg.ConfigTypeList, Default: str("TLSv1.2,TLSv1.3"),
		field: tlsPropField, Doc: "TLS versions the listener accepts."},
	{Name: "ssl.protocol", Type: kmsg.ConfigTypeString, Default: str("TLSv1.3"),
		field: tlsPropField, Doc: "The highest TLS version the listener negotiates."},
	{Name: "ssl.cipher.suites", Type: kmsg.ConfigTypeList, Default: str(""),
		field: tlsPropField, Doc: "TLS 1.2 cipher suites the listener accepts, by their IANA names; empty: Go's default suites."},
	{Name: "ssl.principal.mapping.rules", Type: kmsg.ConfigTypeString, Default: str("DEFAULT"),
		field: tlsPropField, Doc: "Rules turning a client certificate's distinguished name into the principal's name; DEFAULT keeps the whole name."},
	{Name: "ssl.endpoint.identification.algorithm", Type: kmsg.ConfigTypeString, Default: str("https"),
		field: tlsPropField, Doc: "https: the broker, as a TLS client of other brokers, checks their certificate names their host; empty: no check."},
	{Name: "ssl.handshake.timeout.ms", Type: kmsg.ConfigTypeLong, Default: str("10000"),
		field: dur(func(c *Config) *time.Duration { return &c.TLS.HandshakeTimeout }, time.Millisecond), Doc: "sluice's bound on a client's TLS handshake, from the connection; a slower client is closed."},
	{Name: "ssl.reload.check.interval.ms", Type: kmsg.ConfigTypeLong, Default: str("10000"),
		field: dur(func(c *Config) *time.Duration { return &c.TLS.ReloadInterval }, time.Millisecond), Doc: "sluice's: how often, at most, a handshake rereads the keystore and truststore files for a rotated certificate; negative: never."},

	{Name: "sasl.enabled.mechanisms", Type: kmsg.ConfigTypeList, Default: str(mechSCRAM512 + "," + mechSCRAM256),
		field: list(func(c *Config) *[]string { return &c.SASL.EnabledMechanisms }), Doc: "SASL mechanisms a SASL listener serves: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512. By default SCRAM-SHA-512 and SCRAM-SHA-256, and PLAIN on a listener with a PlainLoginModule JAAS entry (Kafka's default, GSSAPI, is not served)."},
	{Name: "sasl.mechanism.inter.broker.protocol", Type: kmsg.ConfigTypeString, Default: str(mechSCRAM512),
		field: text(func(c *Config) *string { return &c.SASL.InterBrokerMechanism }), Doc: "The SASL mechanism brokers use with each other (Kafka's default is GSSAPI)."},
	{Name: "sasl.jaas.config", Type: kmsg.ConfigTypePassword,
		field: text(func(c *Config) *string { return &c.SASL.JAASConfig }), Doc: "JAAS entries of the SASL listeners: PlainLoginModule's users, the broker's own username and password."},
	{Name: "connections.max.reauth.ms", Type: kmsg.ConfigTypeLong, Default: str("0"),
		check: atLeast(0), field: dur(func(c *Config) *time.Duration { return &c.SASL.ConnectionsMaxReauth }, time.Millisecond), Doc: "Lifetime of an authenticated SASL session: the client must re-authenticate on the connection before it ends or lose it. 0: sessions do not expire."},
	{Name: "sasl.server.max.receive.size", Type: kmsg.ConfigTypeInt, Default: str("524288"),
		check: atLeast(1), field: num(func(c *Config) *int32 { return &c.SASL.ServerMaxReceiveSize }), Doc: "Largest request a SASL listener reads before the client is authenticated."},

	{Name: "authorizer.class.name", Type: kmsg.ConfigTypeString, Default: str(""),
		field: text(func(c *Config) *string { return &c.Authz.ClassName }), Doc: "The authorizer: kafka.security.authorizer.AclAuthorizer (or its former and KRaft names) checks ACLs; empty allows everything."},
	{Name: "super.users", Type: kmsg.ConfigTypeUnknown, Undefined: true, field: superUsersField},
	{Name: "allow.everyone.if.no.acl.found", Type: kmsg.ConfigTypeUnknown, Undefined: true, field: allowEveryoneField},
}

// Sensitive is Kafka's maybeSensitive: a password, or a key whose type is
// not known.
func (k *Key) Sensitive() bool {
	return k.Type == kmsg.ConfigTypePassword || k.Type == kmsg.ConfigTypeUnknown
}

// Kafka's mechanism configs (ListenerMechanismConfigs) sluice takes: with
// a listener prefix they may also name a mechanism,
// listener.name.<l>.<mechanism>.<key>.
var listenerMechanismKeys = []string{"sasl.jaas.config", "connections.max.reauth.ms"}

// ListenerBase is the key a listener-prefixed key overrides:
// listener.name.<l>.<key> gives <key>, listener.name.<l>.<mech>.sasl.jaas.config
// gives sasl.jaas.config; "" if name has no listener prefix.
func ListenerBase(name string) string {
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

// ListenerKey is the catalogue key a listener-prefixed key overrides, or
// nil.
func ListenerKey(name string) *Key {
	if base := ListenerBase(name); base != "" {
		return BrokerKeyByName[base]
	}
	return nil
}

// ReadOnlyBrokerKey: sluice knows the key and cannot change it at run time.
func ReadOnlyBrokerKey(name string) bool {
	if k := BrokerKeyByName[name]; k != nil {
		return !k.Dynamic
	}
	return ListenerKey(name) != nil
}

// SensitiveBrokerKey: the key's value must not be shown, in a response or
// a log line (a listener-prefixed key by its base key; an unknown key, as
// Kafka, to be safe).
func SensitiveBrokerKey(name string) bool {
	k := BrokerKeyByName[name]
	if k == nil {
		k = ListenerKey(name)
	}
	return k == nil || k.Sensitive()
}

// ListenerPrefixedDescription is the catalogue entry DescribeConfigs
// describes a set listener-prefixed key with: the base key's type, no
// documentation (Kafka's documentationOf knows no such name), read-only.
func ListenerPrefixedDescription(name string, base *Key) *Key {
	return &Key{Name: name, Type: base.Type}
}
