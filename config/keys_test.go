package config

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every synonym of a topic key is a broker key sluice knows, and every
// dynamic broker key feeding a topic key is that key's first synonym
// (DynamicLogConfig.ReconfigurableConfigs).
func TestConfigCatalogue(t *testing.T) {
	first := map[string]string{}
	for _, k := range TopicKeys {
		for i, s := range k.Synonyms {
			bk := BrokerKeyByName[s.Name]
			if bk == nil {
				t.Errorf("%s: synonym %s is not a broker key", k.Name, s.Name)
				continue
			}
			if bk.Topic != k.Name {
				t.Errorf("%s: synonym %s feeds %q", k.Name, s.Name, bk.Topic)
			}
			if i == 0 && k.Name != "message.format.version" {
				first[s.Name] = k.Name
			}
		}
		if k.Default == nil {
			t.Errorf("%s has no default", k.Name)
		} else if _, err := k.Parse(*k.Default); err != nil && k.Name != "remote.storage.enable" {
			t.Errorf("%s: its default does not validate: %v", k.Name, err)
		}
	}
	for _, k := range BrokerKeys {
		if k.Dynamic && k.Topic != "" && first[k.Name] != k.Topic {
			t.Errorf("dynamic %s is not the first synonym of %s", k.Name, k.Topic)
		}
		if k.Default != nil {
			if _, err := k.Parse(*k.Default); err != nil {
				t.Errorf("%s: its default does not validate: %v", k.Name, err)
			}
		}
		// Kafka documents what it defines; an undefined key has no type,
		// default or documentation, and sluice cannot change it.
		if k.Undefined != (k.Doc == "") {
			t.Errorf("%s: undefined %v, documentation %q", k.Name, k.Undefined, k.Doc)
		}
		if k.Undefined && (k.Default != nil || k.Type != kmsg.ConfigTypeUnknown || k.Dynamic) {
			t.Errorf("undefined %s has a default, a type or is dynamic", k.Name)
		}
	}
	for name := range first {
		if k := BrokerKeyByName[name]; k == nil || !k.Dynamic {
			t.Errorf("%s is a first synonym but not dynamic", name)
		}
	}
}

// Kafka's listener-prefix synonyms and sensitivity.
func TestListenerBase(t *testing.T) {
	for _, c := range []struct{ name, base string }{
		{"listener.name.ssl.ssl.client.auth", "ssl.client.auth"},
		{"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config", "sasl.jaas.config"},
		{"listener.name.sasl_ssl.sasl.jaas.config", "sasl.jaas.config"},
		{"listener.name.sasl_ssl.plain.connections.max.reauth.ms", "connections.max.reauth.ms"},
		{"listener.name.x.sasl.enabled.mechanisms", "sasl.enabled.mechanisms"},
		{"listener.security.protocol.map", ""},
		{"listener.name.ssl", ""},
		{"ssl.client.auth", ""},
	} {
		if got := ListenerBase(c.name); got != c.base {
			t.Errorf("ListenerBase(%s) = %q, want %q", c.name, got, c.base)
		}
	}
	for name, want := range map[string]bool{
		"ssl.key.password": true, "listener.name.ssl.ssl.key.password": true, "listener.name.x.plain.sasl.jaas.config": true,
		"super.users": true, "no.such.key": true,
		"ssl.client.auth": false, "listener.name.ssl.ssl.client.auth": false, "log.retention.ms": false,
	} {
		if got := SensitiveBrokerKey(name); got != want {
			t.Errorf("SensitiveBrokerKey(%s) = %v, want %v", name, got, want)
		}
	}
}
