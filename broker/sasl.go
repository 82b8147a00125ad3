package broker

// A connection's SASL state on a SASL_PLAINTEXT or SASL_SSL listener, as
// Kafka's SaslServerAuthenticator keeps it:
//
//	awaitHandshake ──SaslHandshake (mechanism enabled)──▶ awaitAuthenticate
//	awaitAuthenticate ──SaslAuthenticate…(exchange done)──▶ authenticated
//	authenticated ──SaslHandshake v1 (re-authentication, KIP-368)──▶ awaitAuthenticate
//
// Before authentication only ApiVersions and SaslHandshake (then
// SaslAuthenticate) are served: anything else closes the connection, as
// do requests larger than sasl.server.max.receive.size. SaslHandshake v0
// means the exchange's tokens follow as raw frames (a 4-byte big-endian
// length and the token, each way), not as SaslAuthenticate requests;
// sluice serves that too, as Kafka 3.9 does.
//
// With connections.max.reauth.ms set, an authenticated session lasts that
// long (SaslAuthenticate v1+ tells the client); past it, any request but
// SaslHandshake (beginning a re-authentication) closes the connection. A
// re-authentication must keep the mechanism and the principal.
//
// A failed exchange answers SASL_AUTHENTICATION_FAILED with a message that
// says nothing of what was wrong, logs the client's address and why, and
// closes the connection.

import (
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/broker/server"
	"github.com/sluice-io/sluice/config"
	"github.com/sluice-io/sluice/security/plain"
	"github.com/sluice-io/sluice/security/scram"
	"github.com/sluice-io/sluice/wire"
)

type saslPhase uint8

const (
	awaitHandshake saslPhase = iota
	awaitAuthenticate
	authenticated
)

// saslConn is the SASL state of a connection on a SASL listener.
type saslConn struct {
	l       *config.SASLListener
	phase   saslPhase
	mech    string       // the mechanism of the handshake (and of the session, once authenticated)
	server  saslExchange // the exchange in progress
	raw     bool         // SaslHandshake v0: tokens come as raw frames
	reauth  bool         // the exchange in progress re-authenticates
	expires time.Time    // the session's end; zero: none
}

// saslExchange is the server side of one mechanism's exchange.
type saslExchange interface {
	// step takes a client token and answers the server's; done when the
	// client has authenticated (as user).
	step(token []byte) (resp []byte, done bool, err error)
	user() string
}

// newExchange starts the exchange of mechanism on c.
func (c *conn) newExchange(mechanism string) saslExchange {
	if mechanism == config.MechPlain {
		return &plainExchange{users: c.sasl.l.PlainUsers}
	}
	m, _ := scram.ByName(mechanism)
	return scramExchange{scram.NewServer(m, func(user string) (scram.Credential, bool) { return c.b.sec.scram.Credential(m, user) })}
}

type scramExchange struct{ s *scram.Server }

func (e scramExchange) step(t []byte) ([]byte, bool, error) { return e.s.Step(t) }
func (e scramExchange) user() string                        { return e.s.User() }

// plainExchange checks a PLAIN message against the listener's JAAS users.
type plainExchange struct {
	users map[string]string
	name  string
	done  bool
}

func (e *plainExchange) step(t []byte) ([]byte, bool, error) {
	if e.done {
		return nil, false, scram.ErrState
	}
	e.done = true
	user, password, err := plain.Parse(t)
	if err != nil {
		return nil, false, err
	}
	want, ok := e.users[user]
	if !ok {
		want = "\x00" + password // compare anyway, and fail
	}
	if !plain.Equal(password, want) || !ok {
		return nil, false, fmt.Errorf("plain: wrong password or unknown user %q", user)
	}
	e.name = user
	return []byte{}, true, nil
}

func (e *plainExchange) user() string { return e.name }

// setupSASL resolves every SASL listener's settings and, when the
// inter-broker listener is one, the broker's own client for it (needed in
// ZooKeeper mode only: the single node talks to no other broker).
func (b *Broker) setupSASL() error {
	b.sec.saslLns = map[string]*config.SASLListener{}
	for _, lc := range b.net.setup.Listeners {
		name := lc.Name
		if p := b.net.setup.Protocols[name]; p != config.ProtoSASLPlaintext && p != config.ProtoSASLSSL {
			continue
		}
		sl, err := b.cfg.SASL.Resolve(name)
		if err != nil {
			return err
		}
		b.sec.saslLns[name] = sl
		if name != b.net.setup.InterName || !b.cfg.Cluster.Enabled() {
			continue
		}
		mech, user, password, err := b.cfg.SASL.InterBrokerIdentity(sl)
		if err != nil {
			return err
		}
		b.sec.saslClient = &saslClient{mechanism: mech, user: user, password: password, clientID: "broker-" + strconv.Itoa(int(b.cfg.ID))}
	}
	return nil
}

// newSASLConn is the SASL state of a new connection on l, nil unless l is
// SASL_*.
func (b *Broker) newSASLConn(l *server.Listener) *saslConn {
	if sl := b.sec.saslLns[l.Name]; sl != nil {
		return &saslConn{l: sl}
	}
	return nil
}

// saslGate decides whether a request with key may be served in the
// connection's SASL state; an error closes the connection.
func (c *conn) saslGate(key int16) error {
	s := c.sasl
	switch s.phase {
	case awaitHandshake:
		if key == wire.ApiVersionsKey || key == saslHandshakeKey || key == saslAuthenticateKey {
			return nil // SaslAuthenticate is answered ILLEGAL_SASL_STATE, then closed
		}
		return fmt.Errorf("broker: %s before SASL authentication on listener %s", kmsg.NameForKey(key), s.l.Name)
	case awaitAuthenticate:
		if key == saslAuthenticateKey || key == saslHandshakeKey {
			return nil
		}
		return fmt.Errorf("broker: %s during SASL authentication on listener %s", kmsg.NameForKey(key), s.l.Name)
	}
	if !s.expires.IsZero() && key != saslHandshakeKey && !time.Now().Before(s.expires) {
		return fmt.Errorf("broker: %s after the SASL session of %s expired (connections.max.reauth.ms %d)", kmsg.NameForKey(key), c.Principal, s.l.Reauth.Milliseconds())
	}
	return nil
}

const (
	saslHandshakeKey    = 17
	saslAuthenticateKey = 36
)

// saslMaxReceive bounds a request's size before authentication.
func (c *conn) maxRequestBytes() int32 {
	if c.sasl != nil && c.sasl.phase != authenticated && c.sasl.l.MaxReceive < c.b.cfg.SocketRequestMaxBytes {
		return c.sasl.l.MaxReceive
	}
	return c.b.cfg.SocketRequestMaxBytes
}

// saslStep feeds the exchange the client's token. On failure it logs why
// with the client's address and reports failed; the caller answers
// saslFailedMessage and closes the connection.
func (c *conn) saslStep(token []byte) (resp []byte, done, failed bool) {
	s := c.sasl
	resp, done, err := s.server.step(token)
	if err == nil && done {
		p := Principal{Type: principalUser, Name: s.server.user()}
		if s.reauth && p != c.Principal {
			err = fmt.Errorf("re-authentication may not change the principal from %s to %s", c.Principal, p)
		} else {
			c.Principal = p
			s.phase, s.reauth, s.server = authenticated, false, nil
			s.expires = time.Time{}
			if s.l.Reauth > 0 {
				s.expires = time.Now().Add(s.l.Reauth)
			}
			c.b.log.Debug("SASL authenticated", "remote", c.RemoteAddr().String(), "listener", s.l.Name, "mechanism", s.mech, "principal", p.String())
		}
	}
	if err != nil {
		c.b.log.Info("failed authentication", "remote", c.RemoteAddr().String(), "listener", s.l.Name, "mechanism", s.mech, "err", err)
		return nil, false, true
	}
	return resp, done, false
}

// saslFailedMessage is the client's whole account of a failed exchange
// (Kafka's words), whatever was wrong.
func saslFailedMessage(mechanism string) string {
	return "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mechanism
}

// saslRawToken serves one raw token frame after SaslHandshake v0.
func (c *conn) saslRawToken(frame []byte) error {
	resp, done, failed := c.saslStep(frame)
	if failed {
		return server.ErrClose // logged by saslStep; v0 has no error token
	}
	if done {
		c.sasl.raw = false
	}
	return c.WriteFrame(resp)
}

// saslRefuse answers resp, logs why with the client's address and closes
// the connection.
func (c *conn) saslRefuse(h wire.Header, resp kmsg.Response, why string) (kmsg.Response, error) {
	c.b.log.Info("refusing SASL", "remote", c.RemoteAddr().String(), "listener", c.sasl.l.Name, "why", why)
	if err := c.Write(h.CorrelationID, resp); err != nil {
		return nil, err
	}
	return nil, server.ErrClose
}
