package scram

// The server side of one exchange: Step is fed the client-first message
// and answers server-first, then is fed client-final and answers
// server-final; then the exchange is done and User names who
// authenticated. Any error ends the exchange (later Steps return
// ErrState). The server computes no PBKDF2: it keeps only stored and
// server keys.
//
// An unknown user gets the same server-first as a known one (a salt
// derived from the user's name and a per-process secret, stable across
// attempts) and fails only at the proof, so the exchange does not reveal
// which users exist.

import (
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"strconv"
	"strings"
)

// Lookup finds a user's credential for the mechanism in use.
type Lookup func(user string) (Credential, bool)

type serverState uint8

const (
	awaitClientFirst serverState = iota
	awaitClientFinal
	serverDone
	serverFailed
)

// Server is the server's side of one SCRAM exchange. It is not safe for
// concurrent use.
type Server struct {
	m      *Mechanism
	lookup Lookup
	state  serverState

	first       clientFirst
	nonce       string // client nonce + server nonce
	serverFirst string
	cred        Credential
	known       bool
	user        string
}

// NewServer starts an exchange for mechanism m.
func NewServer(m *Mechanism, lookup Lookup) *Server {
	return &Server{m: m, lookup: lookup}
}

// unknownSecret keys the salts made up for unknown users.
var unknownSecret = func() []byte {
	b := make([]byte, 32)
	rand.Read(b)
	return b
}()

// Step takes the client's next message and returns the answer; done is
// true once the exchange succeeded (the answer is then server-final,
// which the client still needs).
func (s *Server) Step(msg []byte) (resp []byte, done bool, err error) {
	switch s.state {
	case awaitClientFirst:
		resp, err = s.clientFirst(string(msg))
	case awaitClientFinal:
		resp, err = s.clientFinal(string(msg))
		if err == nil {
			s.state = serverDone
			return resp, true, nil
		}
	default:
		return nil, false, ErrState
	}
	if err != nil {
		s.state = serverFailed
		return nil, false, err
	}
	return resp, false, nil
}

func (s *Server) clientFirst(msg string) ([]byte, error) {
	cf, err := parseClientFirst(msg)
	if err != nil {
		return nil, err
	}
	if v, ok := cf.extensions["tokenauth"]; ok && v == "true" {
		return nil, fmt.Errorf("%w: delegation tokens (tokenauth)", ErrUnsupported)
	}
	if cf.authzid != "" && cf.authzid != cf.user {
		return nil, fmt.Errorf("%w: authorization id differs from the user", ErrUnsupported)
	}
	s.first = cf
	s.cred, s.known = s.lookup(cf.user)
	if !s.known {
		salt := s.m.hmac(unknownSecret, s.m.name, "\x00", cf.user)
		s.cred = Credential{Salt: salt, StoredKey: make([]byte, s.m.size), ServerKey: make([]byte, s.m.size), Iterations: MinIterations}
	}
	s.nonce = cf.nonce + newNonce()
	s.serverFirst = "r=" + s.nonce + ",s=" + b64.EncodeToString(s.cred.Salt) + ",i=" + strconv.Itoa(s.cred.Iterations)
	s.state = awaitClientFinal
	return []byte(s.serverFirst), nil
}

func (s *Server) clientFinal(msg string) ([]byte, error) {
	cl, err := parseClientFinal(msg)
	if err != nil {
		return nil, err
	}
	// Kafka's ScramSaslServer accepts a nonce that ends with the server's,
	// and librdkafka relies on it: it sends the client nonce again before
	// the whole server nonce. The proof covers the message as sent.
	if string(cl.channel) != s.first.gs2 || !strings.HasSuffix(cl.nonce, s.nonce) || len(cl.proof) != s.m.size {
		return nil, ErrAuthFailed
	}
	authMessage := s.first.bare + "," + s.serverFirst + "," + cl.withoutProof
	sig := s.m.hmac(s.cred.StoredKey, authMessage)
	clientKey := make([]byte, len(sig))
	subtle.XORBytes(clientKey, cl.proof, sig)
	if subtle.ConstantTimeCompare(s.m.sum(clientKey), s.cred.StoredKey) != 1 || !s.known {
		return nil, ErrAuthFailed
	}
	s.user = s.first.user
	return []byte("v=" + b64.EncodeToString(s.m.hmac(s.cred.ServerKey, authMessage))), nil
}

// User is the authenticated user, once Step returned done.
func (s *Server) User() string {
	if s.state != serverDone {
		return ""
	}
	return s.user
}

// Done reports whether the exchange succeeded.
func (s *Server) Done() bool { return s.state == serverDone }

// newNonce makes the nonces' random part (a seam: the RFC test vectors
// fix it).
var newNonce = rand.Text
