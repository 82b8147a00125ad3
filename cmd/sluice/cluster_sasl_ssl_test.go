package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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

	ctx, cancel := context.WithTimeout(context.Background(), 2*testWait)
	defer cancel()
	two := "2"
	if r, err := kadm.NewClient(c.client()).CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &two}, "secured"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	inSync := func(n int) func(m *kmsg.MetadataResponse) error {
		return func(m *kmsg.MetadataResponse) error {
			if err := c.wantTopic(m, "secured", 1, 3); err != nil {
				return err
			}
			for _, tp := range m.Topics {
				if *tp.Topic == "secured" && len(tp.Partitions[0].ISR) < n {
					return fmt.Errorf("ISR %v", tp.Partitions[0].ISR)
				}
			}
			return nil
		}
	}
	// Followers fetch over SASL_SSL: the ISR fills.
	mds := c.waitAgree("every replica in sync over SASL_SSL", inSync(3))
	var leader int32 = -1
	for _, md := range mds {
		for _, tp := range md.Topics {
			if *tp.Topic == "secured" {
				leader = tp.Partitions[0].Leader
			}
		}
	}

	prod := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(100))
	acked := map[string]bool{}
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			v := strconv.Itoa(i)
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "secured", Value: []byte(v)}).FirstErr(); err == nil {
				acked[v] = true
			}
		}
	}
	produce(0, 300)
	c.kill(leader)
	c.waitAgree("a new leader from the ISR", func(m *kmsg.MetadataResponse) error {
		if err := c.wantBrokers(m, c.live()...); err != nil {
			return err
		}
		for _, tp := range m.Topics {
			if *tp.Topic == "secured" && (tp.Partitions[0].Leader == leader || tp.Partitions[0].Leader < 0) {
				return fmt.Errorf("leader %d", tp.Partitions[0].Leader)
			}
		}
		return nil
	})
	produce(300, 600)
	if len(acked) < 540 {
		t.Fatalf("only %d of 600 records acknowledged across the failover", len(acked))
	}
	c.restart(leader)
	c.waitAgree("the old leader back in the ISR", inSync(3))
	cons := c.client(kgo.ConsumeTopics("secured"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for len(seen) < len(acked) {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	var lost []string
	for v := range acked {
		if !seen[v] {
			lost = append(lost, v)
		}
	}
	slices.Sort(lost)
	if len(lost) > 0 {
		t.Fatalf("%d acknowledged records lost after the leader's death: %v", len(lost), lost[:min(len(lost), 20)])
	}

	// Without TLS, or with a wrong password, nothing.
	addr := c.addrs(c.live()[0])[0]
	short, cancelShort := context.WithTimeout(ctx, 5e9)
	defer cancelShort()
	if _, err := metadataOf(short, addr); err == nil {
		t.Fatal("a plaintext client got Metadata from a SASL_SSL listener")
	}
	wrong := franzscram.Auth{User: "admin", Pass: "wrong"}.AsSha512Mechanism()
	if _, err := metadataOf(short, addr, kgo.DialTLSConfig(tlsCfg), kgo.SASL(wrong)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}
