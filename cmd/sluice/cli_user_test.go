package main

// sluice user scram, through a broker and straight in ZooKeeper.

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/coordinator/zk"
	"github.com/sluice-io/sluice/coordinator/zk/zktest"
	"github.com/sluice-io/sluice/security/scram"
)

func TestUserScramBrokers(t *testing.T) {
	c := newCLI(t)
	if out := c.ok("", "user", "scram", "set", "--user", "alice", "--password", "pw", "--iterations", "8192"); out != "Set SCRAM-SHA-512 credential for user alice.\n" {
		t.Fatalf("set: %q", out)
	}
	c.ok("", "user", "scram", "set", "--user", "alice", "--password", "pw", "--mechanism", "SCRAM-SHA-256")
	c.ok("", "user", "scram", "set", "--user", "bob", "--password", "pw")
	want := "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=4096, SCRAM-SHA-512=iterations=8192\n" +
		"SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-512=iterations=4096\n"
	if out := c.ok("", "user", "scram", "list"); out != want {
		t.Fatalf("list:\n%s\nwant:\n%s", out, want)
	}
	if out := c.ok("", "user", "scram", "delete", "--user", "alice", "--mechanism", "SCRAM-SHA-256"); out != "Deleted SCRAM-SHA-256 credential for user alice.\n" {
		t.Fatalf("delete: %q", out)
	}
	c.fails(1, "RESOURCE_NOT_FOUND", "", "user", "scram", "delete", "--user", "alice", "--mechanism", "SCRAM-SHA-256")
	c.fails(1, "RESOURCE_NOT_FOUND", "", "user", "scram", "list", "--user", "nobody")
	for _, bad := range [][]string{{"--iterations", "100"}, {"--iterations", "16385"}, {"--mechanism", "MD5"}} {
		r := c.run("", append([]string{"user", "scram", "set", "--user", "x", "--password", "p"}, bad...)...)
		if r.code != 2 || !strings.Contains(r.stderr, bad[0]+" ") {
			t.Errorf("%v: exit %d, stderr %s", bad, r.code, r.stderr)
		}
	}
}

// --zookeeper writes /config/users/<user> as Kafka's kafka-configs does,
// with no broker running.
func TestUserScramZooKeeper(t *testing.T) {
	connect := clusterZK(t) + zktest.Chroot()
	c := &cli{t: t, bin: buildSluice(t)}
	zkrun := func(args ...string) result {
		return c.runEnv(nil, "", append(args, "--zookeeper", connect)...)
	}
	if r := zkrun("user", "scram", "set", "--user", "svc/broker", "--password", "broker-secret"); r.code != 0 {
		t.Fatalf("set: %d %s", r.code, r.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	zc, err := zk.Connect(ctx, connect, zk.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer zc.Close()
	data, _, err := zc.Get(zk.ConfigPath + "/users/svc%2Fbroker")
	if err != nil {
		t.Fatalf("the user's znode: %v", err)
	}
	if !strings.Contains(string(data), `"SCRAM-SHA-512":"salt=`) {
		t.Fatalf("znode %s", data)
	}
	cfgs, err := zc.EntityConfig(coordinator.UserEntity("svc/broker"))
	if err != nil {
		t.Fatal(err)
	}
	cred, err := scram.SHA512.ParseCredential(cfgs["SCRAM-SHA-512"])
	if err != nil || cred.Iterations != 4096 {
		t.Fatalf("%v %v", cred, err)
	}
	// The credential proves the password.
	s := scram.NewServer(scram.SHA512, func(string) (scram.Credential, bool) { return cred, true })
	cl := scram.NewClient(scram.SHA512, "svc/broker", "broker-secret")
	sf, _, err := s.Step(cl.First())
	if err != nil {
		t.Fatal(err)
	}
	final, err := cl.Final(sf)
	if err != nil {
		t.Fatal(err)
	}
	if _, done, err := s.Step(final); !done || err != nil {
		t.Fatalf("the stored credential does not verify: %v", err)
	}
	if r := zkrun("user", "scram", "list"); r.code != 0 || r.stdout != "SCRAM credential configs for user-principal 'svc/broker' are SCRAM-SHA-512=iterations=4096\n" {
		t.Fatalf("list: %d %q %s", r.code, r.stdout, r.stderr)
	}
	if r := zkrun("user", "scram", "delete", "--user", "svc/broker"); r.code != 0 {
		t.Fatalf("delete: %d %s", r.code, r.stderr)
	}
	if r := zkrun("user", "scram", "delete", "--user", "svc/broker"); r.code != 1 || !strings.Contains(r.stderr, "no SCRAM-SHA-512 credential") {
		t.Fatalf("delete again: %d %s", r.code, r.stderr)
	}
}
