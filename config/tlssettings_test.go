package config

import "testing"

// TestTLSSettings: a listener's listener.name.<l>.ssl.* keys win over
// ssl.*, other listeners' are ignored, a client reads ssl.* only; IsTLSKey
// knows both forms.
func TestTLSSettings(t *testing.T) {
	props := map[string]string{
		"ssl.keystore.location":                        "/k.pem",
		"ssl.enabled.protocols":                        "TLSv1.3",
		"listener.name.internal.ssl.enabled.protocols": "TLSv1.2",
		"listener.name.other.ssl.cipher.suites":        "TLS_AES_128_GCM_SHA256",
		"ssl.endpoint.identification.algorithm":        " ",
	}
	s := TLSSettings(props, "INTERNAL")
	if s.KeystoreLocation != "/k.pem" || s.EnabledProtocols != "TLSv1.2" || s.CipherSuites != "" || s.EndpointIdentification == nil || *s.EndpointIdentification != "" {
		t.Fatalf("listener INTERNAL: %+v", s)
	}
	if c := TLSSettings(props, ""); c.EnabledProtocols != "TLSv1.3" {
		t.Fatalf("client: %+v", c)
	}
	for k, want := range map[string]bool{"ssl.keystore.location": true, "listener.name.x.ssl.client.auth": true, "ssl.nope": false, "listener.name..ssl.protocol": false, "sasl.mechanism": false} {
		if IsTLSKey(k) != want {
			t.Errorf("IsTLSKey(%q) = %v", k, !want)
		}
	}
}
