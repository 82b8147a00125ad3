package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	franzscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/security/scram"
	"github.com/sluice-io/sluice/wire"
)

const plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_carol="carol-secret";`

// startSASLBroker serves one SASL_PLAINTEXT listener with PLAIN users admin
// and carol and SCRAM users alice (both mechanisms, password
// alice-secret); mod changes the config further.
func startSASLBroker(t *testing.T, mod func(*config.Config)) *testBroker {
	t.Helper()
	tb := startBroker(t, t.TempDir(), func(c *config.Config) {
		c.Listeners = []config.ListenerConfig{{Name: "SASL_PLAINTEXT", Addr: "127.0.0.1:0"}}
		if _, err := c.Apply(map[string]string{
			"sasl.enabled.mechanisms":                             "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN",
			"listener.name.sasl_plaintext.plain.sasl.jaas.config": plainJAAS,
		}); err != nil {
			t.Fatal(err)
		}
		if mod != nil {
			mod(c)
		}
	})
	setSCRAM(t, tb, "alice", "alice-secret")
	return tb
}

// setSCRAM stores user's credentials for both mechanisms.
func setSCRAM(t testing.TB, tb *testBroker, user, password string) {
	t.Helper()
	if err := tb.coord.AlterEntityConfigs(coordinator.UserEntity(user), func(cur map[string]string) (map[string]string, error) {
		if cur == nil {
			cur = map[string]string{}
		}
		for _, m := range scram.Mechanisms {
			cred, err := m.NewCredential(password, 4096)
			if err != nil {
				return nil, err
			}
			cur[m.Name()] = cred.String()
		}
		return cur, nil
	}); err != nil {
		t.Fatal(err)
	}
	tb.forgetSCRAM(user)
}

func scramMech(name, user, password string) sasl.Mechanism {
	a := franzscram.Auth{User: user, Pass: password}
	if name == "SCRAM-SHA-256" {
		return a.AsSha256Mechanism()
	}
	return a.AsSha512Mechanism()
}

// produceConsume produces a record with cl and reads it back.
func produceConsume(t *testing.T, tb *testBroker, topic string, opts ...kgo.Opt) error {
	t.Helper()
	ctx := ctxTimeout(t, 20*time.Second)
	cl := tb.client(t, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.AllowAutoTopicCreation(), kgo.RequestRetries(1)}, opts...)...)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v-" + topic)}).FirstErr(); err != nil {
		return err
	}
	for {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return err
		}
		for _, r := range fs.Records() {
			if string(r.Value) == "v-"+topic {
				return nil
			}
		}
	}
}

// franz-go authenticates with each mechanism over SASL_PLAINTEXT, and the
// connection's principal is the user.
func TestSASLProduceConsume(t *testing.T) {
	tb := startSASLBroker(t, nil)
	for _, tc := range []struct {
		name string
		mech sasl.Mechanism
	}{
		{"SCRAM-SHA-512", scramMech("SCRAM-SHA-512", "alice", "alice-secret")},
		{"SCRAM-SHA-256", scramMech("SCRAM-SHA-256", "alice", "alice-secret")},
		{"PLAIN", plain.Auth{User: "carol", Pass: "carol-secret"}.AsMechanism()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := produceConsume(t, tb, "sasl-"+strings.ToLower(tc.name), kgo.SASL(tc.mech)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A wrong password, an unknown user and a plaintext client fail; the
// broker keeps serving a good client.
func TestSASLFailures(t *testing.T) {
	tb := startSASLBroker(t, nil)
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"wrong SCRAM password", []kgo.Opt{kgo.SASL(scramMech("SCRAM-SHA-512", "alice", "wrong"))}},
		{"unknown SCRAM user", []kgo.Opt{kgo.SASL(scramMech("SCRAM-SHA-256", "mallory", "x"))}},
		{"wrong PLAIN password", []kgo.Opt{kgo.SASL(plain.Auth{User: "carol", Pass: "wrong"}.AsMechanism())}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := tb.client(t, append(tc.opts, kgo.RequestRetries(0))...)
			ctx := ctxTimeout(t, 10*time.Second)
			_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
			if !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Fatalf("got %v, want SASL_AUTHENTICATION_FAILED", err)
			}
			if strings.Contains(err.Error(), "password") || strings.Contains(err.Error(), "user") {
				t.Fatalf("the error says too much: %v", err)
			}
		})
	}
	if err := produceConsume(t, tb, "after-failures", kgo.SASL(scramMech("SCRAM-SHA-512", "alice", "alice-secret"))); err != nil {
		t.Fatal(err)
	}
}

// saslRaw is a hand-driven connection to the broker.
type saslRaw struct {
	t    testing.TB
	nc   net.Conn
	corr int32
}

func dialSASLRaw(t testing.TB, addr string) *saslRaw {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	return &saslRaw{t: t, nc: nc}
}

func (rc *saslRaw) send(req kmsg.Request) {
	rc.t.Helper()
	rc.corr++
	if _, err := rc.nc.Write(wire.AppendRequest(nil, rc.corr, "raw", req)); err != nil {
		rc.t.Fatal(err)
	}
}

// roundTrip sends req and reads its response.
func (rc *saslRaw) roundTrip(req kmsg.Request) kmsg.Response {
	rc.t.Helper()
	rc.send(req)
	frame, err := wire.ReadFrame(rc.nc, nil, 1<<20)
	if err != nil {
		rc.t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := wire.ParseResponse(frame, rc.corr, resp); err != nil {
		rc.t.Fatal(err)
	}
	return resp
}

// closed waits for the broker to close the connection.
func (rc *saslRaw) closed() {
	rc.t.Helper()
	var b [1]byte
	n, err := rc.nc.Read(b[:])
	var ne net.Error
	if n > 0 || err == nil || errors.As(err, &ne) && ne.Timeout() {
		rc.t.Fatalf("connection still open: read %d bytes, %v", n, err)
	}
}

func handshake(v int16, mech string) *kmsg.SASLHandshakeRequest {
	r := kmsg.NewPtrSASLHandshakeRequest()
	r.Version, r.Mechanism = v, mech
	return r
}

func authenticate(v int16, token []byte) *kmsg.SASLAuthenticateRequest {
	r := kmsg.NewPtrSASLAuthenticateRequest()
	r.Version, r.SASLAuthBytes = v, token
	return r
}

// scramLogin authenticates rc as user with SaslAuthenticate v1 and returns
// the last response.
func (rc *saslRaw) scramLogin(user, password string) *kmsg.SASLAuthenticateResponse {
	rc.t.Helper()
	if r := rc.roundTrip(handshake(1, "SCRAM-SHA-512")).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		rc.t.Fatalf("handshake: %d", r.ErrorCode)
	}
	c := scram.NewClient(scram.SHA512, user, password)
	r := rc.roundTrip(authenticate(1, c.First())).(*kmsg.SASLAuthenticateResponse)
	if r.ErrorCode != 0 {
		return r
	}
	final, err := c.Final(r.SASLAuthBytes)
	if err != nil {
		rc.t.Fatal(err)
	}
	r = rc.roundTrip(authenticate(1, final)).(*kmsg.SASLAuthenticateResponse)
	if r.ErrorCode == 0 {
		if err := c.Verify(r.SASLAuthBytes); err != nil {
			rc.t.Fatal(err)
		}
	}
	return r
}

// Bad input in the SASL exchange closes that connection only.
func TestSASLBadInput(t *testing.T) {
	tb := startSASLBroker(t, nil)

	t.Run("request before authentication", func(t *testing.T) {
		rc := dialSASLRaw(t, tb.addr)
		if r := rc.roundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
			t.Fatalf("ApiVersions: %d", r.ErrorCode)
		}
		rc.send(kmsg.NewPtrMetadataRequest())
		rc.closed()
	})
	t.Run("unknown mechanism", func(t *testing.T) {
		rc := dialSASLRaw(t, tb.addr)
		r := rc.roundTrip(handshake(1, "GSSAPI")).(*kmsg.SASLHandshakeResponse)
		if r.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(r.SupportedMechanisms, ",") != "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN" {
			t.Fatalf("got %d %v", r.ErrorCode, r.SupportedMechanisms)
		}
		rc.closed()
	})
	t.Run("authenticate before handshake", func(t *testing.T) {
		rc := dialSASLRaw(t, tb.addr)
		if r := rc.roundTrip(authenticate(1, []byte("x"))).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("got %d", r.ErrorCode)
		}
		rc.closed()
	})
	t.Run("second handshake", func(t *testing.T) {
		rc := dialSASLRaw(t, tb.addr)
		rc.roundTrip(handshake(1, "PLAIN"))
		if r := rc.roundTrip(handshake(1, "PLAIN")).(*kmsg.SASLHandshakeResponse); r.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("got %d", r.ErrorCode)
		}
		rc.closed()
	})
	for _, mech := range []string{"SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"} {
		for _, garbage := range [][]byte{nil, []byte("\x00\xff\xfe garbage"), []byte("n,,n=alice,r="), []byte("p=tls,,n=alice,r=abc")} {
			t.Run(fmt.Sprintf("garbage %s %q", mech, garbage), func(t *testing.T) {
				rc := dialSASLRaw(t, tb.addr)
				rc.roundTrip(handshake(1, mech))
				r := rc.roundTrip(authenticate(2, garbage)).(*kmsg.SASLAuthenticateResponse)
				if r.ErrorCode != kerr.SaslAuthenticationFailed.Code || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, mech) {
					t.Fatalf("got %d %v", r.ErrorCode, r.ErrorMessage)
				}
				rc.closed()
			})
		}
	}
	t.Run("garbage client-final", func(t *testing.T) {
		rc := dialSASLRaw(t, tb.addr)
		rc.roundTrip(handshake(1, "SCRAM-SHA-512"))
		if r := rc.roundTrip(authenticate(1, scram.NewClient(scram.SHA512, "alice", "x").First())).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != 0 {
			t.Fatalf("client-first: %d", r.ErrorCode)
		}
		if r := rc.roundTrip(authenticate(1, []byte("c=biws,r=nope,p=AAAA"))).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("got %d", r.ErrorCode)
		}
		rc.closed()
	})
	t.Run("oversized token", func(t *testing.T) {
		rc := dialSASLRaw(t, tb.addr)
		rc.roundTrip(handshake(1, "SCRAM-SHA-512"))
		var prefix [4]byte
		binary.BigEndian.PutUint32(prefix[:], 524289)
		rc.nc.Write(prefix[:])
		rc.closed()
	})
	t.Run("raw tokens after handshake v0", func(t *testing.T) {
		rc := dialSASLRaw(t, tb.addr)
		if r := rc.roundTrip(handshake(0, "SCRAM-SHA-512")).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
			t.Fatalf("handshake v0: %d", r.ErrorCode)
		}
		c := scram.NewClient(scram.SHA512, "alice", "alice-secret")
		token := func(b []byte) []byte {
			frame := binary.BigEndian.AppendUint32(nil, uint32(len(b)))
			if _, err := rc.nc.Write(append(frame, b...)); err != nil {
				t.Fatal(err)
			}
			in, err := wire.ReadFrame(rc.nc, nil, 1<<16)
			if err != nil {
				t.Fatal(err)
			}
			return in
		}
		final, err := c.Final(token(c.First()))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Verify(token(final)); err != nil {
			t.Fatal(err)
		}
		if r := rc.roundTrip(kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse); len(r.Brokers) != 1 {
			t.Fatalf("metadata after raw SCRAM: %+v", r.Brokers)
		}
	})
	t.Run("after authentication", func(t *testing.T) {
		rc := dialSASLRaw(t, tb.addr)
		if r := rc.scramLogin("alice", "alice-secret"); r.ErrorCode != 0 || r.SessionLifetimeMillis != 0 {
			t.Fatalf("login: %d, lifetime %d", r.ErrorCode, r.SessionLifetimeMillis)
		}
		if r := rc.roundTrip(handshake(1, "SCRAM-SHA-512")).(*kmsg.SASLHandshakeResponse); r.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("handshake after authentication without re-authentication: %d", r.ErrorCode)
		}
		if r := rc.roundTrip(authenticate(1, nil)).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("authenticate after authentication: %d", r.ErrorCode)
		}
		if r := rc.roundTrip(kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse); len(r.Brokers) != 1 {
			t.Fatalf("the connection is no longer served: %+v", r)
		}
	})
	if err := produceConsume(t, tb, "after-bad-input", kgo.SASL(scramMech("SCRAM-SHA-512", "alice", "alice-secret"))); err != nil {
		t.Fatal(err)
	}
}

// A credential added, changed or removed takes effect for the next
// exchange.
func TestSASLCredentialChanges(t *testing.T) {
	tb := startSASLBroker(t, nil)
	login := func(user, pw string) int16 {
		return dialSASLRaw(t, tb.addr).scramLogin(user, pw).ErrorCode
	}
	if code := login("dave", "d1"); code != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("unknown user: %d", code)
	}
	ctx := ctxTimeout(t, 10*time.Second)
	adm := tb.client(t, kgo.SASL(scramMech("SCRAM-SHA-512", "alice", "alice-secret")))
	up := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	salt := []byte("dave-salt")
	salted, _ := scram.SHA512.SaltedPassword("d1", salt, 4096)
	u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = "dave", 2, 4096, salt, salted
	up.Upsertions = append(up.Upsertions, u)
	if resp, err := up.RequestWith(ctx, adm); err != nil || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("alter: %v %+v", err, resp)
	}
	if code := login("dave", "d1"); code != 0 {
		t.Fatalf("new user: %d", code)
	}
	del := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = "dave", 2
	del.Deletions = append(del.Deletions, d)
	if resp, err := del.RequestWith(ctx, adm); err != nil || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("delete: %v %+v", err, resp)
	}
	if code := login("dave", "d1"); code != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("deleted user: %d", code)
	}
}

// GSSAPI, OAUTHBEARER and unknown mechanisms are refused at start, as is
// PLAIN without a JAAS entry.
func TestSASLConfigRefused(t *testing.T) {
	for _, tc := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"sasl.enabled.mechanisms": "GSSAPI"}, "GSSAPI"},
		{map[string]string{"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "OAUTHBEARER"}, "OAUTHBEARER"},
		{map[string]string{"sasl.enabled.mechanisms": "SCRAM-SHA-1"}, "SCRAM-SHA-1"},
		{map[string]string{"sasl.enabled.mechanisms": "PLAIN"}, "PlainLoginModule"},
		{map[string]string{"sasl.jaas.config": "not jaas"}, "sasl.jaas.config"},
	} {
		cfg := config.Config{DataDir: t.TempDir(), Listeners: []config.ListenerConfig{{Name: "SASL_PLAINTEXT", Addr: "127.0.0.1:0"}}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if _, err := cfg.Apply(tc.props); err != nil {
			t.Fatal(err)
		}
		b, err := New(cfg)
		if err == nil {
			b.Close()
			t.Errorf("%v: started", tc.props)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want it to name %s", tc.props, err, tc.want)
		}
	}
}

// KIP-368: with connections.max.reauth.ms, SaslAuthenticate tells the
// session lifetime; franz-go re-authenticates before it ends, so a long
// consumer keeps working; a connection past its lifetime that sends
// anything but SaslHandshake is closed; re-authentication may not change
// the principal.
func TestSASLReauthentication(t *testing.T) {
	tb := startSASLBroker(t, func(c *config.Config) { c.SASL.ConnectionsMaxReauth = 1200 * time.Millisecond })
	setSCRAM(t, tb, "bob", "bob-secret")

	t.Run("expired session closed", func(t *testing.T) {
		rc := dialSASLRaw(t, tb.addr)
		r := rc.scramLogin("alice", "alice-secret")
		if r.ErrorCode != 0 || r.SessionLifetimeMillis != 1200 {
			t.Fatalf("login: %d, lifetime %d", r.ErrorCode, r.SessionLifetimeMillis)
		}
		rc.roundTrip(kmsg.NewPtrMetadataRequest())
		<-time.After(1300 * time.Millisecond) // the session's end is the event
		rc.send(kmsg.NewPtrMetadataRequest())
		rc.closed()
	})
	t.Run("re-authentication keeps the principal", func(t *testing.T) {
		rc := dialSASLRaw(t, tb.addr)
		if r := rc.scramLogin("alice", "alice-secret"); r.ErrorCode != 0 {
			t.Fatal(r.ErrorCode)
		}
		if r := rc.scramLogin("alice", "alice-secret"); r.ErrorCode != 0 {
			t.Fatalf("re-authentication: %d", r.ErrorCode)
		}
		rc.roundTrip(kmsg.NewPtrMetadataRequest())
		if r := rc.scramLogin("bob", "bob-secret"); r.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("re-authentication as another user: %d", r.ErrorCode)
		}
		rc.closed()
	})
	t.Run("franz-go consumer across re-authentications", func(t *testing.T) {
		ctx := ctxTimeout(t, 30*time.Second)
		mech := kgo.SASL(scramMech("SCRAM-SHA-512", "alice", "alice-secret"))
		prod := tb.client(t, mech, kgo.AllowAutoTopicCreation())
		cons := tb.client(t, mech, kgo.ConsumeTopics("reauth"), kgo.FetchMaxWait(200*time.Millisecond))
		end := time.Now().Add(4 * time.Second) // three session lifetimes
		want := 0
		got := 0
		for time.Now().Before(end) || got < want {
			if time.Now().Before(end) {
				if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "reauth", Value: []byte("x")}).FirstErr(); err != nil {
					t.Fatalf("produce %d: %v", want, err)
				}
				want++
			}
			fs := cons.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("poll after %d records: %v", got, err)
			}
			got += fs.NumRecords()
		}
		if got != want {
			t.Fatalf("consumed %d of %d", got, want)
		}
	})
}

// kcat (librdkafka) produces and consumes over SASL_PLAINTEXT with
// SCRAM-SHA-512, and a wrong password fails.
func TestSASLKcat(t *testing.T) {
	requireKcat(t)
	tb := startSASLBroker(t, nil)
	auth := []string{"-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username=alice"}
	args := func(pw string, rest ...string) []string {
		return append(append([]string{"-b", tb.addr}, append(auth, "-X", "sasl.password="+pw)...), rest...)
	}
	kcat(t, "one\ntwo\n", args("alice-secret", "-P", "-t", "kcat-sasl", "-p", "0")...)
	if out := kcat(t, "", args("alice-secret", "-C", "-t", "kcat-sasl", "-p", "0", "-o", "beginning", "-c", "2", "-e")...); out != "one\ntwo\n" {
		t.Fatalf("consumed %q", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kcat", args("wrong", "-L", "-m", "5")...)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Authentication failed") {
		t.Fatalf("wrong password: %v\n%s", err, out)
	}
}
