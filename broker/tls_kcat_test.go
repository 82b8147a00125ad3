package broker

import (
	"crypto/x509/pkix"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/security/tlsconf/tlstest"
)

// TestKcatSSL: librdkafka (kcat) with -X security.protocol=SSL, the CA in
// ssl.ca.location and a client certificate, produces and consumes on the
// SSL listener; the principal is the certificate's mapped subject.
func TestKcatSSL(t *testing.T) {
	requireKcat(t)
	tb := startTLSBroker(t, nil)
	dir := t.TempDir()
	leaf := tb.ca.Issue(t, pkix.Name{CommonName: "Kcat", OrganizationalUnit: []string{"ServiceUsers"}})
	ssl := []string{"-b", tb.ssl,
		"-X", "security.protocol=SSL",
		"-X", "ssl.ca.location=" + tlstest.WriteFile(t, dir, "ca.pem", tb.ca.PEM),
		"-X", "ssl.certificate.location=" + tlstest.WriteFile(t, dir, "cert.pem", leaf.CertPEM),
		"-X", "ssl.key.location=" + tlstest.WriteFile(t, dir, "key.pem", leaf.KeyPEM),
	}
	tb.createTopic(t, "kcat-ssl", 1)
	kcat(t, "a\nb\nc\n", append(ssl, "-P", "-t", "kcat-ssl")...)
	out := kcat(t, "", append(ssl, "-C", "-t", "kcat-ssl", "-o", "beginning", "-c", "3", "-f", `%s\n`)...)
	if out != "a\nb\nc\n" {
		t.Fatalf("consumed %q", out)
	}
	tb.log.wait(t, "TLS client authenticated", "principal=User:kcat")
	if !strings.Contains(kcat(t, "", append(ssl, "-L")...), tb.ssl) {
		t.Fatal("metadata over SSL does not advertise the SSL listener")
	}
}
