package tlsconf

import "errors"

// Errors of this package; each is wrapped with the key or file it concerns.
var (
	// ErrConfig is a bad or contradictory ssl.* value.
	ErrConfig = errors.New("tlsconf: invalid configuration")
	// ErrPEM is a keystore or truststore that does not hold what it must.
	ErrPEM = errors.New("tlsconf: bad PEM store")
	// ErrKeyPassword is an encrypted key that the password does not open.
	ErrKeyPassword = errors.New("tlsconf: wrong ssl.key.password or corrupt key")
	// ErrNoMatchingRule is a certificate subject no mapping rule applies to
	// (Kafka's NoMatchingRule).
	ErrNoMatchingRule = errors.New("tlsconf: no ssl.principal.mapping.rules rule applies")
)
