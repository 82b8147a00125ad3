package tlsconf

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"testing"
	"unicode/utf16"

	"github.com/sluice-io/sluice/security/tlsconf/tlstest"
)

func atv(oid asn1.ObjectIdentifier, tag int, value []byte) pkix.AttributeTypeAndValue {
	return pkix.AttributeTypeAndValue{Type: oid, Value: asn1.RawValue{Class: asn1.ClassUniversal, Tag: tag, Bytes: value}}
}

var (
	oidCN     = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidC      = asn1.ObjectIdentifier{2, 5, 4, 6}
	oidO      = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidOU     = asn1.ObjectIdentifier{2, 5, 4, 11}
	oidSerial = asn1.ObjectIdentifier{2, 5, 4, 5}
	oidEmail  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
	oidDC     = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}
)

func bmp(s string) []byte {
	var out []byte
	for _, u := range utf16.Encode([]rune(s)) {
		out = append(out, byte(u>>8), byte(u))
	}
	return out
}

// TestDistinguishedNameJavaForm checks the text Java's
// X500Principal.getName() gives for the same names (the expected strings
// are the JDK's RFC 2253 output).
func TestDistinguishedNameJavaForm(t *testing.T) {
	const utf8, printable, ia5, t61, bmpTag = asn1.TagUTF8String, asn1.TagPrintableString, asn1.TagIA5String, asn1.TagT61String, asn1.TagBMPString
	cases := []struct {
		name string
		rdns pkix.RDNSequence
		want string
	}{
		{"reversed, multi-valued, escaped comma",
			pkix.RDNSequence{
				{atv(oidC, printable, []byte("US"))},
				{atv(oidO, utf8, []byte("Acme, Inc."))},
				{atv(oidOU, utf8, []byte("eng")), atv(oidOU, utf8, []byte("ops"))},
				{atv(oidCN, utf8, []byte("alice"))},
			},
			`CN=alice,OU=eng+OU=ops,O=Acme\, Inc.,C=US`},
		{"emailAddress and serialNumber as OID and DER hex",
			pkix.RDNSequence{
				{atv(oidSerial, printable, []byte("42"))},
				{atv(oidEmail, ia5, []byte("a@b"))},
				{atv(oidCN, utf8, []byte("bob"))},
			},
			`CN=bob,1.2.840.113549.1.9.1=#1603614062,2.5.4.5=#13023432`},
		{"escapes, leading and trailing spaces",
			pkix.RDNSequence{{atv(oidCN, utf8, []byte(` #x=y+z;<>"\ `))}},
			`CN=\ \#x\=y\+z\;\<\>\"\\\ `},
		{"NUL", pkix.RDNSequence{{atv(oidCN, utf8, []byte("a\x00b"))}}, `CN=a\00b`},
		{"BMPString and T61String decoded",
			pkix.RDNSequence{{atv(oidDC, ia5, []byte("org"))}, {atv(oidO, t61, []byte("Caf\xe9"))}, {atv(oidCN, bmpTag, bmp("Zoë"))}},
			`CN=Zoë,O=Café,DC=org`},
		{"non-string value of a named type as hex",
			pkix.RDNSequence{{atv(oidCN, asn1.TagOctetString, []byte{1, 2})}},
			`CN=#04020102`},
	}
	for _, c := range cases {
		der, err := asn1.Marshal(c.rdns)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DistinguishedName(der)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
	if _, err := DistinguishedName([]byte{0x30, 0x03, 0x31}); err == nil {
		t.Error("truncated name accepted")
	}
}

// TestSubjectNameOfIssuedCertificate reads a real certificate's subject,
// and OpenSSL's (testdata/cert.pem: -nameopt RFC2253 prints
// CN=fixture,O=Acme,C=US).
func TestSubjectNameOfIssuedCertificate(t *testing.T) {
	ca := tlstest.NewCA(t, "ca")
	leaf := ca.Issue(t, pkix.Name{CommonName: "client", Organization: []string{"Acme"}, OrganizationalUnit: []string{"Service Users"}, Country: []string{"US"}})
	if got, err := SubjectName(leaf.Cert); err != nil || got != "CN=client,OU=Service Users,O=Acme,C=US" {
		t.Fatalf("got %q, %v", got, err)
	}
	certs, err := parseCertificates(readTestdata(t, "cert.pem"), "cert.pem")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := SubjectName(certs[0]); err != nil || got != "CN=fixture,O=Acme,C=US" {
		t.Fatalf("got %q, %v", got, err)
	}
}
