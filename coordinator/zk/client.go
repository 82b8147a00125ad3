package zk

// The connection to ZooKeeper: Kafka's zookeeper.connect string (servers
// and an optional chroot), the session, and its events.
//
// Session events come through go-zookeeper's event callback, which it calls
// for every event in order, never dropping one (its event channel drops
// events when full, so it is not read). The callback only records the state
// and wakes waiters: it runs on the client's own goroutine and must not
// block. A session that expires takes its ephemeral znodes (the broker's
// registration, /controller) and its watches with it; go-zookeeper then
// opens a new session by itself, and whoever owns ephemeral state learns of
// the expiry from Expired and re-creates it.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync"
	"time"

	gozk "github.com/go-zookeeper/zk"
)

// Options configure a Client; the zero value is Kafka's defaults.
type Options struct {
	// SessionTimeout is zookeeper.session.timeout.ms (default 18 s).
	SessionTimeout time.Duration
	// ConnectionTimeout is zookeeper.connection.timeout.ms: how long Connect
	// waits for a session (default the session timeout, as Kafka).
	ConnectionTimeout time.Duration
	// Logger receives connection events (default slog.Default()).
	Logger *slog.Logger
}

// ParseConnect splits Kafka's zookeeper.connect,
// "host:port[,host:port...][/chroot]", into servers and chroot ("" for
// none). The chroot is a clean absolute path without a trailing slash.
func ParseConnect(s string) (servers []string, chroot string, err error) {
	hosts := s
	if i := strings.IndexByte(s, '/'); i >= 0 {
		hosts, chroot = s[:i], s[i:]
		if chroot == "/" {
			chroot = ""
		} else if path.Clean(chroot) != chroot {
			return nil, "", fmt.Errorf("zk: zookeeper.connect %q: invalid chroot %q", s, chroot)
		}
	}
	for _, h := range strings.Split(hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			servers = append(servers, h)
		}
	}
	if len(servers) == 0 {
		return nil, "", fmt.Errorf("zk: zookeeper.connect %q names no server", s)
	}
	return servers, chroot, nil
}

// Client is a ZooKeeper session under a chroot. Paths given to its methods
// are relative to the chroot (Kafka's paths, paths.go).
type Client struct {
	conn   *gozk.Conn
	chroot string
	log    *slog.Logger
	// closed is closed by Close.
	closed    chan struct{}
	closeOnce sync.Once

	mu struct {
		sync.Mutex
		state   gozk.State
		expired chan struct{} // closed when the current session expires
		changed chan struct{} // closed and replaced at every state change
	}
}

// ErrConnectTimeout is returned by Connect when no session was established
// within the connection timeout.
var ErrConnectTimeout = errors.New("zk: timed out connecting to ZooKeeper")

// Connect opens a session with the servers of connect and creates its
// chroot if missing, as Kafka's broker does.
func Connect(ctx context.Context, connect string, o Options) (*Client, error) {
	servers, chroot, err := ParseConnect(connect)
	if err != nil {
		return nil, err
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 18 * time.Second
	}
	if o.ConnectionTimeout <= 0 {
		o.ConnectionTimeout = o.SessionTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	c := &Client{chroot: chroot, log: o.Logger.With("zookeeper", connect), closed: make(chan struct{})}
	c.mu.expired = make(chan struct{})
	c.mu.changed = make(chan struct{})
	conn, _, err := gozk.Connect(servers, o.SessionTimeout,
		gozk.WithLogger(zkLogger{c.log}), gozk.WithLogInfo(false), gozk.WithEventCallback(c.event))
	if err != nil {
		return nil, fmt.Errorf("zk: connect %s: %w", connect, err)
	}
	c.conn = conn
	ctx, cancel := context.WithTimeout(ctx, o.ConnectionTimeout)
	defer cancel()
	if err := c.waitSession(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	if chroot != "" {
		if err := c.createParents(chroot, true); err != nil {
			conn.Close()
			return nil, fmt.Errorf("zk: create chroot %s: %w", chroot, err)
		}
	}
	return c, nil
}

// event records a session event; go-zookeeper calls it for every event.
func (c *Client) event(e gozk.Event) {
	if e.Type != gozk.EventSession {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.state = e.State
	if e.State == gozk.StateExpired {
		c.log.Warn("ZooKeeper session expired")
		close(c.mu.expired)
		c.mu.expired = make(chan struct{})
	}
	close(c.mu.changed)
	c.mu.changed = make(chan struct{})
}

// waitSession waits until the client has a session.
func (c *Client) waitSession(ctx context.Context) error {
	for {
		c.mu.Lock()
		has, changed := c.mu.state == gozk.StateHasSession, c.mu.changed
		c.mu.Unlock()
		if has {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("%w: %v", ErrConnectTimeout, ctx.Err())
		}
	}
}

// Expired returns a channel closed when the current session expires.
// Ephemeral znodes and watches of that session are gone by then.
func (c *Client) Expired() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.expired
}

// SessionID is the id of the current session.
func (c *Client) SessionID() int64 { return c.conn.SessionID() }

// Close ends the session: its ephemeral znodes are removed at once. It
// may be called more than once.
func (c *Client) Close() {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.conn.Close()
	})
}

// Closed returns a channel closed by Close.
func (c *Client) Closed() <-chan struct{} { return c.closed }

// pause waits d before a retry; false if ctx ends or the client closes
// meanwhile.
func (c *Client) pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-c.closed:
		return false
	}
}

// abs is p under the chroot.
func (c *Client) abs(p string) string {
	if c.chroot == "" {
		return p
	}
	if p == "/" {
		return c.chroot
	}
	return c.chroot + p
}

var openACL = gozk.WorldACL(gozk.PermAll)

// createParents creates p and its missing parents as empty persistent
// znodes; p is absolute (chroot included) when raw, else under the chroot.
func (c *Client) createParents(p string, raw bool) error {
	if !raw {
		p = c.abs(p)
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	at := ""
	for _, part := range parts {
		at += "/" + part
		if _, err := c.conn.Create(at, nil, 0, openACL); err != nil && !errors.Is(err, gozk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// EnsurePersistentPaths creates the znodes a Kafka broker creates at start
// (PersistentPaths), where missing.
func (c *Client) EnsurePersistentPaths() error {
	for _, p := range PersistentPaths {
		if err := c.createParents(p, false); err != nil {
			return fmt.Errorf("zk: create %s: %w", p, err)
		}
	}
	return nil
}

// Get reads a znode.
func (c *Client) Get(p string) ([]byte, *gozk.Stat, error) { return c.conn.Get(c.abs(p)) }

// zkLogger sends go-zookeeper's messages to slog at debug level.
type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	z.l.Debug(fmt.Sprintf(format, args...))
}
