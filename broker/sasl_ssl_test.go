package broker

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/security/tlsconf"
	"github.com/sluice-io/sluice/security/tlsconf/tlstest"
)

// startSASLSSLBroker serves one SASL_SSL listener (no client certificate
// asked) with the SCRAM user alice (password alice-secret); it returns the
// broker and the CA file clients trust.
func startSASLSSLBroker(t *testing.T) (*testBroker, string) {
	t.Helper()
	ca := tlstest.NewCA(t, "sasl-ssl-ca")
	dir := t.TempDir()
	keystore := tlstest.WriteFile(t, dir, "broker.pem", ca.Server(t, "broker").Keystore)
	trust := tlstest.WriteFile(t, dir, "ca.pem", ca.PEM)
	tb := startBroker(t, t.TempDir(), func(c *config.Config) {
		c.Listeners = []config.ListenerConfig{{Name: "SASL_SSL", Addr: "127.0.0.1:0"}}
		if _, err := c.Apply(map[string]string{
			"ssl.keystore.type":       "PEM",
			"ssl.keystore.location":   keystore,
			"sasl.enabled.mechanisms": "SCRAM-SHA-512",
		}); err != nil {
			t.Fatal(err)
		}
	})
	setSCRAM(t, tb, "alice", "alice-secret")
	return tb, trust
}

// franz-go over SASL_SSL with SCRAM-SHA-512 produces and consumes; the
// same client without TLS gets nothing.
func TestSASLSSLFranzGo(t *testing.T) {
	tb, trust := startSASLSSLBroker(t)
	addr := tb.listenerAddr(t, "SASL_SSL")
	cfg, err := tlsconf.ClientConfig(tlsconf.Settings{TruststoreLocation: trust})
	if err != nil {
		t.Fatal(err)
	}
	if err := produceConsume(t, tb, "sasl-ssl", kgo.DialTLSConfig(cfg), kgo.SASL(scramMech("SCRAM-SHA-512", "alice", "alice-secret"))); err != nil {
		t.Fatalf("SCRAM-SHA-512 over TLS: %v", err)
	}
	ctx := ctxTimeout(t, 5*time.Second)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(scramMech("SCRAM-SHA-512", "alice", "alice-secret")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err == nil {
		t.Fatal("SCRAM without TLS reached a SASL_SSL listener")
	}
}

// kcat (librdkafka) with -X security.protocol=SASL_SSL produces and
// consumes; a wrong password fails authentication.
func TestSASLSSLKcat(t *testing.T) {
	requireKcat(t)
	tb, trust := startSASLSSLBroker(t)
	addr := tb.listenerAddr(t, "SASL_SSL")
	args := func(pw string, rest ...string) []string {
		return append([]string{"-b", addr, "-X", "security.protocol=SASL_SSL", "-X", "ssl.ca.location=" + trust,
			"-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username=alice", "-X", "sasl.password=" + pw}, rest...)
	}
	kcat(t, "one\ntwo\n", args("alice-secret", "-P", "-t", "kcat-sasl-ssl", "-p", "0")...)
	if out := kcat(t, "", args("alice-secret", "-C", "-t", "kcat-sasl-ssl", "-p", "0", "-o", "beginning", "-c", "2", "-e")...); out != "one\ntwo\n" {
		t.Fatalf("consumed %q", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "kcat", args("wrong", "-L", "-m", "5")...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Authentication failed") {
		t.Fatalf("wrong password: %v\n%s", err, out)
	}
}
