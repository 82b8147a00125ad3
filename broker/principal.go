package broker

// The principal a connection acts as (Kafka's KafkaPrincipal): "User:" and
// a name. A connection starts as User:ANONYMOUS, Kafka's principal of a
// PLAINTEXT connection; an SSL listener makes it the client certificate's
// subject (as ssl.principal.mapping.rules map it), a SASL exchange the
// user it authenticated. The connection's goroutine alone sets and reads
// it (server.Conn.Principal), so it needs no lock.

import (
	"github.com/sluice-io/sluice/broker/server"
	"github.com/sluice-io/sluice/security/acl"
)

// Principal is a KafkaPrincipal, the authorizer's type.
type Principal = acl.Principal

// principalUser is the type of every principal sluice builds.
const principalUser = server.PrincipalUser

// Anonymous is the principal of a connection that did not authenticate.
var Anonymous = server.Anonymous
