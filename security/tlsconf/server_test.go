package tlsconf

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/security/tlsconf/tlstest"
)

// handshake runs one TLS handshake between srv and a client with cfg over
// loopback; it returns the server's view and the client's error.
func handshake(t *testing.T, srv *Server, cfg *tls.Config) (tls.ConnectionState, error, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		cs  tls.ConnectionState
		err error
	}
	done := make(chan result, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer nc.Close()
		tc := tls.Server(nc, srv.Config())
		tc.SetDeadline(time.Now().Add(10 * time.Second))
		err = tc.Handshake()
		if err == nil {
			// TLS 1.3 reports a refused client certificate after the
			// client's handshake returns: read until the client closes.
			tc.Read(make([]byte, 1))
		}
		done <- result{tc.ConnectionState(), err}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := tls.Client(nc, cfg)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	cerr := c.Handshake()
	if cerr == nil {
		// The server's verdict on our certificate arrives with its first
		// record (TLS 1.3).
		c.Write([]byte{0})
		_, cerr = c.Read(make([]byte, 1))
		if errors.Is(cerr, net.ErrClosed) || cerr != nil && strings.Contains(cerr.Error(), "EOF") {
			cerr = nil
		}
	}
	c.Close()
	r := <-done
	return r.cs, r.err, cerr
}

type pki struct {
	ca                 *tlstest.CA
	dir                string
	keystore, trust    string
	client             *tlstest.Leaf
	clientCfg, anonCfg *tls.Config
}

func newPKI(t *testing.T) *pki {
	ca := tlstest.NewCA(t, "test-ca")
	dir := t.TempDir()
	p := &pki{ca: ca, dir: dir}
	p.keystore = tlstest.WriteFile(t, dir, "server.pem", ca.Server(t, "broker").Keystore)
	p.trust = tlstest.WriteFile(t, dir, "ca.pem", ca.PEM)
	p.client = ca.Issue(t, pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"ServiceUsers"}, Organization: []string{"Acme"}})
	ks := tlstest.WriteFile(t, dir, "client.pem", p.client.Keystore)
	var err error
	p.clientCfg, err = ClientConfig(Settings{KeystoreLocation: ks, TruststoreLocation: p.trust})
	if err != nil {
		t.Fatal(err)
	}
	p.clientCfg.ServerName = "localhost"
	p.anonCfg, err = ClientConfig(Settings{TruststoreLocation: p.trust})
	if err != nil {
		t.Fatal(err)
	}
	p.anonCfg.ServerName = "localhost"
	return p
}

func TestServerClientAuthAndPrincipal(t *testing.T) {
	p := newPKI(t)
	set := Settings{KeystoreLocation: p.keystore, TruststoreLocation: p.trust, ClientAuth: "required",
		PrincipalMappingRules: "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/U,DEFAULT"}
	srv, err := NewServer(set, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cs, serr, cerr := handshake(t, srv, p.clientCfg)
	if serr != nil || cerr != nil {
		t.Fatalf("handshake: server %v, client %v", serr, cerr)
	}
	if name, err := srv.Principal(cs); err != nil || name != "ALICE" {
		t.Fatalf("principal %q, %v; want ALICE", name, err)
	}

	// Required: a client without a certificate is refused.
	if _, serr, _ := handshake(t, srv, p.anonCfg); serr == nil {
		t.Fatal("client without a certificate accepted with ssl.client.auth=required")
	}
	// A certificate of another CA is refused.
	other := tlstest.NewCA(t, "other-ca")
	rogue, err := ClientConfig(Settings{KeystoreLocation: tlstest.WriteFile(t, p.dir, "rogue.pem", other.Issue(t, pkix.Name{CommonName: "mallory"}).Keystore), TruststoreLocation: p.trust})
	if err != nil {
		t.Fatal(err)
	}
	rogue.ServerName = "localhost"
	if _, serr, _ := handshake(t, srv, rogue); serr == nil {
		t.Fatal("certificate of an untrusted CA accepted")
	}

	// Requested: no certificate is ANONYMOUS.
	set.ClientAuth = "requested"
	srv, err = NewServer(set, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cs, serr, cerr = handshake(t, srv, p.anonCfg)
	if serr != nil || cerr != nil {
		t.Fatalf("handshake: server %v, client %v", serr, cerr)
	}
	if name, _ := srv.Principal(cs); name != Anonymous {
		t.Fatalf("principal %q, want ANONYMOUS", name)
	}
}

func TestServerReloadsChangedFiles(t *testing.T) {
	p := newPKI(t)
	var reloadErrs []error
	srv, err := NewServer(Settings{KeystoreLocation: p.keystore}, Options{ReloadInterval: time.Nanosecond, OnReloadError: func(err error) { reloadErrs = append(reloadErrs, err) }})
	if err != nil {
		t.Fatal(err)
	}
	seen := func() *tls.Certificate {
		var got *tls.Certificate
		cfg := p.anonCfg.Clone()
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			got = &tls.Certificate{Leaf: cs.PeerCertificates[0]}
			return nil
		}
		if _, serr, cerr := handshake(t, srv, cfg); serr != nil || cerr != nil {
			t.Fatalf("handshake: server %v, client %v", serr, cerr)
		}
		return got
	}
	first := seen().Leaf.SerialNumber
	next := p.ca.Server(t, "broker-rotated")
	tlstest.Replace(t, p.keystore, next.Keystore)
	if got := seen().Leaf; got.SerialNumber.Cmp(next.Cert.SerialNumber) != 0 || got.Subject.CommonName != "broker-rotated" {
		t.Fatalf("after the rotation the server presented %v (first was %v), want %v", got.SerialNumber, first, next.Cert.SerialNumber)
	}
	// A half-written file keeps the current certificate.
	tlstest.Replace(t, p.keystore, next.Keystore[:len(next.Keystore)/2])
	if got := seen().Leaf; got.SerialNumber.Cmp(next.Cert.SerialNumber) != 0 {
		t.Fatalf("a broken file replaced the certificate")
	}
	if len(reloadErrs) == 0 || !errors.Is(reloadErrs[0], ErrPEM) {
		t.Fatalf("reload errors %v, want the broken file reported", reloadErrs)
	}
}

func TestServerProtocolsAndSuites(t *testing.T) {
	p := newPKI(t)
	srv, err := NewServer(Settings{KeystoreLocation: p.keystore, EnabledProtocols: "TLSv1.2",
		CipherSuites: "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_AES_128_GCM_SHA256"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cs, serr, cerr := handshake(t, srv, p.anonCfg)
	if serr != nil || cerr != nil {
		t.Fatal(serr, cerr)
	}
	if cs.Version != tls.VersionTLS12 || cs.CipherSuite != tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 {
		t.Fatalf("version %x suite %s", cs.Version, tls.CipherSuiteName(cs.CipherSuite))
	}
	only13 := p.anonCfg.Clone()
	only13.MinVersion = tls.VersionTLS13
	if _, serr, _ := handshake(t, srv, only13); serr == nil {
		t.Fatal("TLS 1.3 client accepted by a TLSv1.2 listener")
	}

	for _, bad := range []Settings{
		{EnabledProtocols: "SSLv3"},
		{Protocol: "TLSv1.2", EnabledProtocols: "TLSv1.3"},
		{CipherSuites: "TLS_NOT_A_SUITE"},
		{ClientAuth: "always"},
		{KeystoreType: "JKS"},
		{KeystorePassword: "x"},
	} {
		bad.KeystoreLocation = p.keystore
		if _, err := NewServer(bad, Options{}); !errors.Is(err, ErrConfig) {
			t.Errorf("%v: %v, want ErrConfig", bad, err)
		}
	}
	if _, err := NewServer(Settings{}, Options{}); !errors.Is(err, ErrConfig) {
		t.Errorf("no keystore: %v", err)
	}
}

// TestClientEndpointIdentification: https checks the host name; empty
// checks only the chain.
func TestClientEndpointIdentification(t *testing.T) {
	p := newPKI(t)
	srv, err := NewServer(Settings{KeystoreLocation: p.keystore}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	wrongName := p.anonCfg.Clone()
	wrongName.ServerName = "elsewhere.example"
	if _, _, cerr := handshake(t, srv, wrongName); cerr == nil {
		t.Fatal("host name not verified with https")
	}
	none := ""
	cfg, err := ClientConfig(Settings{TruststoreLocation: p.trust, EndpointIdentification: &none})
	if err != nil {
		t.Fatal(err)
	}
	cfg.ServerName = "elsewhere.example"
	if _, _, cerr := handshake(t, srv, cfg); cerr != nil {
		t.Fatalf("empty identification: %v", cerr)
	}
	untrusting, err := ClientConfig(Settings{TruststoreCertificates: string(tlstest.NewCA(t, "x").PEM), EndpointIdentification: &none})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, cerr := handshake(t, srv, untrusting); cerr == nil {
		t.Fatal("chain not verified with empty identification")
	}
}
