package broker

// The listeners at run time: bound, advertised, registered in ZooKeeper,
// and the endpoints Metadata, FindCoordinator and DescribeCluster answer
// with (a client is told the addresses of the listener it used). How they
// are configured is config/listeners.go.

import (
	"fmt"
	"net"

	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/coordinator/zk"
	"github.com/sluice-io/sluice/wire/interbroker"
)

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

// selfListener names a listener this broker advertises (the first).
func (b *Broker) selfListener() string {
	b.net.mu.RLock()
	defer b.net.mu.RUnlock()
	return b.net.mu.endpoints[0].Listener
}

// selfEndpoint is this broker's advertised address on the listener named
// name.
func (b *Broker) selfEndpoint(name string) (host string, port int32, ok bool) {
	b.net.mu.RLock()
	defer b.net.mu.RUnlock()
	for _, e := range b.net.mu.endpoints {
		if e.Listener == name {
			return e.Host, e.Port, true
		}
	}
	return "", -1, false
}

// refreshSelfLocked recomputes the advertised endpoints and this broker's
// identity for the controller (the inter-broker listener's endpoint, else
// the first advertised). b.net.mu is held.
func (b *Broker) refreshSelfLocked() error {
	eps, err := b.net.srv.Advertised(b.net.setup.Advertised, b.net.setup.Explicit) // broker/server/advertise.go
	if err != nil {
		return err
	}
	if len(eps) == 0 {
		return fmt.Errorf("broker: no listener is advertised")
	}
	b.net.mu.endpoints = eps
	self := eps[0]
	for _, e := range eps {
		if e.Listener == b.net.setup.InterName {
			self = e
		}
	}
	br := coordinator.Broker{ID: b.cfg.ID, Host: self.Host, Port: self.Port}
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
		out[i] = zk.Endpoint{Listener: e.Listener, SecurityProtocol: e.Protocol, Host: e.Host, Port: e.Port}
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
