package config

import (
	"slices"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// samples are values of the text keys a field takes, written as Kafka
// describes them (so a round trip gives them back unchanged). A text key
// given a field needs one here.
var samples = map[string]string{
	"log.dirs":                               "/var/lib/sluice",
	"log.dir":                                "/var/lib/sluice",
	"listeners":                              "PLAINTEXT://:9092,INTERNAL://10.0.0.1:9094",
	"advertised.listeners":                   "PLAINTEXT://broker1:9092",
	"listener.security.protocol.map":         "INTERNAL:SASL_SSL,PLAINTEXT:PLAINTEXT",
	"inter.broker.listener.name":             "INTERNAL",
	"security.inter.broker.protocol":         "SSL",
	"log.cleanup.policy":                     "compact",
	"compression.type":                       "lz4",
	"max.connections.per.ip.overrides":       "10.0.0.1:5,127.0.0.1:7",
	"authorizer.class.name":                  "kafka.security.authorizer.AclAuthorizer",
	"super.users":                            "User:admin;User:bob",
	"allow.everyone.if.no.acl.found":         "true",
	"sasl.enabled.mechanisms":                "PLAIN,SCRAM-SHA-256",
	"sasl.mechanism.inter.broker.protocol":   "SCRAM-SHA-256",
	"sasl.jaas.config":                       `org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="secret";`,
	"zookeeper.connect":                      "zk1:2181,zk2:2181/sluice",
	"broker.rack":                            "rack-a",
	"metrics.listen":                         "127.0.0.1:9404",
	"log.level":                              "debug",
	"log.format":                             "json",
	"ssl.keystore.type":                      "PEM",
	"ssl.keystore.location":                  "/etc/sluice/server.pem",
	"ssl.keystore.password":                  "pw",
	"ssl.keystore.key":                       "-----BEGIN PRIVATE KEY-----",
	"ssl.keystore.certificate.chain":         "-----BEGIN CERTIFICATE-----",
	"ssl.key.password":                       "pw",
	"ssl.truststore.type":                    "PEM",
	"ssl.truststore.location":                "/etc/sluice/ca.pem",
	"ssl.truststore.password":                "pw",
	"ssl.truststore.certificates":            "-----BEGIN CERTIFICATE-----",
	"ssl.client.auth":                        "required",
	"ssl.enabled.protocols":                  "TLSv1.3",
	"ssl.protocol":                           "TLSv1.2",
	"ssl.cipher.suites":                      "TLS_AES_128_GCM_SHA256",
	"ssl.principal.mapping.rules":            "RULE:^CN=(.*?),.*$/$1/,DEFAULT",
	"ssl.endpoint.identification.algorithm":  "",
	"log.message.format.version":             "2.8",
	"log.message.timestamp.type":             "LogAppendTime",
	"sasl.kerberos.service.name":             "kafka",
	"sasl.kerberos.kinit.cmd":                "/usr/bin/kinit",
	"sasl.kerberos.principal.to.local.rules": "DEFAULT",
}

// sample is a value of k other than its default that Apply accepts, and
// the Config it gives.
func sample(t *testing.T, k *Key) (string, Config, bool) {
	var tries []string
	switch k.Type {
	case kmsg.ConfigTypeInt, kmsg.ConfigTypeLong, kmsg.ConfigTypeShort:
		tries = []string{"3", "7", "1", "100", "1000", "60000", "2", "0"}
	case kmsg.ConfigTypeDouble:
		tries = []string{"0.7", "0.3", "0.9", "1.5", "0.1"}
	case kmsg.ConfigTypeBoolean:
		tries = []string{"true", "false"}
	default:
		if s, ok := samples[k.Name]; ok {
			tries = []string{s}
		}
	}
	if k.Default != nil {
		// Keys sluice takes only at their default (the record timestamp
		// bounds) are tried with it last.
		tries = append(tries, *k.Default)
	}
	for _, v := range tries {
		if k.Default != nil && *k.Default == v && v != tries[len(tries)-1] {
			continue
		}
		var c Config
		if unknown, err := c.Apply(map[string]string{k.Name: v}); err == nil && len(unknown) == 0 {
			return v, c, true
		}
	}
	t.Errorf("%s (%v): no sample value Apply accepts (tried %q); a text key needs one in samples", k.Name, k.Type, tries)
	return "", Config{}, false
}

// Every key of the table sets what it describes: a key set in
// server.properties is reported back by StaticBrokerConfigs (what
// DescribeConfigs shows as STATIC_BROKER_CONFIG) with the value given, or,
// for an alias (log.retention.hours), under the key it is a synonym of;
// and a key no field takes lands in StaticKeys.
func TestTableRoundTrip(t *testing.T) {
	for i := range BrokerKeys {
		k := &BrokerKeys[i]
		if k.Undefined && k.field == nil {
			continue
		}
		v, c, ok := sample(t, k)
		if !ok {
			continue
		}
		cv, _ := k.Parse(v)
		static := StaticBrokerConfigs(c)
		got, reported := static[k.Name]
		switch {
		case reported && got != cv.s:
			t.Errorf("%s=%s is reported as %q", k.Name, v, got)
		case !reported && k.field == nil:
			t.Errorf("%s=%s (no field) is not kept: StaticKeys %v", k.Name, v, c.StaticKeys)
		case !reported:
			syn := BrokerSynonyms(k.Name)
			if len(syn) < 2 || syn[0] == k.Name {
				t.Errorf("%s=%s is not reported, and is no other key's alias (static %v)", k.Name, v, static)
				continue
			}
			if _, ok := static[syn[0]]; !ok {
				t.Errorf("alias %s=%s: %s is not reported (static %v)", k.Name, v, syn[0], static)
			}
		}
		// Nothing else is reported: a field sets only its own key's value
		// (broker.id and node.id, log.dirs and log.dir share one).
		for other := range static {
			if other != k.Name && !slices.Contains(BrokerSynonyms(k.Name), other) && !sameField[[2]string{k.Name, other}] {
				t.Errorf("%s=%s also reports %s=%s", k.Name, v, other, static[other])
			}
		}
	}
}

// sameField are the pairs of keys of one field, each reported.
var sameField = map[[2]string]bool{
	{"broker.id", "node.id"}: true, {"node.id", "broker.id"}: true,
	{"log.dirs", "log.dir"}: true, {"log.dir", "log.dirs"}: true,
}

// An alias sets its field in its own unit: log.retention.hours=2 is
// log.retention.ms=7200000.
func TestAliasUnits(t *testing.T) {
	for k, want := range map[string]string{
		"log.retention.hours":   strconv.Itoa(2 * 3600_000),
		"log.retention.minutes": strconv.Itoa(2 * 60_000),
		"log.roll.hours":        strconv.Itoa(2 * 3600_000),
	} {
		var c Config
		if _, err := c.Apply(map[string]string{k: "2"}); err != nil {
			t.Fatal(err)
		}
		ms := BrokerSynonyms(k)[0]
		if got := StaticBrokerConfigs(c)[ms]; got != want {
			t.Errorf("%s=2: %s is %q, want %s", k, ms, got, want)
		}
	}
}
