package scram

// The client side of one exchange, for the broker's own inter-broker
// connections and the CLI: First gives client-first, Final takes
// server-first and gives client-final, Verify takes server-final.

import (
	"crypto/hmac"
	"crypto/subtle"
	"fmt"
	"strings"
)

// Client is the client's side of one SCRAM exchange.
type Client struct {
	m        *Mechanism
	user     string
	password string
	nonce    string
	bare     string
	// after Final:
	serverSig []byte
}

// NewClient starts an exchange for user with password.
func NewClient(m *Mechanism, user, password string) *Client {
	return &Client{m: m, user: user, password: password, nonce: newNonce()}
}

// First is the client-first message.
func (c *Client) First() []byte {
	c.bare = "n=" + encodeName(c.user) + ",r=" + c.nonce
	return []byte("n,," + c.bare)
}

// Final answers server-first with client-final.
func (c *Client) Final(serverFirstMsg []byte) ([]byte, error) {
	msg := string(serverFirstMsg)
	sf, err := parseServerFirst(msg)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(sf.nonce, c.nonce) || len(sf.nonce) == len(c.nonce) {
		return nil, fmt.Errorf("%w: server nonce does not extend the client's", ErrMalformed)
	}
	if sf.iterations < MinIterations || sf.iterations > MaxIterations {
		return nil, fmt.Errorf("%w: server asks for %d iterations, outside [%d, %d]", ErrUnsupported, sf.iterations, MinIterations, MaxIterations)
	}
	salted, err := c.m.SaltedPassword(c.password, sf.salt, sf.iterations)
	if err != nil {
		return nil, err
	}
	clientKey := c.m.hmac(salted, "Client Key")
	storedKey := c.m.sum(clientKey)
	serverKey := c.m.hmac(salted, "Server Key")
	withoutProof := "c=" + b64.EncodeToString([]byte("n,,")) + ",r=" + sf.nonce
	authMessage := c.bare + "," + msg + "," + withoutProof
	sig := c.m.hmac(storedKey, authMessage)
	proof := make([]byte, len(sig))
	subtle.XORBytes(proof, clientKey, sig)
	c.serverSig = c.m.hmac(serverKey, authMessage)
	return []byte(withoutProof + ",p=" + b64.EncodeToString(proof)), nil
}

// Verify checks server-final.
func (c *Client) Verify(serverFinal []byte) error {
	sig, err := parseServerFinal(string(serverFinal))
	if err != nil {
		return err
	}
	if c.serverSig == nil || !hmac.Equal(sig, c.serverSig) {
		return ErrServerSignature
	}
	return nil
}
