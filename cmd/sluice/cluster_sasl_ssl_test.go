package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	franzscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluice-io/sluice/security/tlsconf/tlstest"
)

// A cluster of 3 broker processes with SASL_SSL as its only listener,
// between brokers too (SCRAM-SHA-512 as the brokers' own user, written to
// ZooKeeper with `sluice user scram set --zookeeper` before any broker
// starts), and the ACL authorizer on: it replicates, and when the leader
// of an RF 3 partition is SIGKILLed a follower from the ISR takes over
// with no acknowledged record lost, as over PLAINTEXT. A client without
// TLS, or with a wrong password, gets nothing.
func TestClusterSASLSSLFailover(t *testing.T) {
	ca := tlstest.NewCA(t, "cluster-ca")
	dir := t.TempDir()
	keystore := tlstest.WriteFile(t, dir, "broker.pem", ca.Server(t, "broker").Keystore)
	truststore := tlstest.WriteFile(t, dir, "ca.pem", ca.PEM)
	props := strings.Join([]string{
		"listeners=SASL_SSL://127.0.0.1:0",
		"inter.broker.listener.name=SASL_SSL",
		"ssl.keystore.type=PEM",
		"ssl.keystore.location=" + keystore,
		"ssl.truststore.type=PEM",
		"ssl.truststore.location=" + truststore,
		"sasl.enabled.mechanisms=SCRAM-SHA-512",
		"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
		`listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-secret";`,
		"authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
		"super.users=User:broker;User:admin",
		"",
	}, "\n")
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	tlsCfg := &tls.Config{RootCAs: pool, ServerName: "localhost"}
	admin := franzscram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism()
	c := newCluster(t, clusterZK(t), 3, props, kgo.DialTLSConfig(tlsCfg), kgo.SASL(admin))

	// The users exist before any broker does.
	cli := &cli{t: t, bin: c.bin}
	for _, u := range [][2]string{{"broker", "broker-secret"}, {"admin", "admin-secret"}} {
		if r := cli.runEnv(nil, "", "user", "scram", "set", "--user", u[0], "--password", u[1], "--mechanism", "SCRAM-SHA-512", "--zookeeper", c.connect); r.code != 0 {
			t.Fatalf("user scram set %s: %d %s", u[0], r.code, r.stderr)
		}
	}
	c.startBrokers(3)

	leaderKilledLosesNothing(t, c, "secured", 600)

	// Without TLS, or with a wrong password, nothing.
	addr := c.addrs(c.live()[0])[0]
	short, cancelShort := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelShort()
	if _, err := metadataOf(short, addr); err == nil {
		t.Fatal("a plaintext client got Metadata from a SASL_SSL listener")
	}
	wrong := franzscram.Auth{User: "admin", Pass: "wrong"}.AsSha512Mechanism()
	if _, err := metadataOf(short, addr, kgo.DialTLSConfig(tlsCfg), kgo.SASL(wrong)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}
