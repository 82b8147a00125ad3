package tlsconf

import (
	"crypto/ecdsa"
	"errors"
	"os"
	"strings"
	"testing"
)

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEncryptedKeysFromOpenSSL decrypts keys OpenSSL encrypted with each
// PBES2 combination and checks they are the plain key.
func TestEncryptedKeysFromOpenSSL(t *testing.T) {
	plain, err := parsePrivateKey(readTestdata(t, "plain.key"), "", "plain.key")
	if err != nil {
		t.Fatal(err)
	}
	chain := readTestdata(t, "cert.pem")
	for _, name := range []string{"aes256.key", "des3sha1.key", "aes128sha512.key"} {
		t.Run(name, func(t *testing.T) {
			text := readTestdata(t, name)
			key, err := parsePrivateKey(text, "secret", name)
			if err != nil {
				t.Fatal(err)
			}
			if !key.(*ecdsa.PrivateKey).Equal(plain) {
				t.Fatal("decrypted key differs from the plain one")
			}
			if _, err := parsePrivateKey(text, "wrong", name); !errors.Is(err, ErrKeyPassword) {
				t.Fatalf("wrong password: %v, want ErrKeyPassword", err)
			}
			if _, err := parsePrivateKey(text, "", name); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "ssl.key.password") {
				t.Fatalf("no password: %v", err)
			}
			// Kafka's keystore file: key and chain in one file.
			if _, err := keyPair(text+chain, text+chain, "secret", name); err != nil {
				t.Fatal(err)
			}
		})
	}
	_, err = parsePrivateKey(readTestdata(t, "pbes1.key"), "secret", "pbes1.key")
	if !errors.Is(err, ErrPEM) || !strings.Contains(err.Error(), "only PBES2") {
		t.Fatalf("PBES1 key: %v, want a refusal naming PBES2", err)
	}
}

// TestPEMLenient reads blocks whose line breaks became spaces, with text
// around them, as Kafka's parser does, and refuses what is not a store.
func TestPEMLenient(t *testing.T) {
	key := readTestdata(t, "plain.key")
	chain := readTestdata(t, "cert.pem")
	oneLine := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	// "-----BEGIN PRIVATE KEY----- MIG... -----END PRIVATE KEY-----"
	if _, err := keyPair("subject=CN=fixture\n"+oneLine(chain), oneLine(key), "", "inline"); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ chain, key, want string }{
		{"", key, "none found"},
		{chain, "", "private key not provided"},
		{chain, key + key, "expected one private key, but found 2"},
		{chain, strings.Replace(key, "-----END", "", 1), "without END"},
		{chain, "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAAA\n-----END RSA PRIVATE KEY-----\n", "legacy encryption"},
	}
	for _, c := range cases {
		if _, err := keyPair(c.chain, c.key, "", "store.pem"); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "store.pem") {
			t.Errorf("error %v, want one naming store.pem and containing %q", err, c.want)
		}
	}
}
