package main

// --command-config FILE: Kafka client properties (what kafka-topics.sh and
// the other Kafka tools read with --command-config) turned into franz-go
// options. Keys read:
//
//	security.protocol   PLAINTEXT (default) | SSL | SASL_PLAINTEXT | SASL_SSL
//	sasl.mechanism      PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512 (Kafka's default,
//	                    GSSAPI, is not supported)
//	sasl.jaas.config    org.apache.kafka.common.security.plain.PlainLoginModule
//	                    (or scram.ScramLoginModule) required username="..." password="...";
//	sasl.username, sasl.password   librdkafka's names; they win over the JAAS ones
//	ssl.truststore.location / ssl.truststore.certificates (PEM),
//	ssl.keystore.location / ssl.keystore.certificate.chain + ssl.keystore.key
//	(PEM), ssl.key.password, ssl.enabled.protocols, ssl.protocol,
//	ssl.cipher.suites, ssl.endpoint.identification.algorithm (https, the
//	default, verifies the broker's host name; empty does not)
//
// Other keys (request.timeout.ms, client.id, ...) are ignored, as settings
// of the Java client that these tools do not have.

import (
	"crypto/tls"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/security/tlsconf"
)

// commandConfig is a parsed --command-config file.
type commandConfig struct {
	protocol string      // security.protocol, upper case
	tls      *tls.Config // nil unless SSL or SASL_SSL
	sasl     sasl.Mechanism
}

// loadCommandConfig reads the properties file at path.
func loadCommandConfig(path string) (*commandConfig, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--command-config: %w", err)
	}
	defer f.Close()
	props, err := config.ParseProperties(f)
	if err != nil {
		return nil, fmt.Errorf("--command-config %s: %w", path, err)
	}
	cc, err := parseCommandConfig(props)
	if err != nil {
		return nil, fmt.Errorf("--command-config %s: %w", path, err)
	}
	return cc, nil
}

// parseCommandConfig turns client properties into a commandConfig.
func parseCommandConfig(props map[string]string) (*commandConfig, error) {
	cc := &commandConfig{protocol: strings.ToUpper(strings.TrimSpace(props["security.protocol"]))}
	if cc.protocol == "" {
		cc.protocol = "PLAINTEXT"
	}
	var useTLS, useSASL bool
	switch cc.protocol {
	case "PLAINTEXT":
	case "SSL":
		useTLS = true
	case "SASL_PLAINTEXT":
		useSASL = true
	case "SASL_SSL":
		useTLS, useSASL = true, true
	default:
		return nil, fmt.Errorf("security.protocol=%q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", props["security.protocol"])
	}
	if useTLS {
		cfg, err := tlsconf.ClientConfig(tlsconf.ParseSettings(props, ""))
		if err != nil {
			return nil, err
		}
		cc.tls = cfg
	}
	if useSASL {
		m, err := saslMechanism(props)
		if err != nil {
			return nil, err
		}
		cc.sasl = m
	}
	return cc, nil
}

// saslMechanism builds the client side of sasl.mechanism with the
// credentials of sasl.jaas.config or sasl.username/sasl.password.
func saslMechanism(props map[string]string) (sasl.Mechanism, error) {
	mech := strings.ToUpper(strings.TrimSpace(props["sasl.mechanism"]))
	if mech == "" {
		return nil, fmt.Errorf("sasl.mechanism is not set (Kafka's default, GSSAPI, is not supported): set PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	}
	var user, pass string
	if jaas := strings.TrimSpace(props["sasl.jaas.config"]); jaas != "" {
		opts, err := parseJAAS(jaas)
		if err != nil {
			return nil, err
		}
		user, pass = opts["username"], opts["password"]
	}
	if v, ok := props["sasl.username"]; ok {
		user = v
	}
	if v, ok := props["sasl.password"]; ok {
		pass = v
	}
	if user == "" {
		return nil, fmt.Errorf("sasl.mechanism=%s needs a username: sasl.jaas.config with username=\"...\" password=\"...\", or sasl.username and sasl.password", mech)
	}
	switch mech {
	case "PLAIN":
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("sasl.mechanism=%s: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", mech)
}

// parseJAAS reads one JAAS login module entry, Kafka's sasl.jaas.config:
//
//	<class> <required|requisite|sufficient|optional> key="value" key2=value2 ;
//
// and returns its options. Quoted values may hold spaces and \" escapes.
func parseJAAS(s string) (map[string]string, error) {
	bad := func(why string) error { return fmt.Errorf("sasl.jaas.config: %s", why) }
	s = strings.TrimSpace(s)
	if !strings.HasSuffix(s, ";") {
		return nil, bad("must end with ';'")
	}
	s = strings.TrimSpace(strings.TrimSuffix(s, ";"))
	fields := strings.Fields(s)
	if len(fields) < 2 {
		return nil, bad("want a login module class and a control flag")
	}
	switch strings.ToLower(fields[1]) {
	case "required", "requisite", "sufficient", "optional":
	default:
		return nil, bad(fmt.Sprintf("control flag %q: want required, requisite, sufficient or optional", fields[1]))
	}
	// Skip the class and the flag, then read key=value pairs.
	rest := strings.TrimSpace(s[len(fields[0]):])
	rest = strings.TrimSpace(rest[len(fields[1]):])
	opts := map[string]string{}
	for rest != "" {
		eq := strings.IndexByte(rest, '=')
		if eq <= 0 {
			return nil, bad(fmt.Sprintf("option %q: want key=value", rest))
		}
		key := strings.TrimSpace(rest[:eq])
		rest = strings.TrimLeft(rest[eq+1:], " \t")
		var val string
		if strings.HasPrefix(rest, `"`) {
			var b strings.Builder
			i := 1
			for ; i < len(rest) && rest[i] != '"'; i++ {
				if rest[i] == '\\' && i+1 < len(rest) {
					i++
				}
				b.WriteByte(rest[i])
			}
			if i == len(rest) {
				return nil, bad(fmt.Sprintf("option %s: unterminated quote", key))
			}
			val, rest = b.String(), rest[i+1:]
		} else {
			end := strings.IndexAny(rest, " \t\n")
			if end < 0 {
				end = len(rest)
			}
			val, rest = rest[:end], rest[end:]
		}
		opts[key] = val
		rest = strings.TrimSpace(rest)
	}
	return opts, nil
}

// opts are the franz-go options of cc.
func (cc *commandConfig) opts() []kgo.Opt {
	var opts []kgo.Opt
	if cc.tls != nil {
		opts = append(opts, kgo.DialTLSConfig(cc.tls.Clone()))
	}
	if cc.sasl != nil {
		opts = append(opts, kgo.SASL(cc.sasl))
	}
	return opts
}
