package tlsconf

import (
	"crypto/x509/pkix"
	"errors"
	"testing"
	"time"

	"github.com/sluice-io/sluice/security/tlsconf/tlstest"
)

// A Client presents its keystore file's current certificate: a rotated
// file is picked up at the next Config once the interval passed, a broken
// one is reported and leaves the previous certificate; with a negative
// interval the files are read once.
func TestClientReloadsChangedFiles(t *testing.T) {
	p := newPKI(t)
	ks := tlstest.WriteFile(t, t.TempDir(), "broker-client.pem", p.ca.Issue(t, pkix.Name{CommonName: "broker-1"}).Keystore)
	var reloadErrs []error
	cl, err := NewClient(Settings{KeystoreLocation: ks, TruststoreLocation: p.trust},
		Options{ReloadInterval: time.Nanosecond, OnReloadError: func(err error) { reloadErrs = append(reloadErrs, err) }})
	if err != nil {
		t.Fatal(err)
	}
	name := func(c *Client) string {
		cert := c.Config().Certificates[0]
		if cert.Leaf == nil {
			t.Fatal("no parsed leaf")
		}
		return cert.Leaf.Subject.CommonName
	}
	if got := name(cl); got != "broker-1" {
		t.Fatalf("first certificate %q", got)
	}
	rotated := p.ca.Issue(t, pkix.Name{CommonName: "broker-1-rotated"}).Keystore
	tlstest.Replace(t, ks, rotated)
	if got := name(cl); got != "broker-1-rotated" {
		t.Fatalf("after the rotation %q", got)
	}
	tlstest.Replace(t, ks, rotated[:len(rotated)/2])
	if got := name(cl); got != "broker-1-rotated" {
		t.Fatalf("a broken file replaced the certificate: %q", got)
	}
	if len(reloadErrs) == 0 || !errors.Is(reloadErrs[0], ErrPEM) {
		t.Fatalf("reload errors %v, want the broken file reported", reloadErrs)
	}

	tlstest.Replace(t, ks, p.ca.Issue(t, pkix.Name{CommonName: "fixed"}).Keystore)
	once, err := NewClient(Settings{KeystoreLocation: ks, TruststoreLocation: p.trust}, Options{ReloadInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	tlstest.Replace(t, ks, rotated)
	if got := name(once); got != "fixed" {
		t.Fatalf("a client with reloads off read the file again: %q", got)
	}
}
