package fuzz

// Fuzz targets of the SASL mechanisms (security/scram, security/plain):
//
//   - FuzzSCRAMServer: arbitrary client-first and client-final messages
//     never panic the SCRAM server, and never authenticate (the server's
//     nonce is random, so no fixed input can carry a valid proof).
//   - FuzzSCRAMCredential: what Kafka's credential-string parser accepts
//     writes back to a string that parses to the same credential.
//   - FuzzPlain: arbitrary PLAIN messages never panic the parser; what it
//     accepts has a user and a password and round-trips through Message.
//
// Run each with
//
//	go test -run '^$' -fuzz FuzzSCRAMServer -fuzztime 3m ./fuzz/

import (
	"testing"

	"github.com/sluice-io/sluice/security/plain"
	"github.com/sluice-io/sluice/security/scram"
)

func FuzzSCRAMServer(f *testing.F) {
	cred, err := scram.SHA256.NewCredential("pencil", 4096)
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"), []byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	f.Add([]byte("n,a=user,n=us=2Cer,r=abc,tokenauth=false"), []byte("c=bixhPXVzZXIs,r=abc,p=AAAA"))
	f.Add([]byte("y,,n=user,r=x,ext=1"), []byte("c=eSws,r=x,e=1,p="))
	f.Fuzz(func(t *testing.T, first, final []byte) {
		for _, m := range scram.Mechanisms {
			s := scram.NewServer(m, func(u string) (scram.Credential, bool) { return cred, u == "user" })
			if _, _, err := s.Step(first); err != nil {
				continue
			}
			if _, done, err := s.Step(final); done || err == nil || s.User() != "" {
				t.Fatalf("%s authenticated %q without the password", m.Name(), s.User())
			}
		}
	})
}

func FuzzSCRAMCredential(f *testing.F) {
	cred, err := scram.SHA256.NewCredential("pencil", 4096)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(cred.String())
	f.Add("salt=c2FsdA==,iterations=8192,stored_key=AA==,server_key=AA==")
	f.Fuzz(func(t *testing.T, s string) {
		for _, m := range scram.Mechanisms {
			c, err := m.ParseCredential(s)
			if err != nil {
				continue
			}
			again, err := m.ParseCredential(c.String())
			if err != nil || again.String() != c.String() {
				t.Fatalf("%q parsed, wrote %q, re-parsed %v %v", s, c.String(), again, err)
			}
		}
	})
}

func FuzzPlain(f *testing.F) {
	f.Add([]byte("\x00alice\x00pw"))
	f.Add([]byte("alice\x00alice\x00pw"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		u, p, err := plain.Parse(msg)
		if err != nil {
			return
		}
		if u == "" || p == "" {
			t.Fatalf("%q accepted with user %q password %q", msg, u, p)
		}
		u2, p2, err := plain.Parse(plain.Message(u, p))
		if err != nil || u2 != u || p2 != p {
			t.Fatalf("%q: round trip %q %q %v", msg, u2, p2, err)
		}
	})
}
