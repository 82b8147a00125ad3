package tlsconf

// Client: the TLS client side of a broker's own connections to other
// brokers, its keystore and truststore files reread as a Server's are: at
// a dial, at most every Options.ReloadInterval, swapped in when their
// bytes changed and they load (a failed load keeps the previous ones and
// is reported to Options.OnReloadError). No goroutine, no timer.

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"sync"
	"time"
)

// Client is a reloading client configuration; its methods may be called
// from any goroutine.
type Client struct {
	settings Settings
	o        Options

	mu   sync.Mutex
	ks   []byte // the files' bytes the configuration was built from
	ts   []byte
	cfg  *tls.Config
	next time.Time // the next dial after this rereads the files
}

// NewClient loads s's stores for a client (ClientConfig's rules).
func NewClient(s Settings, o Options) (*Client, error) {
	if o.ReloadInterval == 0 {
		o.ReloadInterval = 10 * time.Second
	}
	ks, ts, err := s.readFiles()
	if err != nil {
		return nil, err
	}
	cfg, err := ClientConfig(s)
	if err != nil {
		return nil, err
	}
	return &Client{settings: s, o: o, ks: ks, ts: ts, cfg: cfg, next: time.Now().Add(o.ReloadInterval)}, nil
}

// Config returns the current configuration, rereading the files first
// when due.
func (c *Client) Config() *tls.Config {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.o.ReloadInterval < 0 || (c.settings.KeystoreLocation == "" && c.settings.TruststoreLocation == "") {
		return c.cfg
	}
	if now := time.Now(); now.After(c.next) {
		c.next = now.Add(c.o.ReloadInterval)
		if err := c.reloadLocked(); err != nil && c.o.OnReloadError != nil {
			c.o.OnReloadError(err)
		}
	}
	return c.cfg
}

func (c *Client) reloadLocked() error {
	ks, ts, err := c.settings.readFiles()
	if err != nil {
		return err
	}
	if bytes.Equal(ks, c.ks) && bytes.Equal(ts, c.ts) {
		return nil
	}
	cfg, err := ClientConfig(c.settings)
	if err != nil {
		return err
	}
	c.ks, c.ts, c.cfg = ks, ts, cfg
	return nil
}

// Dial connects to addr over TCP and completes a TLS handshake with the
// current configuration within ctx (Dialer's rules).
func (c *Client) Dial(ctx context.Context, addr string) (net.Conn, error) {
	return Dialer(c.Config())(ctx, addr)
}
