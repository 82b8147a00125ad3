package config

// A Kafka client's properties, as sluice's tools read them from
// --command-config (what kafka-topics.sh and the other Kafka tools read):
//
//	security.protocol   PLAINTEXT (default) | SSL | SASL_PLAINTEXT | SASL_SSL
//	sasl.mechanism      PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512
//	sasl.jaas.config    a login module entry with username and password
//	sasl.username, sasl.password   librdkafka's names; they win over the JAAS ones
//	ssl.*               TLSSettings (tlssettings.go), for SSL and SASL_SSL
//
// Other keys (request.timeout.ms, client.id, ...) are ignored, as settings
// of the Java client that these tools do not have.

import (
	"fmt"
	"strings"

	"github.com/sluice-io/sluice/security/tlsconf"
)

// ClientProperties are the client properties a tool acts on.
type ClientProperties struct {
	Protocol string            // security.protocol, upper case
	TLS      *tlsconf.Settings // nil unless SSL or SASL_SSL
	SASL     bool              // SASL_PLAINTEXT or SASL_SSL
	// Mechanism is sasl.mechanism, upper case; JAAS sasl.jaas.config;
	// User and Pass sasl.username and sasl.password when given.
	Mechanism  string
	JAAS       string
	User, Pass *string
}

// ParseClientProperties reads a client's properties; an unknown
// security.protocol is an error.
func ParseClientProperties(props map[string]string) (ClientProperties, error) {
	cp := ClientProperties{Protocol: strings.ToUpper(strings.TrimSpace(props["security.protocol"]))}
	if cp.Protocol == "" {
		cp.Protocol = "PLAINTEXT"
	}
	var useTLS bool
	switch cp.Protocol {
	case "PLAINTEXT":
	case "SSL":
		useTLS = true
	case "SASL_PLAINTEXT":
		cp.SASL = true
	case "SASL_SSL":
		useTLS, cp.SASL = true, true
	default:
		return cp, fmt.Errorf("security.protocol=%q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", props["security.protocol"])
	}
	if useTLS {
		s := TLSSettings(props, "")
		cp.TLS = &s
	}
	cp.Mechanism = strings.ToUpper(strings.TrimSpace(props["sasl.mechanism"]))
	cp.JAAS = strings.TrimSpace(props["sasl.jaas.config"])
	if v, ok := props["sasl.username"]; ok {
		cp.User = &v
	}
	if v, ok := props["sasl.password"]; ok {
		cp.Pass = &v
	}
	return cp, nil
}
