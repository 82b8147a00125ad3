package tlsconf

// PEM stores: the keystore (one private key and its certificate chain) and
// the truststore (CA certificates), from a file or inline text.
//
// Blocks are found as Kafka's PemParser finds them: "-----BEGIN <label>-----",
// base64 with any whitespace, "-----END <label>-----", anything between
// blocks ignored, so an inline value whose line breaks became spaces still
// reads. Header lines ("Proc-Type: 4,ENCRYPTED", OpenSSL's legacy key
// encryption) are refused: that format is not PKCS#8.

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"strings"
)

// pemBlock is one block: its label with whitespace runs made one space,
// and its decoded bytes.
type pemBlock struct {
	label   string
	headers bool
	der     []byte
}

// pemBlocks returns the blocks of text in order; where names the text in
// errors.
func pemBlocks(text, where string) ([]pemBlock, error) {
	var out []pemBlock
	for {
		i := strings.Index(text, "-----BEGIN")
		if i < 0 {
			return out, nil
		}
		text = text[i+len("-----BEGIN"):]
		j := strings.Index(text, "-----")
		if j < 0 {
			return nil, fmt.Errorf("%w: %s: unterminated BEGIN line", ErrPEM, where)
		}
		label := strings.Join(strings.Fields(text[:j]), " ")
		text = text[j:]
		text = strings.TrimLeft(text, "-")
		end := strings.Index(text, "-----END")
		if end < 0 {
			return nil, fmt.Errorf("%w: %s: %s block without END line", ErrPEM, where, label)
		}
		body := text[:end]
		text = text[end+len("-----END"):]
		if k := strings.Index(text, "-----"); k >= 0 {
			text = strings.TrimLeft(text[k:], "-")
		}
		b := pemBlock{label: label}
		if strings.Contains(body, ":") {
			b.headers = true
		} else {
			der, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(body), ""))
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %s block: %v", ErrPEM, where, label, err)
			}
			b.der = der
		}
		out = append(out, b)
	}
}

// parseCertificates returns the CERTIFICATE blocks of text, at least one.
func parseCertificates(text, where string) ([]*x509.Certificate, error) {
	blocks, err := pemBlocks(text, where)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	for _, b := range blocks {
		if b.label != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.der)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: certificate %d: %v", ErrPEM, where, len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("%w: %s: at least one certificate expected, but none found", ErrPEM, where)
	}
	return certs, nil
}

// parsePrivateKey returns the one private key block of text, decrypted
// with password when it is an ENCRYPTED PRIVATE KEY.
func parsePrivateKey(text, password, where string) (crypto.PrivateKey, error) {
	blocks, err := pemBlocks(text, where)
	if err != nil {
		return nil, err
	}
	var keys []pemBlock
	for _, b := range blocks {
		if strings.HasSuffix(b.label, "PRIVATE KEY") {
			keys = append(keys, b)
		}
	}
	switch len(keys) {
	case 0:
		return nil, fmt.Errorf("%w: %s: private key not provided", ErrPEM, where)
	case 1:
	default:
		return nil, fmt.Errorf("%w: %s: expected one private key, but found %d", ErrPEM, where, len(keys))
	}
	b := keys[0]
	if b.headers {
		return nil, fmt.Errorf("%w: %s: %s with PEM headers (OpenSSL's legacy encryption) is not supported: convert it with `openssl pkcs8 -topk8`", ErrPEM, where, b.label)
	}
	der := b.der
	switch b.label {
	case "ENCRYPTED PRIVATE KEY":
		if password == "" {
			return nil, fmt.Errorf("%w: %s: the key is encrypted and ssl.key.password is not set", ErrConfig, where)
		}
		if der, err = decryptPKCS8(der, []byte(password)); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		key, err := x509.ParsePKCS8PrivateKey(der)
		if err != nil {
			return nil, fmt.Errorf("%w: %s", ErrKeyPassword, where)
		}
		return key, nil
	case "PRIVATE KEY":
		key, err := x509.ParsePKCS8PrivateKey(der)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: PKCS#8 key: %v", ErrPEM, where, err)
		}
		return key, nil
	case "RSA PRIVATE KEY":
		key, err := x509.ParsePKCS1PrivateKey(der)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: PKCS#1 key: %v", ErrPEM, where, err)
		}
		return key, nil
	case "EC PRIVATE KEY":
		key, err := x509.ParseECPrivateKey(der)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: EC key: %v", ErrPEM, where, err)
		}
		return key, nil
	}
	return nil, fmt.Errorf("%w: %s: unsupported key block %q", ErrPEM, where, b.label)
}

// keyPair builds the certificate from the chain and key texts, checking
// that the key belongs to the leaf.
func keyPair(chainText, keyText, password, where string) (tls.Certificate, error) {
	certs, err := parseCertificates(chainText, where)
	if err != nil {
		return tls.Certificate{}, err
	}
	key, err := parsePrivateKey(keyText, password, where)
	if err != nil {
		return tls.Certificate{}, err
	}
	pub, ok := key.(interface{ Public() crypto.PublicKey })
	if !ok {
		return tls.Certificate{}, fmt.Errorf("%w: %s: unsupported key type %T", ErrPEM, where, key)
	}
	leafPub, ok := certs[0].PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !leafPub.Equal(pub.Public()) {
		return tls.Certificate{}, fmt.Errorf("%w: %s: the private key does not match the first certificate", ErrPEM, where)
	}
	c := tls.Certificate{PrivateKey: key, Leaf: certs[0]}
	for _, x := range certs {
		c.Certificate = append(c.Certificate, x.Raw)
	}
	return c, nil
}
