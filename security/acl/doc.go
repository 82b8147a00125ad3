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
// The model does no I/O and starts no goroutine. Readers take no lock: an
// Authorizer publishes an immutable snapshot through an atomic pointer and
// every change builds a new one (copy on write). Prefixed patterns live in
// a radix tree per resource type, so a name's prefixes are found in one
// walk of the name, not a scan of the patterns.
//
// What each file owns:
//
//   - types.go: the enumerations (resource, pattern and operation types,
//     permissions) with Kafka's names and codes.
//   - binding.go: Principal, Resource, Entry, Binding and Filter, their
//     validation and Kafka's matching rules.
//   - index.go: the immutable snapshot and its radix trees, and the
//     DENY-then-ALLOW verdict.
//   - authorizer.go: the Authorizer (super users,
//     allow.everyone.if.no.acl.found, Authorize, Set, the set operations
//     CreateAcls and DeleteAcls apply to one resource's entries).
//   - json.go: the stored documents (Kafka's /kafka-acl znodes' JSON and
//     change notifications).
//   - state.go: the Store interface (where a broker keeps its ACLs; the
//     broker adapts its coordinator to it) and the Service: an Authorizer
//     loaded from the Store at start and reloaded, one resource pattern at
//     a time, on each change the Store notifies. A nil *Service is a broker
//     without authorizer.
//   - admin.go: the ACL APIs' logic (DescribeAcls, CreateAcls,
//     DeleteAcls) on a Service: filter and binding validation, the changes
//     through the Store then into the Authorizer, and the answers with
//     Kafka's error codes and messages. The broker's handlers only decode,
//     check the caller's cluster permission and encode.
//
// The package may call the standard library (log/slog for the Service's
// log) and franz-go's kerr for Kafka's error codes, nothing else: it must
// not import package coordinator, broker/ or anything built on them; its
// I/O goes through the Store it is given.
package acl
