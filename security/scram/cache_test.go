package scram

import (
	"errors"
	"log/slog"
	"testing"
)

// TestCache: a user's credentials are read once, the absence of any too;
// a malformed one is skipped, not fatal to the others; a failed read is
// not cached; Forget makes the next attempt read again.
func TestCache(t *testing.T) {
	sha256, _ := ByName("SCRAM-SHA-256")
	sha512, _ := ByName("SCRAM-SHA-512")
	cred, err := sha256.NewCredential("secret", 4096)
	if err != nil {
		t.Fatal(err)
	}
	users := map[string]map[string]string{"alice": {"SCRAM-SHA-256": cred.String(), "SCRAM-SHA-512": "garbage"}}
	reads := map[string]int{}
	var fail error
	c := NewCache(func(user string) (map[string]string, error) {
		reads[user]++
		return users[user], fail
	}, slog.New(slog.DiscardHandler))
	for range 3 {
		if got, ok := c.Credential(sha256, "alice"); !ok || got.String() != cred.String() {
			t.Fatalf("alice's SCRAM-SHA-256: %v, %v", got, ok)
		}
		if _, ok := c.Credential(sha512, "alice"); ok {
			t.Fatal("a malformed SCRAM-SHA-512 credential was taken")
		}
		if _, ok := c.Credential(sha256, "mallory"); ok {
			t.Fatal("a user with no credential has one")
		}
	}
	if reads["alice"] != 1 || reads["mallory"] != 1 {
		t.Fatalf("reads: %v, want one per user", reads)
	}
	fail = errors.New("ZooKeeper unreachable")
	c.Forget("alice")
	if _, ok := c.Credential(sha256, "alice"); ok {
		t.Fatal("a failed read answered a credential")
	}
	fail = nil
	if _, ok := c.Credential(sha256, "alice"); !ok || reads["alice"] != 3 {
		t.Fatalf("after a failed read: %v, %d reads", ok, reads["alice"])
	}
}
