package scram

// Mechanisms, credential derivation, and Kafka's credential string, as
// Kafka stores it under a user's config (ZooKeeper /config/users/<user>,
// key "SCRAM-SHA-256" or "SCRAM-SHA-512"):
//
//	salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=<decimal>
//
// base64 is the standard alphabet with padding; the four fields appear in
// this order when written and in any order when read, each exactly once.

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"hash"
	"io"
	"strconv"
	"strings"
)

// Iteration bounds, as Kafka's ScramMechanism sets them (4096 is also
// Kafka's default).
const (
	MinIterations = 4096
	MaxIterations = 16384
)

// Mechanism is one SCRAM hash.
type Mechanism struct {
	name string
	h    func() hash.Hash
	size int // the hash's output, also the salted password's length
	kind int8
}

// The mechanisms, with their names in SaslHandshake and their types in
// Describe/AlterUserScramCredentials (1 and 2).
var (
	SHA256 = &Mechanism{name: "SCRAM-SHA-256", h: sha256.New, size: sha256.Size, kind: 1}
	SHA512 = &Mechanism{name: "SCRAM-SHA-512", h: sha512.New, size: sha512.Size, kind: 2}
)

// Mechanisms are every SCRAM mechanism, in type order.
var Mechanisms = []*Mechanism{SHA256, SHA512}

// Name is the mechanism's SASL name, also its config key.
func (m *Mechanism) Name() string { return m.name }

// Type is Kafka's ScramMechanism type (1 SCRAM-SHA-256, 2 SCRAM-SHA-512).
func (m *Mechanism) Type() int8 { return m.kind }

// ByName finds a mechanism by its SASL name.
func ByName(name string) (*Mechanism, bool) {
	for _, m := range Mechanisms {
		if m.name == name {
			return m, true
		}
	}
	return nil, false
}

// ByType finds a mechanism by Kafka's type number.
func ByType(t int8) (*Mechanism, bool) {
	for _, m := range Mechanisms {
		if m.kind == t {
			return m, true
		}
	}
	return nil, false
}

// Credential is what the server keeps of a password.
type Credential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int
}

func (m *Mechanism) hmac(key []byte, parts ...string) []byte {
	mac := hmac.New(m.h, key)
	for _, p := range parts {
		io.WriteString(mac, p)
	}
	return mac.Sum(nil)
}

func (m *Mechanism) sum(b []byte) []byte {
	h := m.h()
	h.Write(b)
	return h.Sum(nil)
}

// SaltedPassword is Hi(password, salt, iterations).
func (m *Mechanism) SaltedPassword(password string, salt []byte, iterations int) ([]byte, error) {
	if iterations < MinIterations || iterations > MaxIterations {
		return nil, fmt.Errorf("%w: iterations %d outside [%d, %d]", ErrCredential, iterations, MinIterations, MaxIterations)
	}
	return pbkdf2.Key(m.h, password, salt, iterations, m.size)
}

// FromSaltedPassword derives the credential from a salted password, as
// AlterUserScramCredentials sends it.
func (m *Mechanism) FromSaltedPassword(salted, salt []byte, iterations int) Credential {
	clientKey := m.hmac(salted, "Client Key")
	return Credential{
		Salt:       append([]byte(nil), salt...),
		StoredKey:  m.sum(clientKey),
		ServerKey:  m.hmac(salted, "Server Key"),
		Iterations: iterations,
	}
}

// NewCredential derives a credential for password with a fresh random
// salt (as long as the hash, as Kafka's ScramFormatter makes them).
func (m *Mechanism) NewCredential(password string, iterations int) (Credential, error) {
	salt := make([]byte, m.size)
	rand.Read(salt)
	salted, err := m.SaltedPassword(password, salt, iterations)
	if err != nil {
		return Credential{}, err
	}
	return m.FromSaltedPassword(salted, salt, iterations), nil
}

var b64 = base64.StdEncoding

// String is Kafka's credential string.
func (c Credential) String() string {
	return "salt=" + b64.EncodeToString(c.Salt) +
		",stored_key=" + b64.EncodeToString(c.StoredKey) +
		",server_key=" + b64.EncodeToString(c.ServerKey) +
		",iterations=" + strconv.Itoa(c.Iterations)
}

// ParseCredential reads Kafka's credential string for mechanism m: the
// keys must have the hash's length. Iterations need only be positive: a
// credential written straight into ZooKeeper (Kafka's kafka-configs
// --zookeeper checks only the minimum) may exceed MaxIterations, and the
// server never computes them; clients judge them.
func (m *Mechanism) ParseCredential(s string) (Credential, error) {
	var c Credential
	seen := map[string]bool{}
	for field := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(field, "=")
		if !ok {
			return Credential{}, fmt.Errorf("%w: field %q has no '='", ErrCredential, field)
		}
		if seen[k] {
			return Credential{}, fmt.Errorf("%w: field %q twice", ErrCredential, k)
		}
		seen[k] = true
		var err error
		switch k {
		case "salt":
			c.Salt, err = b64.DecodeString(v)
		case "stored_key":
			c.StoredKey, err = b64.DecodeString(v)
		case "server_key":
			c.ServerKey, err = b64.DecodeString(v)
		case "iterations":
			c.Iterations, err = strconv.Atoi(v)
		default:
			return Credential{}, fmt.Errorf("%w: unknown field %q", ErrCredential, k)
		}
		if err != nil {
			return Credential{}, fmt.Errorf("%w: field %s: %v", ErrCredential, k, err)
		}
	}
	switch {
	case len(seen) != 4:
		return Credential{}, fmt.Errorf("%w: want salt, stored_key, server_key and iterations", ErrCredential)
	case len(c.Salt) == 0:
		return Credential{}, fmt.Errorf("%w: empty salt", ErrCredential)
	case len(c.StoredKey) != m.size || len(c.ServerKey) != m.size:
		return Credential{}, fmt.Errorf("%w: %s keys are %d bytes, not %d and %d", ErrCredential, m.name, m.size, len(c.StoredKey), len(c.ServerKey))
	case c.Iterations <= 0:
		return Credential{}, fmt.Errorf("%w: iterations %d", ErrCredential, c.Iterations)
	}
	return c, nil
}
