package tlsconf

// Settings: the ssl.* values of one listener (or one client), as
// config/tlssettings.go reads them from the properties, and their checks.

import (
	"fmt"
	"strings"
)

// Settings are the ssl.* values of one listener or client, as given
// (unparsed beyond splitting lists). The zero value is Kafka's defaults.
type Settings struct {
	KeystoreType             string // ssl.keystore.type; "" or PEM
	KeystoreLocation         string // ssl.keystore.location
	KeystoreCertificateChain string // ssl.keystore.certificate.chain (inline PEM)
	KeystoreKey              string // ssl.keystore.key (inline PEM)
	KeystorePassword         string // ssl.keystore.password: refused with PEM, as Kafka does
	KeyPassword              string // ssl.key.password
	TruststoreType           string // ssl.truststore.type; "" or PEM
	TruststoreLocation       string // ssl.truststore.location
	TruststoreCertificates   string // ssl.truststore.certificates (inline PEM)
	TruststorePassword       string // ssl.truststore.password: refused with PEM
	ClientAuth               string // ssl.client.auth; "" is none
	EnabledProtocols         string // ssl.enabled.protocols; "" is TLSv1.2,TLSv1.3
	Protocol                 string // ssl.protocol; "" is TLSv1.3
	CipherSuites             string // ssl.cipher.suites; "" is Go's default
	// EndpointIdentification is ssl.endpoint.identification.algorithm;
	// nil is Kafka's default, https.
	EndpointIdentification *string
	PrincipalMappingRules  string // ssl.principal.mapping.rules; "" is DEFAULT
}

// clientAuth values.
const (
	ClientAuthNone      = "none"
	ClientAuthRequested = "requested"
	ClientAuthRequired  = "required"
)

// clientAuth returns the normalized ssl.client.auth.
func (s Settings) clientAuth() (string, error) {
	switch v := strings.ToLower(strings.TrimSpace(s.ClientAuth)); v {
	case "", ClientAuthNone:
		return ClientAuthNone, nil
	case ClientAuthRequested, ClientAuthRequired:
		return v, nil
	}
	return "", fmt.Errorf("%w: ssl.client.auth=%q: want none, requested or required", ErrConfig, s.ClientAuth)
}

// checkTypes refuses store types other than PEM and the passwords Kafka
// refuses with PEM stores.
func (s Settings) checkTypes() error {
	for _, t := range []struct{ key, v string }{{"ssl.keystore.type", s.KeystoreType}, {"ssl.truststore.type", s.TruststoreType}} {
		if v := strings.TrimSpace(t.v); v != "" && !strings.EqualFold(v, "PEM") {
			return fmt.Errorf("%w: %s=%s: only PEM stores are supported", ErrConfig, t.key, v)
		}
	}
	if s.KeystorePassword != "" {
		return fmt.Errorf("%w: ssl.keystore.password cannot be specified with PEM format, only ssl.key.password", ErrConfig)
	}
	if s.TruststorePassword != "" {
		return fmt.Errorf("%w: ssl.truststore.password cannot be specified for PEM format", ErrConfig)
	}
	if s.KeystoreLocation != "" && (s.KeystoreKey != "" || s.KeystoreCertificateChain != "") {
		return fmt.Errorf("%w: ssl.keystore.location and ssl.keystore.key/certificate.chain are exclusive", ErrConfig)
	}
	if (s.KeystoreKey == "") != (s.KeystoreCertificateChain == "") {
		return fmt.Errorf("%w: ssl.keystore.key and ssl.keystore.certificate.chain go together", ErrConfig)
	}
	if s.TruststoreLocation != "" && s.TruststoreCertificates != "" {
		return fmt.Errorf("%w: ssl.truststore.location and ssl.truststore.certificates are exclusive", ErrConfig)
	}
	return nil
}

// HasKeystore tells whether a keystore is configured.
func (s Settings) HasKeystore() bool { return s.KeystoreLocation != "" || s.KeystoreKey != "" }
