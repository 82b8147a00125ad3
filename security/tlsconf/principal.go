package tlsconf

// A certificate subject as Java's X500Principal.getName() writes it (RFC
// 2253), the string ssl.principal.mapping.rules are applied to. Kafka's
// principals depend on this exact text, so it follows the JDK, not Go's
// pkix.Name.String():
//
//   - RDNs in reverse order of the certificate's sequence (most specific
//     first), joined by ","; the attributes of a multi-valued RDN joined by
//     "+" in their encoded order.
//   - Keywords only for CN, C, L, ST, O, OU, STREET, DC and UID; every other
//     attribute type (emailAddress, serialNumber, ...) as its dotted OID.
//   - A value of a string type (UTF8String, PrintableString, T61String,
//     IA5String, GeneralString, BMPString) as text with , = + < > # ; " \
//     escaped by a backslash, NUL as \00, and leading and trailing spaces
//     escaped; any other value, and every value of an OID-named type, as
//     "#" and the lower-case hex of its whole DER encoding.

import (
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf16"
)

// rfc2253Keywords are the attribute types Java's RFC 2253 form names.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

type attributeTypeAndValue struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// rdnSET is one RelativeDistinguishedName (encoding/asn1 reads a type named
// ...SET as a SET OF).
type rdnSET []attributeTypeAndValue

// SubjectName returns cert's subject in Java's RFC 2253 form.
func SubjectName(cert *x509.Certificate) (string, error) {
	return DistinguishedName(cert.RawSubject)
}

// DistinguishedName writes a DER Name in Java's RFC 2253 form.
func DistinguishedName(der []byte) (string, error) {
	var rdns []rdnSET
	if rest, err := asn1.Unmarshal(der, &rdns); err != nil {
		return "", fmt.Errorf("tlsconf: certificate subject: %v", err)
	} else if len(rest) > 0 {
		return "", fmt.Errorf("tlsconf: certificate subject: %d trailing bytes", len(rest))
	}
	var b strings.Builder
	for i := len(rdns) - 1; i >= 0; i-- {
		if i != len(rdns)-1 {
			b.WriteByte(',')
		}
		for j, atv := range rdns[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			writeAVA(&b, atv)
		}
	}
	return b.String(), nil
}

func writeAVA(b *strings.Builder, atv attributeTypeAndValue) {
	oid := atv.Type.String()
	kw, named := rfc2253Keywords[oid]
	if !named {
		kw = oid
	}
	b.WriteString(kw)
	b.WriteByte('=')
	s, isString := derString(atv.Value)
	if !named || !isString {
		b.WriteByte('#')
		b.WriteString(hex.EncodeToString(atv.Value.FullBytes))
		return
	}
	var esc strings.Builder
	for _, c := range s {
		switch {
		case strings.ContainsRune(`,=+<>#;"\`, c):
			esc.WriteByte('\\')
			esc.WriteRune(c)
		case c == 0:
			esc.WriteString(`\00`)
		default:
			esc.WriteRune(c)
		}
	}
	v := esc.String()
	lead := len(v) - len(strings.TrimLeft(v, " \r"))
	trail := len(strings.TrimRight(v, " \r"))
	if lead == len(v) {
		trail = len(v) // all blank: each escaped once, as Java's loop does
	}
	for i := 0; i < len(v); i++ {
		if i < lead || i >= trail {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
}

// derString decodes a value of one of the string types Java writes as text.
func derString(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal {
		return "", false
	}
	switch v.Tag {
	case asn1.TagUTF8String, asn1.TagPrintableString, asn1.TagIA5String, 27: // 27: GeneralString
		return string(v.Bytes), true
	case asn1.TagT61String: // Java reads it as ISO-8859-1
		r := make([]rune, len(v.Bytes))
		for i, c := range v.Bytes {
			r[i] = rune(c)
		}
		return string(r), true
	case asn1.TagBMPString:
		if len(v.Bytes)%2 != 0 {
			return "", false
		}
		u := make([]uint16, len(v.Bytes)/2)
		for i := range u {
			u[i] = uint16(v.Bytes[2*i])<<8 | uint16(v.Bytes[2*i+1])
		}
		return string(utf16.Decode(u)), true
	}
	return "", false
}
