package main

// sluice acl, against an in-process broker with the ACL authorizer (the
// CLI's User:ANONYMOUS a super user, so that it may change ACLs).

import (
	"strings"
	"testing"

	"github.com/sluice-io/sluice/broker"
	"github.com/sluice-io/sluice/config"
)

func startACLBroker(t *testing.T) string {
	t.Helper()
	return startInProcessBroker(t, config.Config{
		Authz: config.AuthzConfig{ClassName: "kafka.security.authorizer.AclAuthorizer", SuperUsers: []broker.Principal{broker.Anonymous}}})
}

func TestACLCommand(t *testing.T) {
	c := &cli{t: t, bin: buildSluice(t), brokers: startACLBroker(t)}
	out := c.ok("", "acl", "add", "--allow-principal", "User:alice", "--allow-principal", "User:bob",
		"--operation", "Read", "--operation", "describe", "--topic", "orders")
	// The product, in principal then operation order.
	want := "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`: \n" +
		" \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n" +
		"\t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)\n" +
		"\t(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)\n" +
		"\t(principal=User:bob, host=*, operation=DESCRIBE, permissionType=ALLOW) \n\n"
	if out != want {
		t.Fatalf("add:\n%q\nwant:\n%q", out, want)
	}
	c.ok("", "acl", "add", "--deny-principal", "User:mallory", "--deny-host", "10.0.0.1", "--operation", "Write",
		"--topic", "logs-", "--resource-pattern-type", "prefixed")
	c.ok("", "acl", "add", "--allow-principal", "User:admin", "--cluster", "--operation", "Alter")
	c.ok("", "acl", "add", "--allow-principal", "User:admin", "--group", "g1", "--operation", "Read", "--operation", "Delete")

	// One resource, exactly; all of them; those covering a name (match).
	if out := c.ok("", "acl", "list", "--topic", "orders"); out != strings.Replace(want, "Adding ACLs", "Current ACLs", 1) {
		t.Errorf("list --topic orders:\n%q", out)
	}
	all := c.ok("", "acl", "list")
	for _, r := range []string{"resourceType=TOPIC, name=orders, patternType=LITERAL", "resourceType=TOPIC, name=logs-, patternType=PREFIXED",
		"resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL", "resourceType=GROUP, name=g1, patternType=LITERAL"} {
		if strings.Count(all, "Current ACLs for resource `ResourcePattern("+r+")`") != 1 {
			t.Errorf("list lacks %s:\n%s", r, all)
		}
	}
	match := c.ok("", "acl", "list", "--topic", "logs-app", "--resource-pattern-type", "match")
	if !strings.Contains(match, "name=logs-, patternType=PREFIXED") || !strings.Contains(match, "(principal=User:mallory, host=10.0.0.1, operation=WRITE, permissionType=DENY)") || strings.Contains(match, "orders") {
		t.Errorf("list --topic logs-app --resource-pattern-type match:\n%s", match)
	}

	// Remove what the principals name, then a resource's every ACL.
	out = c.ok("", "acl", "remove", "--topic", "orders", "--allow-principal", "User:bob", "--operation", "Read")
	if out != "Removed ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`: \n \t(principal=User:bob, host=*, operation=READ, permissionType=ALLOW) \n\n" {
		t.Errorf("remove bob's Read:\n%q", out)
	}
	if out := c.ok("", "acl", "list", "--topic", "orders"); strings.Count(out, "(principal=") != 3 || strings.Contains(out, "User:bob, host=*, operation=READ") {
		t.Errorf("after the removal:\n%s", out)
	}
	c.ok("", "acl", "remove", "--group", "g1", "--force")
	if out := c.ok("", "acl", "list", "--group", "g1"); out != "" {
		t.Errorf("g1 after removing all its ACLs:\n%s", out)
	}

	// Misuse: exit 2, before asking the broker.
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"acl", "add", "--topic", "t"}, "--allow-principal, --deny-principal"},
		{[]string{"acl", "add", "--allow-principal", "User:a"}, "at least one resource"},
		{[]string{"acl", "add", "--allow-principal", "alice", "--topic", "t"}, "not Type:name"},
		{[]string{"acl", "add", "--allow-principal", "User:a", "--operation", "IdempotentWrite", "--topic", "t"}, "only supports operations"},
		{[]string{"acl", "add", "--allow-principal", "User:a", "--operation", "Fly", "--topic", "t"}, "not an operation"},
		{[]string{"acl", "add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "match"}, "literal or prefixed"},
		{[]string{"acl", "remove"}, "at least one resource"},
	} {
		r := c.run("", bad.args...)
		if r.code != 2 || !strings.Contains(r.stderr, bad.want) {
			t.Errorf("%v: exit %d, stderr %s", bad.args, r.code, r.stderr)
		}
	}

	// A broker without an authorizer says so.
	plain := &cli{t: t, bin: c.bin, brokers: startBenchBroker(t)}
	plain.fails(1, "SECURITY_DISABLED", "", "acl", "list")
}

// kafka-acls' --producer and --consumer shortcuts add the operations a
// producer and a consumer need, and list --principal shows one
// principal's ACLs.
func TestACLCommandShortcuts(t *testing.T) {
	c := &cli{t: t, bin: buildSluice(t), brokers: startACLBroker(t)}
	out := c.ok("", "acl", "add", "--producer", "--idempotent", "--allow-principal", "User:writer", "--topic", "orders", "--transactional-id", "tx-1")
	for _, want := range []string{
		"name=orders, patternType=LITERAL)`: \n \t(principal=User:writer, host=*, operation=WRITE, permissionType=ALLOW)\n\t(principal=User:writer, host=*, operation=DESCRIBE, permissionType=ALLOW)\n\t(principal=User:writer, host=*, operation=CREATE, permissionType=ALLOW) \n",
		"resourceType=TRANSACTIONAL_ID, name=tx-1, patternType=LITERAL)`: \n \t(principal=User:writer, host=*, operation=WRITE, permissionType=ALLOW)\n\t(principal=User:writer, host=*, operation=DESCRIBE, permissionType=ALLOW) \n",
		"resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)`: \n \t(principal=User:writer, host=*, operation=IDEMPOTENT_WRITE, permissionType=ALLOW) \n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("add --producer lacks %q:\n%s", want, out)
		}
	}
	out = c.ok("", "acl", "add", "--consumer", "--allow-principal", "User:reader", "--topic", "orders", "--group", "billing")
	for _, want := range []string{
		"name=orders, patternType=LITERAL)`: \n \t(principal=User:reader, host=*, operation=READ, permissionType=ALLOW)\n\t(principal=User:reader, host=*, operation=DESCRIBE, permissionType=ALLOW) \n",
		"resourceType=GROUP, name=billing, patternType=LITERAL)`: \n \t(principal=User:reader, host=*, operation=READ, permissionType=ALLOW) \n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("add --consumer lacks %q:\n%s", want, out)
		}
	}
	out = c.ok("", "acl", "list", "--principal", "User:reader")
	want := "ACLs for principal `User:reader`\n" +
		"Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`: \n \t(principal=User:reader, host=*, operation=READ, permissionType=ALLOW)\n\t(principal=User:reader, host=*, operation=DESCRIBE, permissionType=ALLOW) \n\n" +
		"Current ACLs for resource `ResourcePattern(resourceType=GROUP, name=billing, patternType=LITERAL)`: \n \t(principal=User:reader, host=*, operation=READ, permissionType=ALLOW) \n\n"
	if out != want {
		t.Errorf("list --principal User:reader:\n%q\nwant\n%q", out, want)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"acl", "add", "--consumer", "--allow-principal", "User:x", "--topic", "t"}, "--consumer you must specify a --topic and a --group"},
		{[]string{"acl", "add", "--producer", "--operation", "Read", "--allow-principal", "User:x", "--topic", "t"}, "cannot be combined"},
		{[]string{"acl", "add", "--consumer", "--idempotent", "--allow-principal", "User:x", "--topic", "t", "--group", "g"}, "--idempotent is only with --producer"},
		{[]string{"acl", "add", "--producer", "--topic", "t"}, "--allow-principal, --deny-principal"},
	} {
		if r := c.run("", bad.args...); r.code != 2 || !strings.Contains(r.stderr, bad.want) {
			t.Errorf("%v: exit %d, stderr %s", bad.args, r.code, r.stderr)
		}
	}
}
