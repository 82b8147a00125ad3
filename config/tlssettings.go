package config

// The ssl.* keys of one listener (or one client) read into
// tlsconf.Settings, listener.name.<l>.ssl.* overriding ssl.*.

import (
	"strings"

	"github.com/sluice-io/sluice/security/tlsconf"
)

// tlsField maps each ssl.* key (without "ssl.") to its field of s.
func tlsField(s *tlsconf.Settings, key string) *string {
	switch key {
	case "keystore.type":
		return &s.KeystoreType
	case "keystore.location":
		return &s.KeystoreLocation
	case "keystore.certificate.chain":
		return &s.KeystoreCertificateChain
	case "keystore.key":
		return &s.KeystoreKey
	case "keystore.password":
		return &s.KeystorePassword
	case "key.password":
		return &s.KeyPassword
	case "truststore.type":
		return &s.TruststoreType
	case "truststore.location":
		return &s.TruststoreLocation
	case "truststore.certificates":
		return &s.TruststoreCertificates
	case "truststore.password":
		return &s.TruststorePassword
	case "client.auth":
		return &s.ClientAuth
	case "enabled.protocols":
		return &s.EnabledProtocols
	case "protocol":
		return &s.Protocol
	case "cipher.suites":
		return &s.CipherSuites
	case "principal.mapping.rules":
		return &s.PrincipalMappingRules
	}
	return nil
}

// IsTLSKey tells whether k is a key TLSSettings reads: ssl.<known> or
// listener.name.<l>.ssl.<known>.
func IsTLSKey(k string) bool {
	if rest, ok := strings.CutPrefix(k, "listener.name."); ok {
		i := strings.Index(rest, ".ssl.")
		if i <= 0 {
			return false
		}
		k = rest[i+1:]
	}
	rest, ok := strings.CutPrefix(k, "ssl.")
	if !ok {
		return false
	}
	var s tlsconf.Settings
	return tlsField(&s, rest) != nil || rest == "endpoint.identification.algorithm"
}

// TLSSettings reads the ssl.* keys of props for listener (a listener
// name, any case; "" for a client's properties), the listener's
// listener.name.<listener lower case>.ssl.* keys winning over ssl.*.
// Keys of other listeners are ignored.
func TLSSettings(props map[string]string, listener string) tlsconf.Settings {
	var s tlsconf.Settings
	set := func(key, v string) {
		if key == "endpoint.identification.algorithm" {
			v := strings.TrimSpace(v)
			s.EndpointIdentification = &v
			return
		}
		if f := tlsField(&s, key); f != nil {
			*f = v
		}
	}
	for k, v := range props {
		if rest, ok := strings.CutPrefix(k, "ssl."); ok {
			set(rest, v)
		}
	}
	if listener == "" {
		return s
	}
	prefix := "listener.name." + strings.ToLower(listener) + ".ssl."
	for k, v := range props {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			set(rest, v)
		}
	}
	return s
}
