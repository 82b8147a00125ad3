package plain

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		msg, user, pass string
		err             error
	}{
		{"\x00alice\x00pw", "alice", "pw", nil},
		{"alice\x00alice\x00pw", "alice", "pw", nil},
		{"bob\x00alice\x00pw", "", "", ErrAuthzid},
		{"", "", "", ErrMalformed},
		{"\x00alice", "", "", ErrMalformed},
		{"\x00\x00pw", "", "", ErrMalformed},
		{"\x00alice\x00", "", "", ErrMalformed},
		{"\x00alice\x00pw\x00x", "", "", ErrMalformed},
		{"garbage", "", "", ErrMalformed},
	} {
		u, p, err := Parse([]byte(tc.msg))
		if !errors.Is(err, tc.err) || u != tc.user || p != tc.pass {
			t.Errorf("%q: %q %q %v, want %q %q %v", tc.msg, u, p, err, tc.user, tc.pass, tc.err)
		}
	}
	if u, p, err := Parse(Message("u", "p")); u != "u" || p != "p" || err != nil {
		t.Fatal(u, p, err)
	}
	if !Equal("abc", "abc") || Equal("abc", "abd") || Equal("abc", "ab") {
		t.Fatal("Equal")
	}
}
