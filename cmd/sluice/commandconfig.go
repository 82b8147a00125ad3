package main

// --command-config FILE: Kafka client properties (config/clientprops.go
// reads the keys) turned into franz-go options.

import (
	"crypto/tls"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/security/tlsconf"
)

// commandConfig is a parsed --command-config file.
type commandConfig struct {
	protocol string      // security.protocol, upper case
	tls      *tls.Config // nil unless SSL or SASL_SSL
	sasl     sasl.Mechanism
}

// loadCommandConfig reads the properties file at path.
func loadCommandConfig(path string) (*commandConfig, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--command-config: %w", err)
	}
	defer f.Close()
	props, err := config.ParseProperties(f)
	if err != nil {
		return nil, fmt.Errorf("--command-config %s: %w", path, err)
	}
	cc, err := parseCommandConfig(props)
	if err != nil {
		return nil, fmt.Errorf("--command-config %s: %w", path, err)
	}
	return cc, nil
}

// parseCommandConfig turns client properties into a commandConfig.
func parseCommandConfig(props map[string]string) (*commandConfig, error) {
	cp, err := config.ParseClientProperties(props)
	if err != nil {
		return nil, err
	}
	cc := &commandConfig{protocol: cp.Protocol}
	if cp.TLS != nil {
		cfg, err := tlsconf.ClientConfig(*cp.TLS)
		if err != nil {
			return nil, err
		}
		cc.tls = cfg
	}
	if cp.SASL {
		m, err := saslMechanism(cp)
		if err != nil {
			return nil, err
		}
		cc.sasl = m
	}
	return cc, nil
}

// saslMechanism builds the client side of sasl.mechanism with the
// credentials of sasl.jaas.config or sasl.username/sasl.password.
func saslMechanism(cp config.ClientProperties) (sasl.Mechanism, error) {
	mech := cp.Mechanism
	if mech == "" {
		return nil, fmt.Errorf("sasl.mechanism is not set (Kafka's default, GSSAPI, is not supported): set PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	}
	var user, pass string
	if cp.JAAS != "" {
		opts, err := parseJAAS(cp.JAAS)
		if err != nil {
			return nil, err
		}
		user, pass = opts["username"], opts["password"]
	}
	if cp.User != nil {
		user = *cp.User
	}
	if cp.Pass != nil {
		pass = *cp.Pass
	}
	if user == "" {
		return nil, fmt.Errorf("sasl.mechanism=%s needs a username: sasl.jaas.config with username=\"...\" password=\"...\", or sasl.username and sasl.password", mech)
	}
	switch mech {
	case "PLAIN":
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("sasl.mechanism=%s: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", mech)
}

// parseJAAS reads one JAAS login module entry, Kafka's sasl.jaas.config:
//
//	<class> <required|requisite|sufficient|optional> key="value" key2=value2 ;
//
// and returns its options. Quoted values may hold spaces and \" escapes.
func parseJAAS(s string) (map[string]string, error) {
	bad := func(why string) error { return fmt.Errorf("sasl.jaas.config: %s", why) }
	s = strings.TrimSpace(s)
	if !strings.HasSuffix(s, ";") {
		return nil, bad("must end with ';'")
	}
	s = strings.TrimSpace(strings.TrimSuffix(s, ";"))
	fields := strings.Fields(s)
	if len(fields) < 2 {
		return nil, bad("want a login module class and a control flag")
	}
	switch strings.ToLower(fields[1]) {
	case "required", "requisite", "sufficient", "optional":
	default:
		return nil, bad(fmt.Sprintf("control flag %q: want required, requisite, sufficient or optional", fields[1]))
	}
	// Skip the class and the flag, then read key=value pairs.
	rest := strings.TrimSpace(s[len(fields[0]):])
	rest = strings.TrimSpace(rest[len(fields[1]):])
	opts := map[string]string{}
	for rest != "" {
		eq := strings.IndexByte(rest, '=')
		if eq <= 0 {
			return nil, bad(fmt.Sprintf("option %q: want key=value", rest))
		}
		key := strings.TrimSpace(rest[:eq])
		rest = strings.TrimLeft(rest[eq+1:], " \t")
		var val string
		if strings.HasPrefix(rest, `"`) {
			var b strings.Builder
			i := 1
			for ; i < len(rest) && rest[i] != '"'; i++ {
				if rest[i] == '\\' && i+1 < len(rest) {
					i++
				}
				b.WriteByte(rest[i])
			}
			if i == len(rest) {
				return nil, bad(fmt.Sprintf("option %s: unterminated quote", key))
			}
			val, rest = b.String(), rest[i+1:]
		} else {
			end := strings.IndexAny(rest, " \t\n")
			if end < 0 {
				end = len(rest)
			}
			val, rest = rest[:end], rest[end:]
		}
		opts[key] = val
		rest = strings.TrimSpace(rest)
	}
	return opts, nil
}

// opts are the franz-go options of cc.
func (cc *commandConfig) opts() []kgo.Opt {
	var opts []kgo.Opt
	if cc.tls != nil {
		opts = append(opts, kgo.DialTLSConfig(cc.tls.Clone()))
	}
	if cc.sasl != nil {
		opts = append(opts, kgo.SASL(cc.sasl))
	}
	return opts
}
