package config

import (
	"strings"
	"testing"
)

// TestParseClientProperties: the protocol decides TLS and SASL (PLAINTEXT
// by default, case-insensitive); the SASL keys are read as given; an
// unknown protocol is refused.
func TestParseClientProperties(t *testing.T) {
	cp, err := ParseClientProperties(map[string]string{"security.protocol": " sasl_ssl ", "sasl.mechanism": "scram-sha-512",
		"sasl.username": "alice", "ssl.truststore.location": "/t.pem", "sasl.jaas.config": " x required; "})
	if err != nil || cp.Protocol != "SASL_SSL" || !cp.SASL || cp.TLS == nil || cp.TLS.TruststoreLocation != "/t.pem" ||
		cp.Mechanism != "SCRAM-SHA-512" || cp.User == nil || *cp.User != "alice" || cp.Pass != nil || cp.JAAS != "x required;" {
		t.Fatalf("SASL_SSL: %+v, %v", cp, err)
	}
	if cp, err := ParseClientProperties(map[string]string{"ssl.truststore.location": "/t.pem"}); err != nil || cp.Protocol != "PLAINTEXT" || cp.TLS != nil || cp.SASL {
		t.Fatalf("default: %+v, %v", cp, err)
	}
	if _, err := ParseClientProperties(map[string]string{"security.protocol": "TLS"}); err == nil || !strings.Contains(err.Error(), "want PLAINTEXT") {
		t.Fatalf("unknown protocol: %v", err)
	}
}
