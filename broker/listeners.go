package broker

// The listeners at run time: bound, advertised, registered in ZooKeeper,
// and the endpoints Metadata, FindCoordinator and DescribeCluster answer
// with (a client is told the addresses of the listener it used). How they
// are configured is config/listeners.go.

import (
	"fmt"
	"net"
	"strconv"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/coordinator/zk"
	"github.com/sluice-io/sluice/wire/interbroker"
)

// advertisedEndpoint is one advertised listener's address.
type advertisedEndpoint struct {
	listener, protocol string
	host               string
	port               int32
}

// Listening is closed once Serve has bound every listener.
func (b *Broker) Listening() <-chan struct{} { return b.net.listening }

// ListenerAddr is the bound address of the listener named name, once
// serving.
func (b *Broker) ListenerAddr(name string) net.Addr {
	b.net.mu.RLock()
	defer b.net.mu.RUnlock()
	if l := b.net.srv.Listener(name); l != nil {
		return l.Bound()
	}
	return nil
}

// advertisedEndpoints resolves the advertised listeners against the bound
// ones: a listener not advertised explicitly advertises its configured
// host with its bound port; a host of "", 0.0.0.0 or :: is localhost, port
// 0 the bound port. b.net.mu is held.
func (b *Broker) advertisedEndpointsLocked() ([]advertisedEndpoint, error) {
	var out []advertisedEndpoint
	for _, l := range b.net.srv.Listeners() {
		bound := l.Bound()
		addr, ok := b.net.setup.Advertised[l.Name]
		if !ok {
			continue
		}
		if !b.net.setup.Explicit[l.Name] && bound != nil {
			// The configured host (a certificate names it, not the
			// address it resolved to), the bound port.
			host, _, _ := net.SplitHostPort(addr)
			_, port, _ := net.SplitHostPort(bound.String())
			addr = net.JoinHostPort(host, port)
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("broker: advertised listener %s %q: %w", l.Name, addr, err)
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "localhost"
		}
		p, _ := strconv.Atoi(port)
		if p == 0 && bound != nil {
			if ta, ok := bound.(*net.TCPAddr); ok {
				p = ta.Port
			}
		}
		out = append(out, advertisedEndpoint{listener: l.Name, protocol: l.Protocol, host: host, port: int32(p)})
	}
	return out, nil
}

// selfListener names a listener this broker advertises (the first).
func (b *Broker) selfListener() string {
	b.net.mu.RLock()
	defer b.net.mu.RUnlock()
	return b.net.mu.endpoints[0].listener
}

// selfEndpoint is this broker's advertised address on the listener named
// name.
func (b *Broker) selfEndpoint(name string) (host string, port int32, ok bool) {
	b.net.mu.RLock()
	defer b.net.mu.RUnlock()
	for _, e := range b.net.mu.endpoints {
		if e.listener == name {
			return e.host, e.port, true
		}
	}
	return "", -1, false
}

// refreshSelfLocked recomputes the advertised endpoints and this broker's
// identity for the controller (the inter-broker listener's endpoint, else
// the first advertised). b.net.mu is held.
func (b *Broker) refreshSelfLocked() error {
	eps, err := b.advertisedEndpointsLocked()
	if err != nil {
		return err
	}
	if len(eps) == 0 {
		return fmt.Errorf("broker: no listener is advertised")
	}
	b.net.mu.endpoints = eps
	self := eps[0]
	for _, e := range eps {
		if e.listener == b.net.setup.InterName {
			self = e
		}
	}
	br := coordinator.Broker{ID: b.cfg.ID, Host: self.host, Port: self.port}
	if r := b.cfg.Cluster.Rack; r != "" {
		br.Rack = &r
	}
	b.net.mu.advertis = br
	return nil
}

// registeredEndpoints are the advertised listeners as the ZooKeeper
// registration lists them.
func (b *Broker) registeredEndpoints() []zk.Endpoint {
	b.net.mu.RLock()
	defer b.net.mu.RUnlock()
	out := make([]zk.Endpoint, len(b.net.mu.endpoints))
	for i, e := range b.net.mu.endpoints {
		out[i] = zk.Endpoint{Listener: e.listener, SecurityProtocol: e.protocol, Host: e.host, Port: e.port}
	}
	return out
}

// setupInterTLS gives the broker's own connections their TLS client
// configuration when the inter-broker listener is SSL or SASL_SSL.
func (b *Broker) setupInterTLS() error {
	if p := b.net.setup.Protocols[b.net.setup.InterName]; p == config.ProtoSSL || p == config.ProtoSASLSSL {
		cfg, err := b.cfg.TLS.Client(b.net.setup.InterName, b.log)
		if err != nil {
			return err
		}
		b.net.interTLS = cfg
	}
	return nil
}

// openInterBroker opens a client of the other brokers through the
// broker's one transport (Config.Transport), with the options o completed
// for the inter-broker listener: its endpoint, its TLS dial and its SASL
// handshake. book gives the brokers' addresses (the cluster's ZooKeeper
// client).
func (b *Broker) openInterBroker(book interbroker.AddressBook, o interbroker.Options) interbroker.Sender {
	o.Listener = b.net.setup.InterName
	if b.sec.saslClient != nil {
		o.Handshake = b.sec.saslClient.handshake // saslclient.go
	}
	if b.net.interTLS != nil {
		o.Dial = b.net.interTLS.Dial // reloading its files (tlsconf.Client)
	}
	return b.cfg.Transport.Open(b.cfg.ID, book, o)
}
