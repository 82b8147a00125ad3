// Package tlsconf builds crypto/tls configurations from Kafka's ssl.* keys,
// as a broker's listeners and a console client's command config name them,
// and maps a client certificate to Kafka's principal.
//
// Keys (Kafka 3.9's names and defaults; only the PEM store type exists here):
//
//	ssl.keystore.type                    PEM (the only type; JKS and PKCS12 are refused)
//	ssl.keystore.location                a PEM file holding the private key and the
//	                                     certificate chain, leaf first
//	ssl.keystore.certificate.chain       the chain inline (PEM text), instead of a file
//	ssl.keystore.key                     the private key inline (PEM text)
//	ssl.key.password                     the password of an encrypted PKCS#8 key
//	ssl.truststore.type                  PEM
//	ssl.truststore.location              a PEM file of trusted CA certificates
//	ssl.truststore.certificates          the same inline
//	ssl.client.auth                      none (default) | requested | required
//	ssl.enabled.protocols                default TLSv1.2,TLSv1.3
//	ssl.protocol                         default TLSv1.3: the highest version offered
//	ssl.cipher.suites                    Java / IANA names; default Go's own choice
//	ssl.endpoint.identification.algorithm https (default): a client verifies the
//	                                     server's host name; empty: it does not
//	ssl.principal.mapping.rules          Kafka's SslPrincipalMapper rules (mapper.go)
//
// A listener's own keys, listener.name.<listener in lower case>.ssl.*, win
// over the unprefixed ones (config.TLSSettings reads them).
//
// Keys are PKCS#8 as Kafka reads them ("PRIVATE KEY", or "ENCRYPTED PRIVATE
// KEY" with ssl.key.password: PBES2 with PBKDF2 and AES-CBC or 3DES-CBC,
// what `openssl pkcs8 -topk8` writes), and, beyond Kafka, unencrypted
// PKCS#1 RSA and SEC 1 EC keys. PEM blocks are found as leniently as
// Kafka's parser finds them: text around them, and whitespace in place of
// the line breaks of an inline value, are ignored.
//
// Reloading. A Server reads its files again, at most once per
// Options.ReloadInterval (default 10 s), during a TLS handshake: the
// handshake that finds the interval passed reads the keystore and
// truststore files and, if any byte of them changed, parses them and swaps
// the new state in atomically, before answering its own client. Other
// handshakes meanwhile use the state they find. A change that does not
// parse (a half-written file) keeps the previous state; it is reported
// through Options.OnReloadError and tried again after the next interval.
// There is no goroutine and no timer: an idle listener reads nothing. Inline
// values never change.
//
// Principals. A client certificate's subject is written as Java's
// X500Principal.getName() writes it (RFC 2253, principal.go) and mapped by
// the rules; without a certificate the principal is ANONYMOUS, as Kafka's
// DefaultKafkaPrincipalBuilder makes it.
package tlsconf
