package config

// Listeners, as Kafka names them:
//
//	listeners=PLAINTEXT://:9092,SASL_SSL://:9093,INTERNAL://10.0.0.1:9094
//	advertised.listeners=PLAINTEXT://broker1:9092,SASL_SSL://broker1:9093,...
//	listener.security.protocol.map=INTERNAL:SASL_SSL,PLAINTEXT:PLAINTEXT,...
//	inter.broker.listener.name=INTERNAL   (or security.inter.broker.protocol)
//
// Each listener has a name (upper case), an address and, through the map,
// a security protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL. The
// broker accepts on every listener; a connection remembers the listener it
// came on, whose protocol decides what it must do before its requests are
// served (TLS, SASL), and whose name picks the endpoints Metadata,
// FindCoordinator and DescribeCluster answer with (a client is told the
// addresses of the listener it used, as Kafka does). The advertised
// listeners are registered in ZooKeeper; the inter-broker listener is the
// one brokers' own connections (replica fetchers, the controller's
// requests) use.
//
// Differences from Kafka: the inter-broker listener must exist only in
// ZooKeeper mode (a single node has no inter-broker traffic), and a
// listener with port 0 gets a free port, advertised as bound.

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
)

// ListenerConfig is one entry of listeners or advertised.listeners.
type ListenerConfig struct {
	Name string // upper case
	Addr string // host:port; an empty host is every interface
}

// Security protocols.
const (
	ProtoPlaintext     = "PLAINTEXT"
	ProtoSSL           = "SSL"
	ProtoSASLPlaintext = "SASL_PLAINTEXT"
	ProtoSASLSSL       = "SASL_SSL"
)

var securityProtocolNames = []string{ProtoPlaintext, ProtoSSL, ProtoSASLPlaintext, ProtoSASLSSL}

// defaultListenerProtocols is Kafka's default listener.security.protocol.map.
func defaultListenerProtocols() map[string]string {
	m := map[string]string{}
	for _, p := range securityProtocolNames {
		m[p] = p
	}
	return m
}

// parseListeners reads "NAME://host:port,NAME://host:port". Names must be
// distinct; a host may be empty, a name or an address ([v6] in brackets).
func parseListeners(key, v string) ([]ListenerConfig, error) {
	var out []ListenerConfig
	for entry := range strings.SplitSeq(v, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, addr, ok := strings.Cut(entry, "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("broker: config %s: %q is not NAME://host:port", key, entry)
		}
		if _, port, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("broker: config %s: %q: %v", key, entry, err)
		} else if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && port != "0") {
			return nil, fmt.Errorf("broker: config %s: %q: bad port", key, entry)
		}
		l := ListenerConfig{Name: strings.ToUpper(name), Addr: addr}
		if slices.ContainsFunc(out, func(o ListenerConfig) bool { return o.Name == l.Name }) {
			return nil, fmt.Errorf("broker: config %s: listener name %s is given twice", key, l.Name)
		}
		out = append(out, l)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("broker: config %s: no listener in %q", key, v)
	}
	return out, nil
}

// parseProtocolMap reads "NAME:PROTOCOL,NAME:PROTOCOL".
func parseProtocolMap(v string) (map[string]string, error) {
	m := map[string]string{}
	for entry := range strings.SplitSeq(v, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, proto, ok := strings.Cut(entry, ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || name == "" || !slices.Contains(securityProtocolNames, proto) {
			return nil, fmt.Errorf("broker: config listener.security.protocol.map: %q is not NAME:PROTOCOL with a protocol of %s", entry, strings.Join(securityProtocolNames, ", "))
		}
		m[name] = proto
	}
	return m, nil
}

// formatListeners is the key's value for a listener list.
func formatListeners(ls []ListenerConfig) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.Name + "://" + l.Addr
	}
	return strings.Join(parts, ",")
}

// ListenerSetup is the checked listener configuration: the listeners in
// order with their protocols, what each advertises, and the inter-broker
// listener's name.
type ListenerSetup struct {
	Listeners  []ListenerConfig
	Protocols  map[string]string
	Advertised map[string]string // by name: host:port (the port may be 0: bound at Serve)
	// Explicit: the advertised address was configured; others advertise
	// the address the listener is bound to.
	Explicit  map[string]bool
	InterName string
}

// ListenerSetup checks the listener keys together, as Kafka does at
// start: every listener has a protocol, advertised listeners are
// listeners, inter.broker.listener.name and security.inter.broker.protocol
// are not both set, and, in ZooKeeper mode, the inter-broker listener is
// advertised.
func (c Config) ListenerSetup() (ListenerSetup, error) {
	s := ListenerSetup{Listeners: c.Listeners, Protocols: c.ListenerProtocols, Advertised: map[string]string{}, Explicit: map[string]bool{}}
	if len(s.Listeners) == 0 {
		addr := c.Listen
		if addr == "" {
			addr = "localhost:9092"
		}
		s.Listeners = []ListenerConfig{{Name: ProtoPlaintext, Addr: addr}}
	}
	if s.Protocols == nil {
		s.Protocols = defaultListenerProtocols()
	}
	for _, l := range s.Listeners {
		if _, ok := s.Protocols[l.Name]; !ok {
			return s, fmt.Errorf("broker: listener %s has no security protocol: name it in listener.security.protocol.map", l.Name)
		}
		s.Advertised[l.Name] = l.Addr
	}
	switch {
	case len(c.AdvertisedListeners) > 0:
		for _, a := range c.AdvertisedListeners {
			if _, ok := s.Advertised[a.Name]; !ok {
				return s, fmt.Errorf("broker: advertised listener %s is not one of listeners (%s)", a.Name, formatListeners(s.Listeners))
			}
		}
		advertised := map[string]string{}
		for _, a := range c.AdvertisedListeners {
			advertised[a.Name] = a.Addr
			s.Explicit[a.Name] = true
		}
		s.Advertised = advertised
	case c.Advertise != "":
		// The one-address shorthand (--advertise) is the first listener's.
		s.Advertised[s.Listeners[0].Name] = c.Advertise
		s.Explicit[s.Listeners[0].Name] = true
	}
	switch {
	case c.InterBrokerListener != "" && c.InterBrokerProtocol != "":
		return s, fmt.Errorf("broker: only one of inter.broker.listener.name and security.inter.broker.protocol may be set")
	case c.InterBrokerListener != "":
		s.InterName = c.InterBrokerListener
	case c.InterBrokerProtocol != "":
		s.InterName = c.InterBrokerProtocol
	default:
		s.InterName = ProtoPlaintext
		if len(s.Listeners) == 1 && c.Cluster.Enabled() {
			// One listener of any name: brokers talk over it.
			s.InterName = s.Listeners[0].Name
		}
	}
	if _, ok := s.Advertised[s.InterName]; !ok && c.Cluster.Enabled() {
		return s, fmt.Errorf("broker: the inter-broker listener %s is not an advertised listener", s.InterName)
	}
	return s, nil
}

// listenerField is the field of the five listener keys.
var listenerField = custom(func(c *Config, k string, v configValue) error {
	var err error
	switch k {
	case "listeners":
		c.Listeners, err = parseListeners(k, v.s)
	case "advertised.listeners":
		c.AdvertisedListeners, err = parseListeners(k, v.s)
	case "listener.security.protocol.map":
		c.ListenerProtocols, err = parseProtocolMap(v.s)
	case "inter.broker.listener.name":
		c.InterBrokerListener = strings.ToUpper(v.s)
	case "security.inter.broker.protocol":
		p := strings.ToUpper(v.s)
		if !slices.Contains(securityProtocolNames, p) {
			return fmt.Errorf("one of %s", strings.Join(securityProtocolNames, ", "))
		}
		c.InterBrokerProtocol = p
	}
	return err
}, nil)

// staticListeners adds the listener keys the configuration sets to m, in
// Kafka's form.
func (c Config) staticListeners(m map[string]string) {
	switch {
	case len(c.Listeners) > 0:
		m["listeners"] = formatListeners(c.Listeners)
	case c.Listen != "":
		m["listeners"] = ProtoPlaintext + "://" + c.Listen
	}
	switch {
	case len(c.AdvertisedListeners) > 0:
		m["advertised.listeners"] = formatListeners(c.AdvertisedListeners)
	case c.Advertise != "":
		first := ProtoPlaintext
		if len(c.Listeners) > 0 {
			first = c.Listeners[0].Name
		}
		m["advertised.listeners"] = first + "://" + c.Advertise
	}
	if c.ListenerProtocols != nil {
		var entries []string
		for _, name := range slices.Sorted(maps.Keys(c.ListenerProtocols)) {
			entries = append(entries, name+":"+c.ListenerProtocols[name])
		}
		m["listener.security.protocol.map"] = strings.Join(entries, ",")
	}
	if c.InterBrokerListener != "" {
		m["inter.broker.listener.name"] = c.InterBrokerListener
	}
	if c.InterBrokerProtocol != "" {
		m["security.inter.broker.protocol"] = c.InterBrokerProtocol
	}
}
