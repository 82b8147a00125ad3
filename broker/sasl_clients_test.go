package broker

// SASL over TLS (and plain TCP) with clients other than franz-go, which take
// other paths through the exchange: sarama's SaslHandshake v0 (the tokens as
// raw frames) and v1 (SaslAuthenticate), its SCRAM over a client the test
// builds on xdg-go/scram, and its KIP-368 re-authentication; kafka-go's
// Dialer and Transport with its own PLAIN and SCRAM; librdkafka through
// Debian's python3-confluent-kafka (testdata/sasl_librdkafka.py), with
// SCRAM-SHA-256 and short sessions.

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"
	kgosasl "github.com/segmentio/kafka-go/sasl"
	kgoplain "github.com/segmentio/kafka-go/sasl/plain"
	kgoscram "github.com/segmentio/kafka-go/sasl/scram"
	"github.com/xdg-go/scram"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/security/tlsconf"
	"github.com/sluice-io/sluice/security/tlsconf/tlstest"
)

// saslClientsBroker is a broker with a SASL_SSL and a SASL_PLAINTEXT
// listener, each serving PLAIN (users admin and carol, plainJAAS) and both
// SCRAMs (alice, alice-secret).
type saslClientsBroker struct {
	*testBroker
	ssl, plaintext string      // the listeners' addresses
	ca             string      // the CA file clients trust
	tls            *tls.Config // a client config trusting ca; clone before use
}

// startSASLClientsBroker starts it, with sessions of reauth (0: no expiry).
func startSASLClientsBroker(t *testing.T, reauth time.Duration) *saslClientsBroker {
	t.Helper()
	ca := tlstest.NewCA(t, "sasl-clients-ca")
	dir := t.TempDir()
	keystore := tlstest.WriteFile(t, dir, "broker.pem", ca.Server(t, "broker").Keystore)
	trust := tlstest.WriteFile(t, dir, "ca.pem", ca.PEM)
	tb := startBroker(t, t.TempDir(), func(c *config.Config) {
		groupTimeouts(c)
		c.Listeners = []config.ListenerConfig{{Name: "SASL_SSL", Addr: "127.0.0.1:0"}, {Name: "SASL_PLAINTEXT", Addr: "127.0.0.1:0"}}
		if _, err := c.Apply(map[string]string{
			"ssl.keystore.type":                                   "PEM",
			"ssl.keystore.location":                               keystore,
			"sasl.enabled.mechanisms":                             "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN",
			"listener.name.sasl_ssl.plain.sasl.jaas.config":       plainJAAS,
			"listener.name.sasl_plaintext.plain.sasl.jaas.config": plainJAAS,
			"connections.max.reauth.ms":                           fmt.Sprint(reauth.Milliseconds()),
		}); err != nil {
			t.Fatal(err)
		}
	})
	setSCRAM(t, tb, "alice", "alice-secret")
	cfg, err := tlsconf.ClientConfig(tlsconf.Settings{TruststoreLocation: trust})
	if err != nil {
		t.Fatal(err)
	}
	return &saslClientsBroker{testBroker: tb, ssl: tb.listenerAddr(t, "SASL_SSL"), plaintext: tb.listenerAddr(t, "SASL_PLAINTEXT"), ca: trust, tls: cfg}
}

// xdgSCRAM is sarama's SCRAMClient over xdg-go/scram.
type xdgSCRAM struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (x *xdgSCRAM) Begin(user, password, authzID string) error {
	c, err := x.hash.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	x.conv = c.NewConversation()
	return nil
}

func (x *xdgSCRAM) Step(challenge string) (string, error) { return x.conv.Step(challenge) }
func (x *xdgSCRAM) Done() bool                            { return x.conv.Done() }

// saramaSASL is a sarama config for user on a SASL listener: TLS when
// tlsCfg is set, SaslHandshake of version v.
func saramaSASL(tlsCfg *tls.Config, mech, user, password string, v int16) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_9_0_0
	cfg.ClientID = "sarama-sasl"
	if tlsCfg != nil {
		cfg.Net.TLS.Enable, cfg.Net.TLS.Config = true, tlsCfg.Clone()
	}
	cfg.Net.SASL.Enable, cfg.Net.SASL.Handshake = true, true
	cfg.Net.SASL.Mechanism = sarama.SASLMechanism(mech)
	cfg.Net.SASL.User, cfg.Net.SASL.Password = user, password
	cfg.Net.SASL.Version = v
	if v == sarama.SASLHandshakeV0 {
		cfg.ApiVersionsRequest = false // sarama refuses both: v0 begins the connection
	}
	switch mech {
	case sarama.SASLTypeSCRAMSHA512:
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &xdgSCRAM{hash: sha512.New} }
	case sarama.SASLTypeSCRAMSHA256:
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &xdgSCRAM{hash: sha256.New} }
	}
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Group.Heartbeat.Interval = 100 * time.Millisecond
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	cfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	return cfg
}

// saramaCollector hands every message its group session receives to got,
// marking it consumed.
type saramaCollector struct{ got chan *sarama.ConsumerMessage }

func (saramaCollector) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (saramaCollector) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (s saramaCollector) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			select {
			case s.got <- m:
			case <-sess.Context().Done():
				return nil
			}
			sess.MarkMessage(m, "")
		case <-sess.Context().Done():
			return nil
		}
	}
}

// saramaGroup runs a consumer group on topic until the test ends; the
// messages arrive on the returned channel.
func saramaGroup(t *testing.T, addr, group, topic string, cfg *sarama.Config) <-chan *sarama.ConsumerMessage {
	t.Helper()
	cg, err := sarama.NewConsumerGroup([]string{addr}, group, cfg)
	if err != nil {
		t.Fatalf("sarama consumer group: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := saramaCollector{got: make(chan *sarama.ConsumerMessage)}
	done := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("sarama consumer group %s: %v", group, err)
		}
		cg.Close()
	})
	return h.got
}

// nextSarama waits for the next message of a group.
func nextSarama(t *testing.T, got <-chan *sarama.ConsumerMessage, d time.Duration) *sarama.ConsumerMessage {
	t.Helper()
	select {
	case m := <-got:
		return m
	case <-time.After(d):
		t.Fatalf("no message from the sarama group in %v", d)
		return nil
	}
}

// sarama produces with a SyncProducer and consumes with a consumer group,
// logging in with PLAIN over SaslHandshake v0 (raw tokens) and v1
// (SaslAuthenticate) and with both SCRAMs, over TLS and plain TCP.
func TestSASLClientsSarama(t *testing.T) {
	b := startSASLClientsBroker(t, 0)
	for _, tc := range []struct {
		name, mech, user, password string
		v                          int16
		tls                        bool
	}{
		{"PLAIN v0 SASL_SSL", sarama.SASLTypePlaintext, "carol", "carol-secret", sarama.SASLHandshakeV0, true},
		{"PLAIN v1 SASL_SSL", sarama.SASLTypePlaintext, "carol", "carol-secret", sarama.SASLHandshakeV1, true},
		{"SCRAM-SHA-512 v1 SASL_SSL", sarama.SASLTypeSCRAMSHA512, "alice", "alice-secret", sarama.SASLHandshakeV1, true},
		{"SCRAM-SHA-256 v0 SASL_SSL", sarama.SASLTypeSCRAMSHA256, "alice", "alice-secret", sarama.SASLHandshakeV0, true},
		{"PLAIN v0 SASL_PLAINTEXT", sarama.SASLTypePlaintext, "carol", "carol-secret", sarama.SASLHandshakeV0, false},
		{"SCRAM-SHA-512 v1 SASL_PLAINTEXT", sarama.SASLTypeSCRAMSHA512, "alice", "alice-secret", sarama.SASLHandshakeV1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, tlsCfg := b.plaintext, (*tls.Config)(nil)
			if tc.tls {
				addr, tlsCfg = b.ssl, b.tls
			}
			slug := strings.ToLower(strings.NewReplacer(" ", "-").Replace(tc.name))
			topic := "sarama-" + slug
			cfg := saramaSASL(tlsCfg, tc.mech, tc.user, tc.password, tc.v)
			p, err := sarama.NewSyncProducer([]string{addr}, cfg)
			if err != nil {
				t.Fatalf("sync producer: %v", err)
			}
			defer p.Close()
			const n = 5
			for i := range n {
				if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(fmt.Sprint(i))}); err != nil {
					t.Fatalf("send %d: %v", i, err)
				}
			}
			got := saramaGroup(t, addr, "group-"+slug, topic, saramaSASL(tlsCfg, tc.mech, tc.user, tc.password, tc.v))
			for i := range n {
				if m := nextSarama(t, got, 20*time.Second); string(m.Value) != fmt.Sprint(i) || m.Offset != int64(i) {
					t.Fatalf("message %d: %q at offset %d", i, m.Value, m.Offset)
				}
			}
		})
	}
	// A wrong password: SASL_AUTHENTICATION_FAILED through SaslAuthenticate;
	// after a raw v0 token the broker can only close the connection, as
	// Kafka does.
	for _, tc := range []struct {
		mech string
		v    int16
		want error
	}{
		{sarama.SASLTypePlaintext, sarama.SASLHandshakeV1, sarama.ErrSASLAuthenticationFailed},
		{sarama.SASLTypeSCRAMSHA512, sarama.SASLHandshakeV1, sarama.ErrSASLAuthenticationFailed},
		{sarama.SASLTypePlaintext, sarama.SASLHandshakeV0, nil},
		{sarama.SASLTypeSCRAMSHA256, sarama.SASLHandshakeV0, nil},
	} {
		t.Run(fmt.Sprintf("wrong password %s v%d", tc.mech, tc.v), func(t *testing.T) {
			user := "alice"
			if tc.mech == sarama.SASLTypePlaintext {
				user = "carol"
			}
			br := sarama.NewBroker(b.ssl)
			if err := br.Open(saramaSASL(b.tls, tc.mech, user, "wrong", tc.v)); err != nil {
				t.Fatal(err)
			}
			defer br.Close()
			_, err := br.GetMetadata(&sarama.MetadataRequest{Version: 1})
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	// The broker still serves.
	br := sarama.NewBroker(b.ssl)
	if err := br.Open(saramaSASL(b.tls, sarama.SASLTypeSCRAMSHA512, "alice", "alice-secret", sarama.SASLHandshakeV1)); err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	if md, err := br.GetMetadata(&sarama.MetadataRequest{Version: 1}); err != nil || len(md.Brokers) != 1 {
		t.Fatalf("metadata after failures: %v %+v", err, md)
	}
}

// dropCounter is a sarama dialer, TLS included (the broker's close_notify
// ends a TLS stream before the TCP one), counting the connections the
// broker ended: a read met EOF or a reset. sarama closing a connection
// itself does not count.
type dropCounter struct {
	tls     *tls.Config
	dropped atomic.Int32
}

func (d *dropCounter) Dial(network, addr string) (net.Conn, error) {
	nc, err := net.Dial(network, addr)
	if err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(addr)
	cfg := d.tls.Clone()
	cfg.ServerName = host
	return &dropConn{Conn: tls.Client(nc, cfg), d: d}, nil
}

type dropConn struct {
	net.Conn
	d    *dropCounter
	once sync.Once
}

func (c *dropConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		c.once.Do(func() { c.d.dropped.Add(1) })
	}
	return n, err
}

// sarama re-authenticates (KIP-368) before each session ends: a producer
// and a consumer group keep working across several session lifetimes and
// the broker closes none of their connections.
func TestSASLClientsSaramaReauthentication(t *testing.T) {
	const lifetime = 1500 * time.Millisecond
	b := startSASLClientsBroker(t, lifetime)
	const topic = "sarama-reauth"
	drops := &dropCounter{tls: b.tls}
	newCfg := func() *sarama.Config {
		cfg := saramaSASL(nil, sarama.SASLTypeSCRAMSHA512, "alice", "alice-secret", sarama.SASLHandshakeV1)
		cfg.Net.Proxy.Enable, cfg.Net.Proxy.Dialer = true, drops // TLS in the dialer
		return cfg
	}
	p, err := sarama.NewSyncProducer([]string{b.ssl}, newCfg())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	send := func(i int) {
		t.Helper()
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(fmt.Sprint(i))}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	send(0)
	got := saramaGroup(t, b.ssl, "sarama-reauth", topic, newCfg())
	end := time.Now().Add(3*lifetime + lifetime/2)
	for i := 0; ; i++ {
		if m := nextSarama(t, got, 20*time.Second); string(m.Value) != fmt.Sprint(i) {
			t.Fatalf("message %d: %q", i, m.Value)
		}
		if time.Now().After(end) {
			break
		}
		send(i + 1)
	}
	if n := drops.dropped.Load(); n != 0 {
		t.Fatalf("the broker closed %d of sarama's connections", n)
	}
}

// kafka-go's Writer (Transport) and Reader (Dialer, consumer group) with
// TLS and its own PLAIN and SCRAM mechanisms; a wrong password fails with
// SASL_AUTHENTICATION_FAILED.
func TestSASLClientsKafkaGo(t *testing.T) {
	b := startSASLClientsBroker(t, 0)
	scramMechKG := func(algo kgoscram.Algorithm, user, password string) kgosasl.Mechanism {
		m, err := kgoscram.Mechanism(algo, user, password)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, tc := range []struct {
		name string
		mech kgosasl.Mechanism
		tls  bool
	}{
		{"SCRAM-SHA-512 SASL_SSL", scramMechKG(kgoscram.SHA512, "alice", "alice-secret"), true},
		{"PLAIN SASL_SSL", kgoplain.Mechanism{Username: "carol", Password: "carol-secret"}, true},
		{"SCRAM-SHA-256 SASL_PLAINTEXT", scramMechKG(kgoscram.SHA256, "alice", "alice-secret"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, tlsCfg := b.plaintext, (*tls.Config)(nil)
			if tc.tls {
				addr, tlsCfg = b.ssl, b.tls.Clone()
			}
			slug := strings.ToLower(strings.NewReplacer(" ", "-").Replace(tc.name))
			topic := "kafka-go-" + slug
			ctx := ctxTimeout(t, 30*time.Second)
			w := &kafkago.Writer{
				Addr:                   kafkago.TCP(addr),
				Topic:                  topic,
				Transport:              &kafkago.Transport{TLS: tlsCfg, SASL: tc.mech, ClientID: "kafka-go-sasl"},
				AllowAutoTopicCreation: true,
				RequiredAcks:           kafkago.RequireAll,
				BatchTimeout:           time.Millisecond,
			}
			defer w.Close()
			const n = 5
			var msgs []kafkago.Message
			for i := range n {
				msgs = append(msgs, kafkago.Message{Value: fmt.Append(nil, i)})
			}
			if err := w.WriteMessages(ctx, msgs...); err != nil {
				t.Fatalf("write: %v", err)
			}
			r := kafkago.NewReader(kafkago.ReaderConfig{
				Brokers:           []string{addr},
				GroupID:           "group-" + slug,
				Topic:             topic,
				Dialer:            &kafkago.Dialer{Timeout: 10 * time.Second, TLS: tlsCfg, SASLMechanism: tc.mech, ClientID: "kafka-go-sasl"},
				HeartbeatInterval: 100 * time.Millisecond,
				JoinGroupBackoff:  50 * time.Millisecond,
				StartOffset:       kafkago.FirstOffset,
				MaxWait:           100 * time.Millisecond,
			})
			defer r.Close()
			for i := range n {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					t.Fatalf("read %d: %v", i, err)
				}
				if string(m.Value) != fmt.Sprint(i) || m.Offset != int64(i) {
					t.Fatalf("message %d: %q at offset %d", i, m.Value, m.Offset)
				}
			}
		})
	}
	for _, tc := range []struct {
		name string
		mech kgosasl.Mechanism
	}{
		{"SCRAM-SHA-512", scramMechKG(kgoscram.SHA512, "alice", "wrong")},
		{"PLAIN", kgoplain.Mechanism{Username: "carol", Password: "wrong"}},
	} {
		t.Run("wrong password "+tc.name, func(t *testing.T) {
			d := &kafkago.Dialer{Timeout: 10 * time.Second, TLS: b.tls.Clone(), SASLMechanism: tc.mech}
			conn, err := d.DialContext(ctxTimeout(t, 10*time.Second), "tcp", b.ssl)
			if err == nil {
				conn.Close()
			}
			if !errors.Is(err, kafkago.SASLAuthenticationFailed) {
				t.Fatalf("got %v, want SASL_AUTHENTICATION_FAILED", err)
			}
		})
	}
}

// librdkafka (Debian's python3-confluent-kafka) over SASL_SSL with
// SCRAM-SHA-256: a producer and a consumer group; then, with sessions of
// 1.5 s, a consumer across several session lifetimes
// (testdata/sasl_librdkafka.py tells librdkafka's re-authentication, from
// 2.2, from older versions' reconnection when the broker closes an expired
// session's connection, and checks each).
func TestSASLClientsLibrdkafka(t *testing.T) {
	python := requireConfluentKafka(t)
	run := func(t *testing.T, b *saslClientsBroker, mode, topic, want string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, python, "testdata/sasl_librdkafka.py", mode, b.ssl, b.ca, topic).CombinedOutput()
		t.Logf("%s", out)
		if err != nil {
			t.Fatalf("sasl_librdkafka.py %s: %v (ctx %v)", mode, err, ctx.Err())
		}
		if !strings.Contains(string(out), want) {
			t.Fatalf("the script did not report %q", want)
		}
	}
	t.Run("produce consume", func(t *testing.T) {
		run(t, startSASLClientsBroker(t, 0), "produce-consume", "rdkafka-sasl", "consumed 10 records")
	})
	t.Run("re-authentication", func(t *testing.T) {
		run(t, startSASLClientsBroker(t, 1500*time.Millisecond), "reauth", "rdkafka-reauth", "kept working across several session lifetimes")
	})
}
