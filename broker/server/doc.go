// Package server is the broker's connection server: it binds the
// listeners, accepts their connections within the connection quotas
// (max.connections, max.connections.per.ip and its overrides:
// connquota.go), completes TLS handshakes and maps client certificates to
// principals (tls.go), reads each connection's requests within their
// bounds into request memory (connread.go; the request pool, reqpool.go,
// reads requests above 64 KiB into per-connection mappings, region.go, as
// their bytes arrive), and times and logs them (requestlog.go); it
// resolves the advertised listeners against the bound ones
// (advertise.go).
//
// Each connection is served by one goroutine that reads a request, hands
// it to the connection's Session (the broker's, which decodes, dispatches
// and writes the response) and reads the next only once the session
// returns, so responses go out in request order, as Kafka guarantees. A
// framing violation the server sees (a size over socket.request.max.bytes,
// a truncated frame, a request not received within
// socket.request.receive.timeout.ms) closes that connection and nothing
// else, as does an error the session returns.
//
// What it owns: listeners, connections and their goroutines, request
// memory, the connection quotas. What it may call: config (the network and
// TLS settings), metrics (request counts and times), security/tlsconf and
// security/acl (principals), wire (framing). It knows nothing of Kafka's
// APIs beyond a request header's key, version and client id, which the
// request log reads.
//
// Lock order: the caller's lock around Bind (the broker's mu, which also
// guards reading the listeners' bound addresses) before Server.mu;
// Server.mu, requestPool.mu and connQuotas.mu nest no other lock, and none
// is held while a connection waits for request memory or a connection
// slot.
package server
