package broker

// The principal a connection acts as (Kafka's KafkaPrincipal): "User:" and
// a name. A connection starts as User:ANONYMOUS, Kafka's principal of a
// PLAINTEXT connection; an SSL listener makes it the client certificate's
// subject (as ssl.principal.mapping.rules map it), a SASL exchange the
// user it authenticated. The connection's goroutine alone sets and reads
// it, so it needs no lock.

import "strings"

// Principal is a KafkaPrincipal.
type Principal struct {
	Type string // "User"
	Name string
}

// principalUser is the type of every principal sluice builds.
const principalUser = "User"

// Anonymous is the principal of a connection that did not authenticate.
var Anonymous = Principal{Type: principalUser, Name: "ANONYMOUS"}

// String is Kafka's form, "User:alice".
func (p Principal) String() string { return p.Type + ":" + p.Name }

// ParsePrincipal reads "Type:name" (Kafka's SecurityUtils.parseKafkaPrincipal:
// the type before the first colon, the name after it, both needed).
func ParsePrincipal(s string) (Principal, bool) {
	i := strings.IndexByte(s, ':')
	if i <= 0 || i == len(s)-1 {
		return Principal{}, false
	}
	return Principal{Type: s[:i], Name: s[i+1:]}, true
}
