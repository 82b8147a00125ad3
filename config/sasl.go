package config

// The SASL keys, Kafka's names, each also settable for one listener with
// the prefix listener.name.<listener>. (the listener's name in lower case,
// as Kafka writes it):
//
//	sasl.enabled.mechanisms                 mechanisms a SASL listener serves
//	<mechanism>.sasl.jaas.config            (prefixed only, as in Kafka) the JAAS entry of one mechanism
//	sasl.jaas.config                        the JAAS entry of every mechanism
//	connections.max.reauth.ms               KIP-368 session lifetime; 0: none
//	sasl.server.max.receive.size            the largest request before authentication
//	sasl.mechanism.inter.broker.protocol    (global only) the mechanism brokers use with each other
//
// Kafka's default for sasl.enabled.mechanisms is GSSAPI, which sluice does
// not serve (nor OAUTHBEARER: naming either is an error at start). sluice's
// default is SCRAM-SHA-512 and SCRAM-SHA-256, with PLAIN added when the
// listener has a PlainLoginModule JAAS entry (its users are the entry's
// user_<name>="<password>" options, as Kafka's PlainLoginModule reads
// them). sasl.mechanism.inter.broker.protocol defaults to SCRAM-SHA-512
// (Kafka's: GSSAPI); the broker's own user is the username and password
// options of the inter-broker listener's JAAS entry for that mechanism.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-io/sluice/security/jaas"
)

// SASLConfig is the sasl.* keys. Zero fields take the defaults.
type SASLConfig struct {
	// EnabledMechanisms is sasl.enabled.mechanisms. nil: SCRAM-SHA-512,
	// SCRAM-SHA-256, and PLAIN on a listener with a PlainLoginModule entry.
	EnabledMechanisms []string
	// InterBrokerMechanism is sasl.mechanism.inter.broker.protocol;
	// default SCRAM-SHA-512.
	InterBrokerMechanism string
	// JAASConfig is sasl.jaas.config, the JAAS entries of every listener
	// and mechanism without their own.
	JAASConfig string
	// ServerMaxReceiveSize is sasl.server.max.receive.size: a larger
	// request before authentication closes the connection. Default 524288.
	ServerMaxReceiveSize int32
	// ConnectionsMaxReauth is connections.max.reauth.ms: an authenticated
	// session lasts this long, then the client must re-authenticate on the
	// connection or lose it. Default 0: sessions do not expire.
	ConnectionsMaxReauth time.Duration
	// Listener holds the listener.name.<listener>. keys of this file, by
	// the listener's lower-case name and the key after the prefix.
	Listener map[string]map[string]string
}

// The served mechanisms.
const (
	MechPlain     = "PLAIN"
	mechSCRAM256  = "SCRAM-SHA-256"
	mechSCRAM512  = "SCRAM-SHA-512"
	defaultMaxRcv = 524288
)

var servedMechanisms = []string{MechPlain, mechSCRAM256, mechSCRAM512}

// applyListener sets a listener's own SASL key,
// listener.name.<l>.[<mechanism>.]<key>; ok is false for other keys.
func (s *SASLConfig) applyListener(k, v string) (ok bool, err error) {
	rest, found := strings.CutPrefix(k, "listener.name.")
	if !found {
		return false, nil
	}
	name, key, found := strings.Cut(rest, ".")
	if !found || name == "" || !isListenerSASLKey(key) {
		return false, nil
	}
	if err := checkSASLValue(k, key, v); err != nil {
		return true, err
	}
	if s.Listener == nil {
		s.Listener = map[string]map[string]string{}
	}
	name = strings.ToLower(name)
	if s.Listener[name] == nil {
		s.Listener[name] = map[string]string{}
	}
	s.Listener[name][key] = v
	return true, nil
}

// staticListeners adds the listeners' own SASL keys to m.
func (s SASLConfig) staticListeners(m map[string]string) {
	for l, keys := range s.Listener {
		for k, v := range keys {
			m["listener.name."+l+"."+k] = v
		}
	}
}

// isListenerSASLKey: the keys this file takes with a listener prefix.
func isListenerSASLKey(key string) bool {
	switch key {
	case "sasl.enabled.mechanisms", "sasl.jaas.config", "connections.max.reauth.ms", "sasl.server.max.receive.size":
		return true
	}
	mech, ok := strings.CutSuffix(key, ".sasl.jaas.config")
	return ok && mech != "" && !strings.Contains(mech, ".")
}

func checkSASLValue(full, key, v string) error {
	switch key {
	case "connections.max.reauth.ms", "sasl.server.max.receive.size":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || key == "sasl.server.max.receive.size" && (n == 0 || n > 1<<31-1) {
			return fmt.Errorf("broker: config %s=%q: not a valid number", full, v)
		}
	}
	return nil
}

func splitList(v string) []string {
	var out []string
	for f := range strings.SplitSeq(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// SASLListener is what a SASL listener serves, resolved at start.
type SASLListener struct {
	Name       string   // the listener's name, upper case
	Mechanisms []string // enabled, in config order
	PlainUsers map[string]string
	Reauth     time.Duration // 0: sessions do not expire
	MaxReceive int32
}

// listenerKey is a listener's own value of a key.
func (s SASLConfig) listenerKey(listener, key string) (string, bool) {
	v, ok := s.Listener[strings.ToLower(listener)][key]
	return v, ok
}

// jaasFor finds the JAAS entry of module for mechanism on listener:
// listener.name.<l>.<mech>.sasl.jaas.config, then
// listener.name.<l>.sasl.jaas.config, then sasl.jaas.config. The key it
// came from names it in errors; none is not an error (ok false).
func (s SASLConfig) jaasFor(listener, mechanism, module string) (e jaas.Entry, key string, ok bool, err error) {
	l := strings.ToLower(listener)
	candidates := []struct{ key, v string }{}
	if v, ok := s.listenerKey(listener, strings.ToLower(mechanism)+".sasl.jaas.config"); ok {
		candidates = append(candidates, struct{ key, v string }{"listener.name." + l + "." + strings.ToLower(mechanism) + ".sasl.jaas.config", v})
	}
	if v, ok := s.listenerKey(listener, "sasl.jaas.config"); ok {
		candidates = append(candidates, struct{ key, v string }{"listener.name." + l + ".sasl.jaas.config", v})
	}
	if s.JAASConfig != "" {
		candidates = append(candidates, struct{ key, v string }{"sasl.jaas.config", s.JAASConfig})
	}
	for _, c := range candidates {
		entries, err := jaas.Parse(c.v)
		if err != nil {
			return jaas.Entry{}, c.key, false, fmt.Errorf("broker: config %s: %w", c.key, err)
		}
		for _, e := range entries {
			if e.Module == module {
				return e, c.key, true, nil
			}
		}
	}
	return jaas.Entry{}, "", false, nil
}

// moduleFor is the JAAS login module of a mechanism.
func moduleFor(mechanism string) string {
	if mechanism == MechPlain {
		return jaas.PlainLoginModule
	}
	return jaas.ScramLoginModule
}

// Resolve works out what SASL listener name serves.
func (s SASLConfig) Resolve(name string) (*SASLListener, error) {
	sl := &SASLListener{Name: name, Reauth: s.ConnectionsMaxReauth, MaxReceive: s.ServerMaxReceiveSize}
	if sl.MaxReceive <= 0 {
		sl.MaxReceive = defaultMaxRcv
	}
	if v, ok := s.listenerKey(name, "sasl.server.max.receive.size"); ok {
		n, _ := strconv.ParseInt(v, 10, 32)
		sl.MaxReceive = int32(n)
	}
	if v, ok := s.listenerKey(name, "connections.max.reauth.ms"); ok {
		n, _ := strconv.ParseInt(v, 10, 64)
		sl.Reauth = time.Duration(n) * time.Millisecond
	}
	plainEntry, _, hasPlain, err := s.jaasFor(name, MechPlain, jaas.PlainLoginModule)
	if err != nil {
		return nil, err
	}
	mechs := s.EnabledMechanisms
	key := "sasl.enabled.mechanisms"
	if v, ok := s.listenerKey(name, "sasl.enabled.mechanisms"); ok {
		mechs, key = splitList(v), "listener.name."+strings.ToLower(name)+".sasl.enabled.mechanisms"
	}
	if mechs == nil {
		mechs = []string{mechSCRAM512, mechSCRAM256}
		if hasPlain {
			mechs = append(mechs, MechPlain)
		}
	}
	if len(mechs) == 0 {
		return nil, fmt.Errorf("broker: config %s: listener %s has no SASL mechanism", key, name)
	}
	for _, m := range mechs {
		switch {
		case m == "GSSAPI" || m == "OAUTHBEARER":
			return nil, fmt.Errorf("broker: config %s: sluice does not serve %s (it serves %s)", key, m, strings.Join(servedMechanisms, ", "))
		case !slices.Contains(servedMechanisms, m):
			return nil, fmt.Errorf("broker: config %s: unknown SASL mechanism %q (sluice serves %s)", key, m, strings.Join(servedMechanisms, ", "))
		}
		if !slices.Contains(sl.Mechanisms, m) {
			sl.Mechanisms = append(sl.Mechanisms, m)
		}
	}
	if slices.Contains(sl.Mechanisms, MechPlain) {
		if !hasPlain {
			return nil, fmt.Errorf("broker: listener %s enables PLAIN but has no %s entry (listener.name.%s.plain.sasl.jaas.config)", name, jaas.PlainLoginModule, strings.ToLower(name))
		}
		sl.PlainUsers = plainEntry.Users()
	}
	return sl, nil
}

// interBrokerMechanism is sasl.mechanism.inter.broker.protocol or its
// default.
func (s SASLConfig) interBrokerMechanism() string {
	if s.InterBrokerMechanism == "" {
		return mechSCRAM512
	}
	return s.InterBrokerMechanism
}

// InterBrokerIdentity finds the broker's own user for the inter-broker
// listener, whose resolved settings are sl: the mechanism must be enabled
// there and its JAAS entry must carry username and password.
func (s SASLConfig) InterBrokerIdentity(sl *SASLListener) (mechanism, user, password string, err error) {
	mechanism = s.interBrokerMechanism()
	if !slices.Contains(sl.Mechanisms, mechanism) {
		return "", "", "", fmt.Errorf("broker: config sasl.mechanism.inter.broker.protocol=%s is not among listener %s's sasl.enabled.mechanisms (%s)", mechanism, sl.Name, strings.Join(sl.Mechanisms, ","))
	}
	e, key, ok, err := s.jaasFor(sl.Name, mechanism, moduleFor(mechanism))
	if err != nil {
		return "", "", "", err
	}
	if !ok {
		return "", "", "", fmt.Errorf("broker: inter-broker listener %s: no %s JAAS entry for %s (listener.name.%s.%s.sasl.jaas.config)", sl.Name, moduleFor(mechanism), mechanism, strings.ToLower(sl.Name), strings.ToLower(mechanism))
	}
	user, password = e.Options["username"], e.Options["password"]
	if user == "" || password == "" {
		return "", "", "", fmt.Errorf("broker: config %s: the %s entry needs username and password (the broker's own inter-broker user)", key, e.Module)
	}
	return mechanism, user, password, nil
}
