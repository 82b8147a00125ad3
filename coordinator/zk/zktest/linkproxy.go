package zktest

import (
	"io"
	"net"
	"sync"
)

// LinkProxy is a TCP proxy between clients and ZooKeeper whose link a test
// can cut (every connection closed, new ones refused) and restore: a
// session behind it expires when it stays cut past its timeout, as after a
// network partition, while the process keeps running.
type LinkProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
}

// StartLinkProxy proxies a loopback port to target (ZooKeeper's address).
func StartLinkProxy(target string) (*LinkProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &LinkProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.accept()
	return p, nil
}

// Addr is the address clients connect to instead of ZooKeeper's.
func (p *LinkProxy) Addr() string { return p.ln.Addr().String() }

func (p *LinkProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[s] = struct{}{}, struct{}{}
		p.mu.Unlock()
		go func() { io.Copy(s, c); s.Close() }()
		go func() { io.Copy(c, s); c.Close() }()
	}
}

// SetCut cuts the link (closing every connection through it) or restores
// it.
func (p *LinkProxy) SetCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
}

// Close stops the proxy and closes its connections.
func (p *LinkProxy) Close() {
	p.ln.Close()
	p.SetCut(true)
}
