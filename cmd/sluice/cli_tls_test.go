package main

import (
	"crypto/x509/pkix"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/security/tlsconf/tlstest"
)

// startSSLBroker serves one SSL listener that requires client
// certificates of ca; it returns the listener's address.
func startSSLBroker(t *testing.T, ca *tlstest.CA) string {
	t.Helper()
	dir := t.TempDir()
	return startInProcessBroker(t, config.Config{
		Listeners: []config.ListenerConfig{{Name: "SSL", Addr: "127.0.0.1:0"}},
		TLS: config.TLSConfig{Props: map[string]string{
			"ssl.keystore.location":   tlstest.WriteFile(t, dir, "broker.pem", ca.Server(t, "broker").Keystore),
			"ssl.truststore.location": tlstest.WriteFile(t, dir, "ca.pem", ca.PEM),
			"ssl.client.auth":         "required",
		}},
	})
}

// TestCommandConfigSSL: the console tools over SSL with a client
// certificate, configured as Kafka's tools are, by --command-config; and
// the failures a user meets told in one line.
func TestCommandConfigSSL(t *testing.T) {
	ca := tlstest.NewCA(t, "cli-ca")
	addr := startSSLBroker(t, ca)
	dir := t.TempDir()
	ks := tlstest.WriteFile(t, dir, "client.pem", ca.Issue(t, pkix.Name{CommonName: "cli"}).Keystore)
	trust := tlstest.WriteFile(t, dir, "ca.pem", ca.PEM)
	props := tlstest.WriteFile(t, dir, "client.properties", []byte(
		"# Kafka client properties\n"+
			"security.protocol=SSL\n"+
			"ssl.truststore.type=PEM\n"+
			"ssl.truststore.location="+trust+"\n"+
			"ssl.keystore.type=PEM\n"+
			"ssl.keystore.location="+ks+"\n"))
	c := &cli{t: t, bin: buildSluice(t), brokers: addr}
	c.ok("", "topic", "create", "secure", "--partitions", "2", "--command-config", props)
	c.ok("one\ntwo\nthree\n", "produce", "secure", "--command-config", props)
	out := c.ok("", "consume", "secure", "--from", "beginning", "-n", "3", "--format", `%v\n`, "--command-config", props)
	if got := strings.Fields(out); len(got) != 3 {
		t.Fatalf("consumed %q", out)
	}
	if out := c.ok("", "topic", "list", "--command-config", props); !strings.Contains(out, "secure") {
		t.Fatalf("topic list: %q", out)
	}

	// Without the config: plaintext to a TLS port.
	c.fails(1, "", "", "topic", "list")
	// A truststore of another CA: the probe's handshake fails at once.
	other := tlstest.WriteFile(t, dir, "other.properties", []byte(
		"security.protocol=SSL\nssl.truststore.location="+tlstest.WriteFile(t, dir, "other-ca.pem", tlstest.NewCA(t, "other").PEM)+"\n"))
	c.fails(1, "TLS handshake failed", "", "topic", "list", "--command-config", other)
	// A missing file.
	c.fails(1, "--command-config", "", "topic", "list", "--command-config", dir+"/nope.properties")
}
