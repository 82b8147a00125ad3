// Package plain parses and makes the SASL PLAIN message (RFC 4616), as
// Kafka's PlainSaslServer reads it:
//
//	message = [authzid] NUL authcid NUL passwd
//
// exactly three fields; authcid and passwd not empty; authzid empty or
// equal to authcid (Kafka refuses acting as another user).
package plain

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
)

var (
	// ErrMalformed marks a message that is not three NUL-separated fields
	// with a user and a password.
	ErrMalformed = errors.New("plain: malformed message")
	// ErrAuthzid is an authorization id other than the user.
	ErrAuthzid = errors.New("plain: authorization id differs from the user")
)

// Parse reads a PLAIN message. The strings are copies.
func Parse(msg []byte) (user, password string, err error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return "", "", fmt.Errorf("%w: %d fields, want 3", ErrMalformed, len(parts))
	}
	authzid, authcid, passwd := parts[0], parts[1], parts[2]
	if len(authcid) == 0 {
		return "", "", fmt.Errorf("%w: no user", ErrMalformed)
	}
	if len(passwd) == 0 {
		return "", "", fmt.Errorf("%w: no password", ErrMalformed)
	}
	if len(authzid) != 0 && !bytes.Equal(authzid, authcid) {
		return "", "", ErrAuthzid
	}
	return string(authcid), string(passwd), nil
}

// Message is the PLAIN message for user and password, with no authzid.
func Message(user, password string) []byte {
	return []byte("\x00" + user + "\x00" + password)
}

// Equal compares passwords in time that depends only on their lengths.
func Equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
