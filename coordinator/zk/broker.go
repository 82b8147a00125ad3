package zk

// The broker registration, /brokers/ids/<id>: its encoder and decoder
// (doc.go shows the payload).

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// ---- /brokers/ids/<id>

// BrokerVersion is the registration payload version Kafka 3.9 writes (2.7+:
// with features).
const BrokerVersion = 5

// NoJMXPort is jmx_port for a broker without JMX.
const NoJMXPort = -1

// Security protocols, as Kafka names them (SecurityProtocol).
const (
	Plaintext     = "PLAINTEXT"
	SSL           = "SSL"
	SASLPlaintext = "SASL_PLAINTEXT"
	SASLSSL       = "SASL_SSL"
)

// Endpoint is one advertised listener of a broker.
type Endpoint struct {
	// Listener is the listener's name, upper case (PLAINTEXT, INTERNAL...).
	Listener string
	// SecurityProtocol is one of Plaintext, SSL, SASLPlaintext, SASLSSL.
	SecurityProtocol string
	// Host is the advertised host name or address; "" when unset.
	Host string
	Port int32
}

// connection is Kafka's EndPoint.connectionString: LISTENER://host:port,
// an IPv6 address in brackets.
func (e Endpoint) connection() string {
	host := e.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return e.Listener + "://" + host + ":" + strconv.Itoa(int(e.Port))
}

// VersionRange is a supported feature's version range (KIP-584).
type VersionRange struct {
	Min, Max int16
}

// BrokerRegistration is the payload of the ephemeral /brokers/ids/<id>.
// The broker epoch (KIP-380) is not in it: it is the znode's creation zxid
// (czxid), new each time the broker registers.
type BrokerRegistration struct {
	// ID is the broker id, from the znode's name.
	ID int32
	// Endpoints are the advertised listeners, in configuration order,
	// with distinct listener names.
	Endpoints []Endpoint
	// Rack is broker.rack; nil when not set.
	Rack *string
	// JMXPort is NoJMXPort (-1) without JMX.
	JMXPort int32
	// Timestamp is when the broker registered, in Unix milliseconds.
	Timestamp int64
	// Features are the supported features (payload version 5). Kafka 3.9
	// brokers in ZooKeeper mode register none.
	Features map[string]VersionRange
	// Version is the payload version decoded; EncodeBroker ignores it and
	// writes BrokerVersion.
	Version int
}

// brokerJSON is version 5, in Kafka's field order.
type brokerJSON struct {
	Features          map[string]versionRangeJSON `json:"features"`
	ListenerProtocols listenerProtocols           `json:"listener_security_protocol_map"`
	Endpoints         []string                    `json:"endpoints"`
	Rack              *string                     `json:"rack,omitempty"`
	JMXPort           int32                       `json:"jmx_port"`
	Port              int32                       `json:"port"`
	Host              *string                     `json:"host"`
	Version           int                         `json:"version"`
	Timestamp         string                      `json:"timestamp"`
}

type versionRangeJSON struct {
	Min int16 `json:"min_version"`
	Max int16 `json:"max_version"`
}

// listenerProtocols writes listener → security protocol in endpoint order
// (Kafka's Scala map of up to four listeners keeps that order).
type listenerProtocols []Endpoint

// MarshalJSON implements json.Marshaler.
func (l listenerProtocols) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, e := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, e.Listener)
		b = append(b, ':')
		b = strconv.AppendQuote(b, e.SecurityProtocol)
	}
	return append(b, '}'), nil
}

// EncodeBroker returns /brokers/ids/<id>'s payload (version 5). The
// top-level host and port, for clients older than 0.10, are the first
// PLAINTEXT endpoint's, or null and -1 without one. The endpoints must be
// valid (distinct listener names, known protocols, ports in range): the
// error says which is not.
func EncodeBroker(b BrokerRegistration) ([]byte, error) {
	path := BrokerPath(b.ID)
	if err := checkEndpoints(path, b.Endpoints); err != nil {
		return nil, err
	}
	v := brokerJSON{
		Features:          make(map[string]versionRangeJSON, len(b.Features)),
		ListenerProtocols: b.Endpoints,
		Endpoints:         make([]string, len(b.Endpoints)),
		Rack:              b.Rack,
		JMXPort:           b.JMXPort,
		Port:              -1,
		Version:           BrokerVersion,
		Timestamp:         strconv.FormatInt(b.Timestamp, 10),
	}
	for name, r := range b.Features {
		v.Features[name] = versionRangeJSON(r)
	}
	for i, e := range b.Endpoints {
		v.Endpoints[i] = e.connection()
		if e.SecurityProtocol == Plaintext && v.Host == nil {
			host := e.Host
			v.Host, v.Port = &host, e.Port
		}
	}
	return marshal(v), nil
}

// DecodeBroker decodes broker id's registration, payload versions 1 (host
// and port only, PLAINTEXT) to 5 and later ones (Kafka reads future
// versions the same way). Without listener_security_protocol_map (versions
// 2 and 3) each listener is named after its protocol.
func DecodeBroker(id int32, data []byte) (BrokerRegistration, error) {
	path := BrokerPath(id)
	var v struct {
		Version           *int              `json:"version"`
		Host              *string           `json:"host"`
		Port              *int32            `json:"port"`
		JMXPort           *int32            `json:"jmx_port"`
		Timestamp         json.RawMessage   `json:"timestamp"`
		Endpoints         *[]string         `json:"endpoints"`
		ListenerProtocols map[string]string `json:"listener_security_protocol_map"`
		Rack              *string           `json:"rack"`
		Features          map[string]struct {
			Min *int16 `json:"min_version"`
			Max *int16 `json:"max_version"`
		} `json:"features"`
	}
	if err := unmarshal(path, data, &v); err != nil {
		return BrokerRegistration{}, err
	}
	switch {
	case v.Version == nil:
		return BrokerRegistration{}, bad(path, `"version" missing`)
	case *v.Version < 1:
		return BrokerRegistration{}, bad(path, "unsupported version %d", *v.Version)
	case v.JMXPort == nil:
		return BrokerRegistration{}, bad(path, `"jmx_port" missing`)
	}
	b := BrokerRegistration{ID: id, Version: *v.Version, JMXPort: *v.JMXPort, Rack: v.Rack}
	var err error
	if b.Timestamp, err = parseMillis(path, "timestamp", v.Timestamp); err != nil {
		return BrokerRegistration{}, err
	}
	if b.Version == 1 {
		if v.Host == nil || v.Port == nil {
			return BrokerRegistration{}, bad(path, `version 1 needs "host" and "port"`)
		}
		b.Endpoints = []Endpoint{{Listener: Plaintext, SecurityProtocol: Plaintext, Host: *v.Host, Port: *v.Port}}
	} else {
		if v.Endpoints == nil {
			return BrokerRegistration{}, bad(path, `"endpoints" missing`)
		}
		protocols := v.ListenerProtocols
		if protocols == nil {
			protocols = map[string]string{Plaintext: Plaintext, SSL: SSL, SASLPlaintext: SASLPlaintext, SASLSSL: SASLSSL}
		}
		for _, s := range *v.Endpoints {
			e, err := parseEndpoint(path, s, protocols)
			if err != nil {
				return BrokerRegistration{}, err
			}
			b.Endpoints = append(b.Endpoints, e)
		}
	}
	if err := checkEndpoints(path, b.Endpoints); err != nil {
		return BrokerRegistration{}, err
	}
	if len(v.Features) > 0 {
		b.Features = make(map[string]VersionRange, len(v.Features))
		for name, r := range v.Features {
			if r.Min == nil || r.Max == nil || *r.Min < 0 || *r.Max < *r.Min {
				return BrokerRegistration{}, bad(path, "feature %q: bad version range", name)
			}
			b.Features[name] = VersionRange{*r.Min, *r.Max}
		}
	}
	return b, nil
}

// parseEndpoint parses LISTENER://host:port as Kafka does (SocketServerConfigs
// listenerListToEndPoints): the listener name is upper-cased, an IPv6 host
// may be bracketed, and the listener's protocol comes from protocols.
func parseEndpoint(path, s string, protocols map[string]string) (Endpoint, error) {
	s = strings.TrimSpace(s)
	sep := strings.LastIndex(s, "://")
	colon := strings.LastIndexByte(s, ':')
	if sep < 0 || colon < sep+3 {
		return Endpoint{}, bad(path, "endpoint %q: not LISTENER://host:port", s)
	}
	e := Endpoint{Listener: strings.ToUpper(s[:sep])}
	host := s[sep+3 : colon]
	host = strings.TrimPrefix(host, "[")
	e.Host = strings.TrimSuffix(host, "]")
	port, err := strconv.ParseInt(s[colon+1:], 10, 32)
	if err != nil {
		return Endpoint{}, bad(path, "endpoint %q: bad port", s)
	}
	e.Port = int32(port)
	p, ok := protocols[e.Listener]
	if !ok {
		return Endpoint{}, bad(path, "endpoint %q: no security protocol for listener %s", s, e.Listener)
	}
	e.SecurityProtocol = strings.ToUpper(p)
	return e, nil
}

// checkEndpoints checks what every registration needs: at least one
// endpoint, listener names distinct and non-empty, hosts of the characters
// Kafka's endpoint parser takes (letters, digits, "-%._:"), protocols
// known, ports in [0, 65535].
func checkEndpoints(path string, es []Endpoint) error {
	if len(es) == 0 {
		return bad(path, "no endpoints")
	}
	for i, e := range es {
		switch {
		case e.Listener == "" || strings.ContainsAny(e.Listener, `:/,"`):
			return bad(path, "listener name %q", e.Listener)
		case strings.IndexFunc(e.Host, badHostRune) >= 0:
			return bad(path, "listener %s: host %q", e.Listener, e.Host)
		case e.SecurityProtocol != Plaintext && e.SecurityProtocol != SSL &&
			e.SecurityProtocol != SASLPlaintext && e.SecurityProtocol != SASLSSL:
			return bad(path, "listener %s: unknown security protocol %q", e.Listener, e.SecurityProtocol)
		case e.Port < 0 || e.Port > math.MaxUint16:
			return bad(path, "listener %s: port %d", e.Listener, e.Port)
		}
		for _, prev := range es[:i] {
			if prev.Listener == e.Listener {
				return bad(path, "listener %s listed twice", e.Listener)
			}
		}
	}
	return nil
}

func badHostRune(c rune) bool {
	return !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || strings.ContainsRune("-%._:", c))
}
