package interbroker

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/security/tlsconf"
	"github.com/sluice-io/sluice/security/tlsconf/tlstest"
)

// TestClientDialHook: with Options.Dial set to a TLS dialer, requests
// reach a broker that serves TLS only; without it they do not.
func TestClientDialHook(t *testing.T) {
	ca := tlstest.NewCA(t, "ca")
	dir := t.TempDir()
	srv, err := tlsconf.NewServer(tlsconf.Settings{KeystoreLocation: tlstest.WriteFile(t, dir, "b.pem", ca.Server(t, "broker").Keystore)}, tlsconf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &fakeBroker{ln: tls.NewListener(tcp, srv.Config()), seen: make(chan seenRequest, 16)}
	go b.accept()
	t.Cleanup(b.stop)

	k := register(1, b)
	client, err := tlsconf.ClientConfig(tlsconf.Settings{TruststoreCertificates: string(ca.PEM)})
	if err != nil {
		t.Fatal(err)
	}
	s := New(0, k, Options{Dial: tlsconf.Dialer(client), RequestTimeout: 10 * time.Second})
	t.Cleanup(s.Close)
	resp, err := s.Send(context.Background(), 1, updateMetadata(8))
	if err != nil {
		t.Fatal(err)
	}
	if errorCode(t, resp) != kerr.StaleControllerEpoch.Code {
		t.Fatalf("response %+v", resp)
	}

	plain := New(0, k, Options{RequestTimeout: time.Second})
	t.Cleanup(plain.Close)
	if _, err := plain.Send(context.Background(), 1, updateMetadata(8)); err == nil {
		t.Fatal("a plaintext request answered by a TLS broker")
	}
}
