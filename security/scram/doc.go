// Package scram implements SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802,
// RFC 7677) as Kafka uses them: the server side as a state machine fed the
// client's messages (server.go), the client side (client.go), credential
// derivation and Kafka's credential string (credential.go), and the
// messages' grammar (messages.go), a broker's cache of its users'
// credentials (cache.go), and the administration of those credentials
// (admin.go). It does no I/O: callers carry the messages in
// SaslAuthenticate requests or wherever they like, and the cache reads
// credentials through the function it is given.
//
// admin.go owns the logic of DescribeUserScramCredentials and
// AlterUserScramCredentials (Admin): validating the request (empty and
// duplicate users, unknown mechanisms, iterations bounds, empty salts and
// salted passwords) with Kafka's error codes and messages, deriving the
// stored credential from the salted password, reading and writing the
// users' entity configs, and dropping an altered user from the Cache. It
// takes the requests and answers the responses as franz-go's kmsg types;
// the broker's handlers decode, authorize and encode. It calls only its
// Options: a Store (the users' entity configs, which the broker adapts
// from its coordinator: ZooKeeper's /config/users, or the single node's
// metadata file), the Cache and a logger. This package imports no
// package of sluice's.
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
