package broker

// DescribeConfigs of a broker's listener, TLS, SASL, authorizer and quota
// keys, as Kafka 3.9 describes them: sources, types, synonyms, secrets
// never sent (checked on the response bytes), listener-prefixed keys, the
// authorizer's undefined keys; and AlterConfigs refusing them.

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/security/tlsconf/tlstest"
)

// The secrets the security broker's configuration holds.
const (
	secretKeyPassword     = "key-pass-f00d"
	secretListenerKeyPass = "listener-key-pass-cafe"
	secretKeystorePass    = "keystore-pass-beef"
	secretJAAS            = "jaas-broker-pass-d00d"
	secretPlainUser       = "plain-alice-pass-feed"
)

// startSecurityBroker serves PLAINTEXT, SSL and SASL_PLAINTEXT listeners
// with every security key set, some for one listener only. It returns the
// broker and the secrets its configuration holds, the inline private key
// among them.
func startSecurityBroker(t *testing.T) (*testBroker, []string) {
	t.Helper()
	ca := tlstest.NewCA(t, "configs-ca")
	leaf := ca.Server(t, "broker")
	trust := tlstest.WriteFile(t, t.TempDir(), "ca.pem", ca.PEM)
	props := map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"listener.security.protocol.map": "SSL:SSL,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
		"inter.broker.listener.name":     "PLAINTEXT",

		"ssl.keystore.type":                                "PEM",
		"listener.name.ssl.ssl.keystore.key":               string(leaf.KeyPEM),
		"listener.name.ssl.ssl.keystore.certificate.chain": string(leaf.CertPEM),
		"ssl.key.password":                                 secretKeyPassword, // the key is not encrypted: unused
		"listener.name.ssl.ssl.key.password":               secretListenerKeyPass,
		"listener.name.ssl.ssl.client.auth":                "requested",
		"ssl.truststore.location":                          trust,
		"ssl.enabled.protocols":                            "TLSv1.3",
		"ssl.protocol":                                     "TLSv1.3",
		"ssl.principal.mapping.rules":                      "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/, DEFAULT",
		"ssl.endpoint.identification.algorithm":            "",
		"ssl.handshake.timeout.ms":                         "5000",
		// A listener without TLS keeps its TLS keys unused; still secret.
		"listener.name.sasl_plaintext.ssl.keystore.password": secretKeystorePass,

		"sasl.enabled.mechanisms":                                "SCRAM-SHA-512,PLAIN",
		"sasl.mechanism.inter.broker.protocol":                   "SCRAM-SHA-512",
		"sasl.jaas.config":                                       `org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="` + secretJAAS + `";`,
		"listener.name.sasl_plaintext.plain.sasl.jaas.config":    `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="` + secretPlainUser + `";`,
		"listener.name.sasl_plaintext.connections.max.reauth.ms": "120000",
		"connections.max.reauth.ms":                              "60000",
		"sasl.server.max.receive.size":                           "65536",

		"authorizer.class.name":          "kafka.security.authorizer.AclAuthorizer",
		"super.users":                    "User:admin;User:ops",
		"allow.everyone.if.no.acl.found": "true",

		"quota.window.num":          "5",
		"quota.window.size.seconds": "2",
	}
	tb := startBroker(t, t.TempDir(), func(c *config.Config) {
		if unknown, err := c.Apply(props); err != nil || len(unknown) > 0 {
			t.Fatalf("Apply: %v, unknown %v", err, unknown)
		}
	})
	tb.listenerAddr(t, "SSL") // serving
	// The key's base64 lines and the certificate chain's (a PASSWORD key
	// in Kafka too) must not be sent either.
	secrets := []string{secretKeyPassword, secretListenerKeyPass, secretKeystorePass, secretJAAS, secretPlainUser}
	for _, pemText := range [][]byte{leaf.KeyPEM, leaf.CertPEM} {
		lines := strings.Split(string(pemText), "\n")
		secrets = append(secrets, lines[1])
	}
	return tb, secrets
}

// describeBrokerRaw sends DescribeConfigs of broker 0 at version v (with
// synonyms and documentation where the version has them) and returns the
// response frame as received and decoded.
func describeBrokerRaw(t *testing.T, tb *testBroker, v int16) ([]byte, map[string]kmsg.DescribeConfigsResponseResourceConfig) {
	t.Helper()
	rc := dialRaw(t, tb.addr)
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(v)
	req.IncludeSynonyms, req.IncludeDocumentation = v >= 1, v >= 3
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "0"
	req.Resources = append(req.Resources, rr)
	corr := rc.send(req)
	frame, err := rc.readFrame(10 * time.Second)
	if err != nil {
		t.Fatalf("v%d: reading the response: %v", v, err)
	}
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	resp.SetVersion(v)
	if err := decodeResponse(frame, corr, resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("v%d: %+v", v, resp.Resources)
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = c
	}
	return frame, out
}

// wantDescribed checks one described broker key: value ("null" for none),
// source, type, sensitivity, read-only flag and synonyms
// (name=value/source, in order).
func wantDescribed(t *testing.T, got map[string]kmsg.DescribeConfigsResponseResourceConfig, name, value string, src kmsg.ConfigSource, typ kmsg.ConfigType, sensitive bool, synonyms ...string) {
	t.Helper()
	c, ok := got[name]
	if !ok {
		t.Errorf("%s is not described", name)
		return
	}
	v := "null"
	if c.Value != nil {
		v = *c.Value
	}
	if v != value || c.Source != src || c.ConfigType != typ || c.IsSensitive != sensitive || !c.ReadOnly {
		t.Errorf("%s=%s from %v, type %v, sensitive %v, read-only %v; want %s from %v, type %v, sensitive %v, read-only",
			name, v, c.Source, c.ConfigType, c.IsSensitive, c.ReadOnly, value, src, typ, sensitive)
	}
	var syns []string
	for _, s := range c.ConfigSynonyms {
		sv := "null"
		if s.Value != nil {
			sv = *s.Value
		}
		syns = append(syns, fmt.Sprintf("%s=%s/%v", s.Name, sv, s.Source))
	}
	if strings.Join(syns, " ") != strings.Join(synonyms, " ") {
		t.Errorf("%s synonyms %q, want %q", name, syns, synonyms)
	}
}

// definedBrokerKeys is the number of catalogue keys a broker describes
// whatever its configuration (all but Kafka's undefined ones).
func definedBrokerKeys() int {
	n := 0
	for _, k := range config.BrokerKeys {
		if !k.Undefined {
			n++
		}
	}
	return n
}

// The listener-prefixed keys startSecurityBroker sets.
var securityBrokerPrefixed = []string{
	"listener.name.ssl.ssl.keystore.key",
	"listener.name.ssl.ssl.keystore.certificate.chain",
	"listener.name.ssl.ssl.key.password",
	"listener.name.ssl.ssl.client.auth",
	"listener.name.sasl_plaintext.ssl.keystore.password",
	"listener.name.sasl_plaintext.plain.sasl.jaas.config",
	"listener.name.sasl_plaintext.connections.max.reauth.ms",
}

func TestDescribeSecurityConfigs(t *testing.T) {
	tb, secrets := startSecurityBroker(t)
	var got map[string]kmsg.DescribeConfigsResponseResourceConfig
	for v := int16(0); v <= 4; v++ {
		frame, cs := describeBrokerRaw(t, tb, v)
		for _, s := range secrets {
			if bytes.Contains(frame, []byte(s)) {
				t.Errorf("v%d: the response holds the secret %q", v, s)
			}
		}
		for name, c := range cs {
			if c.IsSensitive && c.Value != nil {
				t.Errorf("v%d: sensitive %s has a value", v, name)
			}
		}
		got = cs
	}
	if want := definedBrokerKeys() + 2 + len(securityBrokerPrefixed); len(got) != want {
		t.Errorf("%d configs described, want every key (%d) with the authorizer's two and the %d listener-prefixed ones set", len(got), want, len(securityBrokerPrefixed))
	}
	for name := range tb.cfgs.Static() {
		if _, ok := got[name]; !ok {
			t.Errorf("%s, set in the configuration, is not described", name)
		}
	}

	const (
		str, list, long, integer = kmsg.ConfigTypeString, kmsg.ConfigTypeList, kmsg.ConfigTypeLong, kmsg.ConfigTypeInt
		password, unknown        = kmsg.ConfigTypePassword, kmsg.ConfigTypeUnknown
	)
	// Listeners.
	ls := "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
	wantDescribed(t, got, "listeners", ls, srcStatic, str, false,
		"listeners="+ls+"/STATIC_BROKER_CONFIG", "listeners=PLAINTEXT://localhost:9092/DEFAULT_CONFIG")
	pm := "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL"
	wantDescribed(t, got, "listener.security.protocol.map", pm, srcStatic, str, false,
		"listener.security.protocol.map="+pm+"/STATIC_BROKER_CONFIG", "listener.security.protocol.map="+config.KafkaProtocolMapDefault+"/DEFAULT_CONFIG")
	wantDescribed(t, got, "inter.broker.listener.name", "PLAINTEXT", srcStatic, str, false, "inter.broker.listener.name=PLAINTEXT/STATIC_BROKER_CONFIG")
	wantDescribed(t, got, "security.inter.broker.protocol", "PLAINTEXT", srcDefault, str, false, "security.inter.broker.protocol=PLAINTEXT/DEFAULT_CONFIG")
	wantDescribed(t, got, "advertised.listeners", "null", srcDefault, str, false)

	// TLS: secrets, global and per listener.
	wantDescribed(t, got, "ssl.key.password", "null", srcStatic, password, true, "ssl.key.password=null/STATIC_BROKER_CONFIG")
	wantDescribed(t, got, "listener.name.ssl.ssl.key.password", "null", srcStatic, password, true,
		"listener.name.ssl.ssl.key.password=null/STATIC_BROKER_CONFIG", "ssl.key.password=null/STATIC_BROKER_CONFIG")
	wantDescribed(t, got, "listener.name.ssl.ssl.keystore.key", "null", srcStatic, password, true,
		"listener.name.ssl.ssl.keystore.key=null/STATIC_BROKER_CONFIG")
	wantDescribed(t, got, "listener.name.ssl.ssl.keystore.certificate.chain", "null", srcStatic, password, true,
		"listener.name.ssl.ssl.keystore.certificate.chain=null/STATIC_BROKER_CONFIG")
	wantDescribed(t, got, "ssl.keystore.key", "null", srcDefault, password, true)
	wantDescribed(t, got, "ssl.keystore.password", "null", srcDefault, password, true)
	wantDescribed(t, got, "listener.name.sasl_plaintext.ssl.keystore.password", "null", srcStatic, password, true,
		"listener.name.sasl_plaintext.ssl.keystore.password=null/STATIC_BROKER_CONFIG")
	wantDescribed(t, got, "ssl.truststore.password", "null", srcDefault, password, true)
	// TLS: the rest.
	wantDescribed(t, got, "listener.name.ssl.ssl.client.auth", "requested", srcStatic, str, false,
		"listener.name.ssl.ssl.client.auth=requested/STATIC_BROKER_CONFIG", "ssl.client.auth=none/DEFAULT_CONFIG")
	wantDescribed(t, got, "ssl.client.auth", "none", srcDefault, str, false, "ssl.client.auth=none/DEFAULT_CONFIG")
	wantDescribed(t, got, "ssl.keystore.type", "PEM", srcStatic, str, false,
		"ssl.keystore.type=PEM/STATIC_BROKER_CONFIG", "ssl.keystore.type=PEM/DEFAULT_CONFIG")
	wantDescribed(t, got, "ssl.truststore.type", "PEM", srcDefault, str, false, "ssl.truststore.type=PEM/DEFAULT_CONFIG")
	trust := tb.cfgs.Static()["ssl.truststore.location"]
	wantDescribed(t, got, "ssl.truststore.location", trust, srcStatic, str, false, "ssl.truststore.location="+trust+"/STATIC_BROKER_CONFIG")
	wantDescribed(t, got, "ssl.keystore.location", "null", srcDefault, str, false)
	wantDescribed(t, got, "ssl.enabled.protocols", "TLSv1.3", srcStatic, list, false,
		"ssl.enabled.protocols=TLSv1.3/STATIC_BROKER_CONFIG", "ssl.enabled.protocols=TLSv1.2,TLSv1.3/DEFAULT_CONFIG")
	wantDescribed(t, got, "ssl.protocol", "TLSv1.3", srcStatic, str, false,
		"ssl.protocol=TLSv1.3/STATIC_BROKER_CONFIG", "ssl.protocol=TLSv1.3/DEFAULT_CONFIG")
	wantDescribed(t, got, "ssl.cipher.suites", "", srcDefault, list, false, "ssl.cipher.suites=/DEFAULT_CONFIG")
	rules := "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/, DEFAULT"
	wantDescribed(t, got, "ssl.principal.mapping.rules", rules, srcStatic, str, false,
		"ssl.principal.mapping.rules="+rules+"/STATIC_BROKER_CONFIG", "ssl.principal.mapping.rules=DEFAULT/DEFAULT_CONFIG")
	wantDescribed(t, got, "ssl.endpoint.identification.algorithm", "", srcStatic, str, false,
		"ssl.endpoint.identification.algorithm=/STATIC_BROKER_CONFIG", "ssl.endpoint.identification.algorithm=https/DEFAULT_CONFIG")
	wantDescribed(t, got, "ssl.handshake.timeout.ms", "5000", srcStatic, long, false,
		"ssl.handshake.timeout.ms=5000/STATIC_BROKER_CONFIG", "ssl.handshake.timeout.ms=10000/DEFAULT_CONFIG")

	// SASL.
	wantDescribed(t, got, "sasl.enabled.mechanisms", "SCRAM-SHA-512,PLAIN", srcStatic, list, false,
		"sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN/STATIC_BROKER_CONFIG", "sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256/DEFAULT_CONFIG")
	wantDescribed(t, got, "sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512", srcStatic, str, false,
		"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512/STATIC_BROKER_CONFIG", "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512/DEFAULT_CONFIG")
	wantDescribed(t, got, "sasl.jaas.config", "null", srcStatic, password, true, "sasl.jaas.config=null/STATIC_BROKER_CONFIG")
	wantDescribed(t, got, "listener.name.sasl_plaintext.plain.sasl.jaas.config", "null", srcStatic, password, true,
		"listener.name.sasl_plaintext.plain.sasl.jaas.config=null/STATIC_BROKER_CONFIG", "sasl.jaas.config=null/STATIC_BROKER_CONFIG")
	wantDescribed(t, got, "listener.name.sasl_plaintext.connections.max.reauth.ms", "120000", srcStatic, long, false,
		"listener.name.sasl_plaintext.connections.max.reauth.ms=120000/STATIC_BROKER_CONFIG",
		"connections.max.reauth.ms=60000/STATIC_BROKER_CONFIG", "connections.max.reauth.ms=0/DEFAULT_CONFIG")
	wantDescribed(t, got, "connections.max.reauth.ms", "60000", srcStatic, long, false,
		"connections.max.reauth.ms=60000/STATIC_BROKER_CONFIG", "connections.max.reauth.ms=0/DEFAULT_CONFIG")
	wantDescribed(t, got, "sasl.server.max.receive.size", "65536", srcStatic, integer, false,
		"sasl.server.max.receive.size=65536/STATIC_BROKER_CONFIG", "sasl.server.max.receive.size=524288/DEFAULT_CONFIG")

	// The authorizer: super.users and allow.everyone.if.no.acl.found are
	// not KafkaConfig's, so Kafka hides them as keys of unknown type.
	acl := "kafka.security.authorizer.AclAuthorizer"
	wantDescribed(t, got, "authorizer.class.name", acl, srcStatic, str, false,
		"authorizer.class.name="+acl+"/STATIC_BROKER_CONFIG", "authorizer.class.name=/DEFAULT_CONFIG")
	wantDescribed(t, got, "super.users", "null", srcStatic, unknown, true, "super.users=null/STATIC_BROKER_CONFIG")
	wantDescribed(t, got, "allow.everyone.if.no.acl.found", "null", srcStatic, unknown, true, "allow.everyone.if.no.acl.found=null/STATIC_BROKER_CONFIG")

	// Client quotas' windows.
	wantDescribed(t, got, "quota.window.num", "5", srcStatic, integer, false,
		"quota.window.num=5/STATIC_BROKER_CONFIG", "quota.window.num=11/DEFAULT_CONFIG")
	wantDescribed(t, got, "quota.window.size.seconds", "2", srcStatic, integer, false,
		"quota.window.size.seconds=2/STATIC_BROKER_CONFIG", "quota.window.size.seconds=1/DEFAULT_CONFIG")

	// Documentation (v3+): Kafka documents its keys, not listener-prefixed
	// or undefined ones.
	for name, c := range got {
		undocumented := config.ListenerBase(name) != "" || name == "super.users" || name == "allow.everyone.if.no.acl.found"
		if (c.Documentation == nil) != undocumented {
			t.Errorf("%s: documentation %v", name, c.Documentation)
		}
	}

	// Key filtering reaches listener-prefixed keys; kadm's view agrees.
	adm := tb.admin(t)
	rcs, err := adm.DescribeBrokerConfigs(ctxTimeout(t, 10*time.Second), 0)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("0", nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("kadm: %v %v", err, rc.Err)
	}
	if c := findConfig(rc.Configs, "listener.name.sasl_plaintext.plain.sasl.jaas.config"); c == nil || !c.Sensitive || c.Value != nil {
		t.Errorf("kadm: %+v", c)
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "0"
	rr.ConfigNames = []string{"listener.name.ssl.ssl.client.auth", "super.users"}
	req.Resources = append(req.Resources, rr)
	resp := dialRaw(t, tb.addr).roundTrip(req, 4).(*kmsg.DescribeConfigsResponse)
	if cs := resp.Resources[0].Configs; len(cs) != 2 || cs[0].Name != "listener.name.ssl.ssl.client.auth" || cs[1].Name != "super.users" {
		t.Errorf("filtered: %+v", cs)
	}
}

// A broker with no security keys set describes Kafka's (or sluice's)
// defaults, lists none of the authorizer's undefined keys and no
// listener-prefixed key.
func TestDescribeSecurityConfigDefaults(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	_, got := describeBrokerRaw(t, tb, 4)
	if len(got) != definedBrokerKeys() {
		t.Errorf("%d configs described, want %d", len(got), definedBrokerKeys())
	}
	for name := range got {
		if config.ListenerBase(name) != "" || name == "super.users" || name == "allow.everyone.if.no.acl.found" {
			t.Errorf("%s is described, not set", name)
		}
	}
	const (
		str, list, long, integer, password = kmsg.ConfigTypeString, kmsg.ConfigTypeList, kmsg.ConfigTypeLong, kmsg.ConfigTypeInt, kmsg.ConfigTypePassword
	)
	// The tests' one-address shorthand is the PLAINTEXT listener.
	ls := "PLAINTEXT://" + tb.cfg.Listen
	wantDescribed(t, got, "listeners", ls, srcStatic, str, false,
		"listeners="+ls+"/STATIC_BROKER_CONFIG", "listeners=PLAINTEXT://localhost:9092/DEFAULT_CONFIG")
	wantDescribed(t, got, "listener.security.protocol.map", config.KafkaProtocolMapDefault, srcDefault, str, false,
		"listener.security.protocol.map="+config.KafkaProtocolMapDefault+"/DEFAULT_CONFIG")
	wantDescribed(t, got, "inter.broker.listener.name", "null", srcDefault, str, false)
	wantDescribed(t, got, "security.inter.broker.protocol", "PLAINTEXT", srcDefault, str, false, "security.inter.broker.protocol=PLAINTEXT/DEFAULT_CONFIG")
	for _, k := range []string{"ssl.keystore.password", "ssl.key.password", "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.truststore.password", "ssl.truststore.certificates", "sasl.jaas.config"} {
		wantDescribed(t, got, k, "null", srcDefault, password, true)
	}
	wantDescribed(t, got, "ssl.keystore.type", "PEM", srcDefault, str, false, "ssl.keystore.type=PEM/DEFAULT_CONFIG")
	wantDescribed(t, got, "ssl.client.auth", "none", srcDefault, str, false, "ssl.client.auth=none/DEFAULT_CONFIG")
	wantDescribed(t, got, "ssl.enabled.protocols", "TLSv1.2,TLSv1.3", srcDefault, list, false, "ssl.enabled.protocols=TLSv1.2,TLSv1.3/DEFAULT_CONFIG")
	wantDescribed(t, got, "ssl.protocol", "TLSv1.3", srcDefault, str, false, "ssl.protocol=TLSv1.3/DEFAULT_CONFIG")
	wantDescribed(t, got, "ssl.principal.mapping.rules", "DEFAULT", srcDefault, str, false, "ssl.principal.mapping.rules=DEFAULT/DEFAULT_CONFIG")
	wantDescribed(t, got, "ssl.endpoint.identification.algorithm", "https", srcDefault, str, false, "ssl.endpoint.identification.algorithm=https/DEFAULT_CONFIG")
	wantDescribed(t, got, "sasl.enabled.mechanisms", "SCRAM-SHA-512,SCRAM-SHA-256", srcDefault, list, false, "sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256/DEFAULT_CONFIG")
	wantDescribed(t, got, "sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512", srcDefault, str, false, "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512/DEFAULT_CONFIG")
	wantDescribed(t, got, "connections.max.reauth.ms", "0", srcDefault, long, false, "connections.max.reauth.ms=0/DEFAULT_CONFIG")
	wantDescribed(t, got, "sasl.server.max.receive.size", "524288", srcDefault, integer, false, "sasl.server.max.receive.size=524288/DEFAULT_CONFIG")
	wantDescribed(t, got, "authorizer.class.name", "", srcDefault, str, false, "authorizer.class.name=/DEFAULT_CONFIG")
	wantDescribed(t, got, "quota.window.num", "11", srcDefault, integer, false, "quota.window.num=11/DEFAULT_CONFIG")
	wantDescribed(t, got, "quota.window.size.seconds", "1", srcDefault, integer, false, "quota.window.size.seconds=1/DEFAULT_CONFIG")
	// The cluster-wide default holds none of them.
	if cluster := describedBroker(t, tb, ""); len(cluster) != 0 {
		t.Errorf("cluster default: %d configs", len(cluster))
	}
}

// The listener and security keys are read at start only: both alter APIs
// refuse them, for the broker and the cluster default, as read-only keys,
// without the value in the message; nothing is stored.
func TestAlterSecurityConfigsRefused(t *testing.T) {
	tb, _ := startSecurityBroker(t)
	adm := tb.admin(t)
	ctx := ctxTimeout(t, 30*time.Second)
	const value = "altered-value-5ec7e7"
	keys := []string{
		"listeners", "advertised.listeners", "listener.security.protocol.map", "inter.broker.listener.name", "security.inter.broker.protocol",
		"ssl.keystore.location", "ssl.key.password", "ssl.keystore.password", "ssl.truststore.password", "ssl.client.auth", "ssl.enabled.protocols", "ssl.cipher.suites",
		"listener.name.ssl.ssl.client.auth", "listener.name.ssl.ssl.key.password", "listener.name.plaintext.ssl.keystore.location",
		"sasl.enabled.mechanisms", "sasl.mechanism.inter.broker.protocol", "sasl.jaas.config", "connections.max.reauth.ms", "sasl.server.max.receive.size",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config", "listener.name.sasl_plaintext.sasl.enabled.mechanisms",
		"authorizer.class.name", "super.users", "allow.everyone.if.no.acl.found", "quota.window.num", "quota.window.size.seconds",
	}
	for _, k := range keys {
		for _, node := range [][]int32{nil, {0}} {
			for _, legacy := range []bool{false, true} {
				alter := adm.AlterBrokerConfigs
				if legacy {
					alter = adm.AlterBrokerConfigsState
				}
				err := alterResult(alter(ctx, []kadm.AlterConfig{set(k, value)}, node...))
				if !errors.Is(err, kerr.InvalidRequest) || !strings.Contains(err.Error(), "Cannot update these configs dynamically: ["+k+"]") {
					t.Errorf("%s on broker %v (legacy %v): %v", k, node, legacy, err)
				}
				if err != nil && strings.Contains(err.Error(), value) {
					t.Errorf("%s: the refusal shows the value: %v", k, err)
				}
			}
		}
	}
	if d := tb.cfgs.Dynamic(); len(d.Node) != 0 || len(d.Cluster) != 0 {
		t.Fatalf("refused changes were stored: %+v", d)
	}
	if _, err := config.ValidateBrokerConfig("listener.name.ssl.ssl.client.auth", "required"); err == nil || !strings.Contains(err.Error(), "Cannot update these configs dynamically") {
		t.Errorf("a persisted listener-prefixed key: %v", err)
	}
}
