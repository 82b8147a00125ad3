// Package scram implements SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802,
// RFC 7677) as Kafka uses them: the server side as a state machine fed the
// client's messages (server.go), the client side (client.go), credential
// derivation and Kafka's credential string (credential.go), and the
// messages' grammar (messages.go), and a broker's cache of its users'
// credentials (cache.go). It does no I/O: callers carry the messages in
// SaslAuthenticate requests or wherever they like, and the cache reads
// credentials through the function it is given.
//
// The exchange:
//
//	client-first   gs2-header client-first-bare
//	               gs2-header        = ("n" | "y") "," ["a=" authzid] ","
//	               client-first-bare = "n=" saslname ",r=" c-nonce ["," extensions]
//	server-first   "r=" c-nonce s-nonce ",s=" base64(salt) ",i=" iterations
//	client-final   "c=" base64(gs2-header) ",r=" nonce ["," extensions] ",p=" base64(proof)
//	server-final   "v=" base64(ServerSignature) | "e=" error
//
// with SaltedPassword = PBKDF2-HMAC(password, salt, iterations),
// ClientKey = HMAC(SaltedPassword, "Client Key"), StoredKey = H(ClientKey),
// ServerKey = HMAC(SaltedPassword, "Server Key"),
// AuthMessage = client-first-bare "," server-first "," client-final-without-proof,
// ClientProof = ClientKey XOR HMAC(StoredKey, AuthMessage),
// ServerSignature = HMAC(ServerKey, AuthMessage).
//
// Kafka's extensions: "tokenauth=true" asks for delegation-token
// authentication, which sluice does not serve; the server refuses it.
// Other extensions are accepted and ignored, as Kafka does.
package scram
