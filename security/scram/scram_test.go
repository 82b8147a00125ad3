package scram

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// RFC 7677 section 3's SCRAM-SHA-256 example.
const (
	rfcClientNonce = "rOprNGfwEbeRWgbNEkqO"
	rfcServerNonce = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	rfcClientFirst = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
	rfcServerFirst = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
	rfcClientFinal = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
	rfcServerFinal = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
)

func withNonce(t *testing.T, n string) {
	old := newNonce
	newNonce = func() string { return n }
	t.Cleanup(func() { newNonce = old })
}

func rfcCredential(t *testing.T) Credential {
	salt, _ := b64.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	salted, err := SHA256.SaltedPassword("pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	return SHA256.FromSaltedPassword(salted, salt, 4096)
}

func TestClientRFC7677(t *testing.T) {
	withNonce(t, rfcClientNonce)
	c := NewClient(SHA256, "user", "pencil")
	if got := string(c.First()); got != rfcClientFirst {
		t.Fatalf("client-first %q, want %q", got, rfcClientFirst)
	}
	final, err := c.Final([]byte(rfcServerFirst))
	if err != nil {
		t.Fatal(err)
	}
	if string(final) != rfcClientFinal {
		t.Fatalf("client-final %q, want %q", final, rfcClientFinal)
	}
	if err := c.Verify([]byte(rfcServerFinal)); err != nil {
		t.Fatal(err)
	}
	if err := c.Verify([]byte("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G5=")); err == nil {
		t.Fatal("a wrong server signature verified")
	}
}

func TestServerRFC7677(t *testing.T) {
	cred := rfcCredential(t)
	withNonce(t, rfcServerNonce)
	s := NewServer(SHA256, func(u string) (Credential, bool) { return cred, u == "user" })
	sf, done, err := s.Step([]byte(rfcClientFirst))
	if err != nil || done || string(sf) != rfcServerFirst {
		t.Fatalf("server-first %q %v %v, want %q", sf, done, err, rfcServerFirst)
	}
	fin, done, err := s.Step([]byte(rfcClientFinal))
	if err != nil || !done || string(fin) != rfcServerFinal {
		t.Fatalf("server-final %q %v %v, want %q", fin, done, err, rfcServerFinal)
	}
	if s.User() != "user" {
		t.Fatalf("user %q", s.User())
	}
	if _, _, err := s.Step([]byte(rfcClientFinal)); !errors.Is(err, ErrState) {
		t.Fatalf("a step after the end: %v", err)
	}
}

func exchange(t *testing.T, m *Mechanism, user, password string, lookup Lookup) error {
	t.Helper()
	c := NewClient(m, user, password)
	s := NewServer(m, lookup)
	sf, _, err := s.Step(c.First())
	if err != nil {
		return err
	}
	cf, err := c.Final(sf)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	fin, done, err := s.Step(cf)
	if err != nil {
		return err
	}
	if !done || s.User() != user {
		t.Fatalf("done %v user %q", done, s.User())
	}
	return c.Verify(fin)
}

func TestRoundTrip(t *testing.T) {
	for _, m := range Mechanisms {
		t.Run(m.Name(), func(t *testing.T) {
			cred, err := m.NewCredential("s3cret,=x", 4096)
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := m.ParseCredential(cred.String())
			if err != nil {
				t.Fatal(err)
			}
			users := map[string]Credential{"al,i=ce": parsed}
			lookup := func(u string) (Credential, bool) { c, ok := users[u]; return c, ok }
			if err := exchange(t, m, "al,i=ce", "s3cret,=x", lookup); err != nil {
				t.Fatalf("right password: %v", err)
			}
			if err := exchange(t, m, "al,i=ce", "wrong", lookup); !errors.Is(err, ErrAuthFailed) {
				t.Fatalf("wrong password: %v", err)
			}
			if err := exchange(t, m, "bob", "s3cret,=x", lookup); !errors.Is(err, ErrAuthFailed) {
				t.Fatalf("unknown user: %v", err)
			}
		})
	}
}

// An unknown user sees a stable salt, as a known one does.
func TestUnknownUserStableSalt(t *testing.T) {
	lookup := func(string) (Credential, bool) { return Credential{}, false }
	first := func() string {
		sf, _, err := NewServer(SHA512, lookup).Step([]byte("n,,n=ghost,r=abc"))
		if err != nil {
			t.Fatal(err)
		}
		_, rest, _ := strings.Cut(string(sf), ",s=")
		return rest
	}
	if a, b := first(), first(); a != b {
		t.Fatalf("salts differ: %q %q", a, b)
	}
}

func TestServerRefuses(t *testing.T) {
	cred := rfcCredential(t)
	lookup := func(u string) (Credential, bool) { return cred, u == "user" }
	for _, tc := range []struct {
		name, first string
		want        error
	}{
		{"empty", "", ErrMalformed},
		{"no header", "n=user,r=abc", ErrMalformed},
		{"channel binding", "p=tls-unique,,n=user,r=abc", ErrUnsupported},
		{"bad flag", "x,,n=user,r=abc", ErrMalformed},
		{"other authzid", "n,a=admin,n=user,r=abc", ErrUnsupported},
		{"tokenauth", "n,,n=user,r=abc,tokenauth=true", ErrUnsupported},
		{"mandatory ext", "n,,m=x,n=user,r=abc", ErrUnsupported},
		{"no nonce", "n,,n=user", ErrMalformed},
		{"empty nonce", "n,,n=user,r=", ErrMalformed},
		{"bad escape", "n,,n=us=er,r=abc", ErrMalformed},
		{"empty user", "n,,n=,r=abc", ErrMalformed},
		{"nonce with space", "n,,n=user,r=a c", ErrMalformed},
		{"dup extension", "n,,n=user,r=abc,x=1,x=2", ErrMalformed},
		{"order", "n,,r=abc,n=user", ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := NewServer(SHA256, lookup).Step([]byte(tc.first))
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	// Same authzid as the user is fine.
	if _, _, err := NewServer(SHA256, lookup).Step([]byte("n,a=user,n=user,r=abc")); err != nil {
		t.Fatal(err)
	}
	withNonce(t, rfcServerNonce)
	for _, tc := range []struct{ name, final string }{
		{"bad channel", "c=eSws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="},
		{"bad nonce", "c=biws,r=rOprNGfwEbeRWgbNEkqO,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="},
		{"nonce with a suffix", "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0x,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="},
		{"librdkafka's nonce, RFC proof", "c=biws,r=rOprNGfwEbeRWgbNEkqOrOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="},
		{"short proof", "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzb"},
		{"no proof", "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"},
		{"bad base64", "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=!!"},
		{"garbage", "\x00\xff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewServer(SHA256, lookup)
			if _, _, err := s.Step([]byte(rfcClientFirst)); err != nil {
				t.Fatal(err)
			}
			_, done, err := s.Step([]byte(tc.final))
			if err == nil || done || s.User() != "" {
				t.Fatalf("accepted: %v %v", err, done)
			}
			if _, _, err := s.Step([]byte(rfcClientFinal)); !errors.Is(err, ErrState) {
				t.Fatalf("after failure: %v", err)
			}
		})
	}
}

func TestCredentialString(t *testing.T) {
	c := Credential{Salt: []byte("salt"), StoredKey: bytes.Repeat([]byte{1}, 32), ServerKey: bytes.Repeat([]byte{2}, 32), Iterations: 8192}
	s := c.String()
	want := "salt=c2FsdA==,stored_key=AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=,server_key=AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=,iterations=8192"
	if s != want {
		t.Fatalf("%s\nwant %s", s, want)
	}
	got, err := SHA256.ParseCredential(s)
	if err != nil || got.String() != s {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := SHA512.ParseCredential(s); !errors.Is(err, ErrCredential) {
		t.Fatalf("32-byte keys as SHA-512: %v", err)
	}
	for _, bad := range []string{
		"", "salt=c2FsdA==", s + ",iterations=1", strings.Replace(s, "iterations=8192", "iterations=x", 1),
		strings.Replace(s, "iterations=8192", "iterations=0", 1), strings.Replace(s, "salt=c2FsdA==", "salt=", 1),
		strings.Replace(s, "salt=", "pepper=", 1), strings.Replace(s, "c2FsdA==", "!!", 1), "a,b,c,d",
	} {
		if _, err := SHA256.ParseCredential(bad); !errors.Is(err, ErrCredential) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestIterationBounds(t *testing.T) {
	for _, n := range []int{0, 4095, 16385} {
		if _, err := SHA256.NewCredential("p", n); !errors.Is(err, ErrCredential) {
			t.Errorf("iterations %d: %v", n, err)
		}
	}
	c := NewClient(SHA256, "user", "pencil")
	c.First()
	if _, err := c.Final([]byte(strings.Replace(rfcServerFirst, "i=4096", "i=100000", 1))); err == nil {
		t.Fatal("client accepted 100000 iterations")
	}
}

func TestClientRefusesBadServer(t *testing.T) {
	withNonce(t, rfcClientNonce)
	for _, sf := range []string{
		"", "e=other-error", "r=someoneelse,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "r=" + rfcClientNonce + ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
		"r=" + rfcClientNonce + "x,s=,i=4096", "r=" + rfcClientNonce + "x,s=AA==,i=four",
	} {
		c := NewClient(SHA256, "user", "pencil")
		c.First()
		if _, err := c.Final([]byte(sf)); err == nil {
			t.Errorf("%q accepted", sf)
		}
	}
	c := NewClient(SHA256, "user", "pencil")
	c.First()
	if err := c.Verify([]byte(rfcServerFinal)); err == nil {
		t.Fatal("verify before final accepted")
	}
}
