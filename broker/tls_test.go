package broker

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/security/tlsconf"
	"github.com/sluice-io/sluice/security/tlsconf/tlstest"
)

// logLines is a slog handler that keeps every record as one text line, so
// a test can wait for the broker to log something.
type logLines struct {
	mu    sync.Mutex
	lines []string
	added chan struct{} // closed and replaced at each line
	attrs []slog.Attr
	root  *logLines
}

func newLogLines() *logLines {
	l := &logLines{added: make(chan struct{})}
	l.root = l
	return l
}

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l *logLines) WithGroup(string) slog.Handler            { return l }
func (l *logLines) WithAttrs(as []slog.Attr) slog.Handler {
	return &logLines{attrs: append(append([]slog.Attr{}, l.attrs...), as...), root: l.root}
}

func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	for _, a := range l.attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	root := l.root
	root.mu.Lock()
	root.lines = append(root.lines, b.String())
	close(root.added)
	root.added = make(chan struct{})
	root.mu.Unlock()
	return nil
}

// wait returns the first line containing every part, waiting up to 10 s.
func (l *logLines) wait(t testing.TB, parts ...string) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for seen := 0; ; {
		l.mu.Lock()
		lines, added := l.lines[seen:], l.added
		seen = len(l.lines)
		l.mu.Unlock()
	next:
		for _, line := range lines {
			for _, p := range parts {
				if !strings.Contains(line, p) {
					continue next
				}
			}
			return line
		}
		select {
		case <-added:
		case <-deadline:
			t.Fatalf("the broker logged no line with %q", parts)
		}
	}
}

// tlsBroker is a broker with a PLAINTEXT and an SSL listener, the SSL one
// requiring client certificates of its CA.
type tlsBroker struct {
	*testBroker
	ca       *tlstest.CA
	dir      string
	keystore string // the broker's keystore file
	log      *logLines
	ssl      string // the SSL listener's address
}

func startTLSBroker(t testing.TB, mod func(*config.Config)) *tlsBroker {
	t.Helper()
	tb := &tlsBroker{ca: tlstest.NewCA(t, "sluice-test-ca"), dir: t.TempDir(), log: newLogLines()}
	tb.keystore = tlstest.WriteFile(t, tb.dir, "broker.pem", tb.ca.Server(t, "broker").Keystore)
	trust := tlstest.WriteFile(t, tb.dir, "ca.pem", tb.ca.PEM)
	tb.testBroker = startBroker(t, t.TempDir(), func(c *config.Config) {
		c.Listeners = []config.ListenerConfig{{Name: "PLAINTEXT", Addr: "127.0.0.1:0"}, {Name: "SSL", Addr: "127.0.0.1:0"}}
		c.TLS.Props = map[string]string{
			"ssl.keystore.location":                         tb.keystore,
			"ssl.truststore.location":                       trust,
			"listener.name.ssl.ssl.client.auth":             "required",
			"listener.name.ssl.ssl.principal.mapping.rules": "RULE:^CN=([^,]+),OU=ServiceUsers.*$/$1/L,DEFAULT",
		}
		c.Logger = slog.New(tb.log)
		if mod != nil {
			mod(c)
		}
	})
	select {
	case <-tb.Listening():
	case <-time.After(10 * time.Second):
		t.Fatal("the broker did not bind its listeners")
	}
	tb.ssl = tb.ListenerAddr("SSL").String()
	return tb
}

// clientTLS is a client configuration with a certificate for subject from
// ca, trusting the broker's CA.
func (tb *tlsBroker) clientTLS(t testing.TB, ca *tlstest.CA, subject pkix.Name) *tls.Config {
	t.Helper()
	ks := tlstest.WriteFile(t, t.TempDir(), "client.pem", ca.Issue(t, subject).Keystore)
	cfg, err := tlsconf.ClientConfig(tlsconf.Settings{KeystoreLocation: ks, TruststoreCertificates: string(tb.ca.PEM)})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestTLSListenerProduceConsume: franz-go with a client certificate
// produces and consumes over SSL (ssl.client.auth=required), big enough
// that fetches go through the TLS writer in many chunks; a plaintext
// client on the PLAINTEXT listener reads the same records; the principal
// is the certificate's subject mapped by the rules.
func TestTLSListenerProduceConsume(t *testing.T) {
	tb := startTLSBroker(t, nil)
	cfg := tb.clientTLS(t, tb.ca, pkix.Name{CommonName: "Alice", OrganizationalUnit: []string{"ServiceUsers"}, Organization: []string{"Acme"}})
	cl := tb.client(t, kgo.SeedBrokers(tb.ssl), kgo.DialTLSConfig(cfg), kgo.AllowAutoTopicCreation(),
		kgo.ConsumeTopics("secure"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(4<<20))
	ctx := ctxTimeout(t, 30*time.Second)
	const n = 200
	value := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 10_000+i) }
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Topic: "secure", Value: value(i)}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	tb.log.wait(t, "TLS client authenticated", "principal=User:alice")

	consume := func(cl *kgo.Client, what string) {
		t.Helper()
		got := 0
		for got < n {
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			for _, r := range fs.Records() {
				if !bytes.Equal(r.Value, value(int(r.Offset))) {
					t.Fatalf("%s: record %d differs", what, r.Offset)
				}
				got++
			}
		}
	}
	consume(cl, "SSL consumer")
	plain := tb.client(t, kgo.SeedBrokers(tb.addr), kgo.ConsumeTopics("secure"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	consume(plain, "PLAINTEXT consumer")
}

// TestTLSListenerRefusals: a client certificate of another CA, no
// certificate, and a plaintext client on the TLS port each fail, each
// logged with the client's address, and the broker keeps serving.
func TestTLSListenerRefusals(t *testing.T) {
	tb := startTLSBroker(t, nil)
	handshake := func(cfg *tls.Config) (string, error) {
		nc, err := net.Dial("tcp", tb.ssl)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		tc := tls.Client(nc, cfg)
		tc.SetDeadline(time.Now().Add(10 * time.Second))
		err = tc.Handshake()
		if err == nil {
			// TLS 1.3: the server's verdict on the certificate comes
			// after the client's handshake; an ApiVersions-sized read
			// sees it.
			_, err = tc.Read(make([]byte, 1))
		}
		return nc.LocalAddr().String(), err
	}
	rogue := tb.clientTLS(t, tlstest.NewCA(t, "rogue-ca"), pkix.Name{CommonName: "mallory"})
	rogue.ServerName = "localhost"
	addr, err := handshake(rogue)
	if err == nil {
		t.Fatal("a certificate of an untrusted CA was accepted")
	}
	tb.log.wait(t, "TLS handshake failed", addr)

	anon, err := tlsconf.ClientConfig(tlsconf.Settings{TruststoreCertificates: string(tb.ca.PEM)})
	if err != nil {
		t.Fatal(err)
	}
	anon.ServerName = "localhost"
	addr, err = handshake(anon)
	if err == nil {
		t.Fatal("a client without a certificate was accepted")
	}
	tb.log.wait(t, "TLS handshake failed", addr, "certificate")

	// A Kafka client speaking plaintext to the TLS port.
	plain := tb.client(t, kgo.SeedBrokers(tb.ssl), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	pctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := plain.Ping(pctx); err == nil {
		t.Fatal("a plaintext client was served on the TLS listener")
	}
	tb.log.wait(t, "TLS handshake failed", "first record does not look like a TLS handshake")

	// The broker still serves both listeners.
	good := tb.clientTLS(t, tb.ca, pkix.Name{CommonName: "bob"})
	ctx := ctxTimeout(t, 20*time.Second)
	cl := tb.client(t, kgo.SeedBrokers(tb.ssl), kgo.DialTLSConfig(good), kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "after", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	tb.log.wait(t, "TLS client authenticated", "principal=User:CN=bob")
	if err := tb.client(t).Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestTLSCertificateReload: replace the broker's keystore file; the next
// connection is served the new certificate.
func TestTLSCertificateReload(t *testing.T) {
	tb := startTLSBroker(t, func(c *config.Config) { c.TLS.ReloadInterval = time.Nanosecond })
	served := func() *tls.ConnectionState {
		cfg := tb.clientTLS(t, tb.ca, pkix.Name{CommonName: "c"})
		cfg.ServerName = "localhost"
		tc, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", tb.ssl, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer tc.Close()
		cs := tc.ConnectionState()
		return &cs
	}
	first := served().PeerCertificates[0]
	next := tb.ca.Server(t, "broker-rotated")
	tlstest.Replace(t, tb.keystore, next.Keystore)
	got := served().PeerCertificates[0]
	if !got.Equal(next.Cert) {
		t.Fatalf("after the rotation the broker served %s (serial %v), want %s (serial %v); before: serial %v",
			got.Subject, got.SerialNumber, next.Cert.Subject, next.Cert.SerialNumber, first.SerialNumber)
	}
}
