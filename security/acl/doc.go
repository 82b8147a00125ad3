// Package acl is Kafka's access-control model and authorizer, with the
// semantics of Kafka 3.9's ZooKeeper-mode AclAuthorizer
// (kafka.security.authorizer.AclAuthorizer):
//
//   - A Binding ties a Resource pattern (resource type, name, LITERAL or
//     PREFIXED) to an Entry (principal, host, operation, ALLOW or DENY).
//   - Authorize(principal, host, op, type, name) collects the ACLs of the
//     literal name, of the literal "*" and of every PREFIXED pattern that
//     is a prefix of the name. A super user is always allowed. With no
//     ACL at all on the resource the answer is allow.everyone.if.no.acl.found.
//     Otherwise a matching DENY refuses; else a matching ALLOW allows.
//     An ACL matches when its principal is the caller's or "User:*", its
//     host the caller's or "*", and its operation the asked one or All; an
//     ALLOW of Read, Write, Delete or Alter also allows Describe, and an
//     ALLOW of AlterConfigs allows DescribeConfigs (DENY has no such
//     implication).
//   - Filters (DescribeAcls, DeleteAcls) follow Kafka's AclBindingFilter,
//     MATCH included.
//
// The package does no I/O and starts no goroutine: the broker loads the
// bindings from its store and hands them in. Readers take no lock: an
// Authorizer publishes an immutable snapshot through an atomic pointer and
// every change builds a new one (copy on write). Prefixed patterns live in
// a radix tree per resource type, so a name's prefixes are found in one
// walk of the name, not a scan of the patterns.
package acl
