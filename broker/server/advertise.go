package server

// The advertised listeners resolved against the bound ones: what the
// broker registers and tells clients (a client is told the addresses of
// the listener it came on).

import (
	"fmt"
	"net"
	"strconv"
)

// Endpoint is one advertised listener's address.
type Endpoint struct {
	Listener, Protocol string
	Host               string
	Port               int32
}

// Advertised resolves the advertised listeners (advertised: by listener
// name, host:port; explicit: given by advertised.listeners rather than
// taken from listeners) against the bound ones: a listener not advertised
// explicitly advertises its configured host with its bound port; a host of
// "", 0.0.0.0 or :: is localhost, port 0 the bound port. The caller
// serializes it with Bind.
func (s *Server) Advertised(advertised map[string]string, explicit map[string]bool) ([]Endpoint, error) {
	var out []Endpoint
	for _, l := range s.listeners {
		bound := l.Bound()
		addr, ok := advertised[l.Name]
		if !ok {
			continue
		}
		if !explicit[l.Name] && bound != nil {
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
		out = append(out, Endpoint{Listener: l.Name, Protocol: l.Protocol, Host: host, Port: int32(p)})
	}
	return out, nil
}
