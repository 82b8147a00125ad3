package main

import (
	"strings"
	"testing"
)

func TestParseJAAS(t *testing.T) {
	opts, err := parseJAAS(`org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="p a\"ss" extra=x;`)
	if err != nil {
		t.Fatal(err)
	}
	if opts["username"] != "alice" || opts["password"] != `p a"ss` || opts["extra"] != "x" {
		t.Fatalf("options %q", opts)
	}
	for _, bad := range []string{
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="alice"`, // no ;
		`org.apache.kafka.common.security.plain.PlainLoginModule username="alice";`,         // no flag
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="alice;`,
	} {
		if _, err := parseJAAS(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseCommandConfig(t *testing.T) {
	cc, err := parseCommandConfig(map[string]string{
		"security.protocol": "sasl_plaintext",
		"sasl.mechanism":    "SCRAM-SHA-512",
		"sasl.jaas.config":  `org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="secret";`,
	})
	if err != nil {
		t.Fatal(err)
	}
	if cc.tls != nil || cc.sasl == nil || cc.sasl.Name() != "SCRAM-SHA-512" {
		t.Fatalf("%+v", cc)
	}
	if cc, err := parseCommandConfig(map[string]string{"ssl.truststore.location": "/nonexistent"}); err != nil || cc.tls != nil || cc.sasl != nil {
		t.Fatalf("PLAINTEXT read ssl.* keys: %+v, %v", cc, err)
	}
	for _, c := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"security.protocol": "TLS"}, "security.protocol"},
		{map[string]string{"security.protocol": "SASL_SSL"}, "sasl.mechanism"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "needs a username"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI", "sasl.username": "a"}, "want PLAIN"},
		{map[string]string{"security.protocol": "SSL", "ssl.truststore.location": "/nonexistent/ca.pem"}, "ssl.truststore.location"},
		{map[string]string{"security.protocol": "SSL", "ssl.keystore.type": "JKS"}, "only PEM"},
	} {
		if _, err := parseCommandConfig(c.props); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error containing %q", c.props, err, c.want)
		}
	}
}
