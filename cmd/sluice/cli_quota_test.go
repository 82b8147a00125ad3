package main

// sluice quota describe|alter against a broker.

import "testing"

func TestQuotaCommands(t *testing.T) {
	c := newCLI(t)
	if out := c.ok("", "quota", "alter", "--user", "alice", "--client-id", "c1", "--add", "producer_byte_rate=1048576,request_percentage=12.5"); out != "Completed updating config for user-principal 'alice', client-id 'c1'.\n" {
		t.Errorf("alter: %q", out)
	}
	c.ok("", "quota", "alter", "--client-id-default", "--add", "consumer_byte_rate=20000000")
	c.ok("", "quota", "alter", "--user", "alice", "--add", "producer_byte_rate=500")
	want := "Quota configs for the default client-id are consumer_byte_rate=2.0E7\n" +
		"Quota configs for user-principal 'alice' are producer_byte_rate=500.0\n" +
		"Quota configs for user-principal 'alice', client-id 'c1' are producer_byte_rate=1048576.0, request_percentage=12.5\n"
	if out := c.ok("", "quota", "describe"); out != want {
		t.Errorf("describe:\n%s\nwant:\n%s", out, want)
	}
	// One entity, strictly.
	if out := c.ok("", "quota", "describe", "--user", "alice"); out != "Quota configs for user-principal 'alice' are producer_byte_rate=500.0\n" {
		t.Errorf("describe --user alice: %q", out)
	}
	if out := c.ok("", "quota", "describe", "--client-id-default"); out != "Quota configs for the default client-id are consumer_byte_rate=2.0E7\n" {
		t.Errorf("describe --client-id-default: %q", out)
	}
	c.ok("", "quota", "alter", "--user", "alice", "--client-id", "c1", "--delete", "producer_byte_rate")
	if out := c.ok("", "quota", "describe", "--user", "alice", "--client-id", "c1"); out != "Quota configs for user-principal 'alice', client-id 'c1' are request_percentage=12.5\n" {
		t.Errorf("after --delete: %q", out)
	}
	c.fails(1, "Configuration producer_byte_rate must be a LONG value", "", "quota", "alter", "--client-id", "x", "--add", "producer_byte_rate=1.5")
	c.fails(1, "Invalid configuration key no_such", "", "quota", "alter", "--client-id", "x", "--add", "no_such=1")
	if r := c.run("", "quota", "alter", "--add", "producer_byte_rate=1"); r.code != 2 {
		t.Errorf("alter without an entity: exit %d", r.code)
	}
	if r := c.run("", "quota", "alter", "--user", "a", "--user-default", "--add", "producer_byte_rate=1"); r.code != 2 {
		t.Errorf("--user with --user-default: exit %d", r.code)
	}
}
