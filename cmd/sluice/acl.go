package main

// sluice acl list|add|remove: ACLs through a broker (DescribeAcls,
// CreateAcls, DeleteAcls), with kafka-acls.sh's flags and output:
//
//	Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`:
//	 	(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)
//
// (a space ends the header line and the last ACL line, an empty line
// follows each resource, as kafka-acls prints them). The ACLs to add or
// remove are the product of the principals, hosts and operations given, on
// each resource given; a principal without --allow-host/--deny-host gets
// host "*", no --operation is All.

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/security/acl"
)

const aclUsage = `usage: sluice acl <command> [flags]

commands:
  list    list ACLs (all, or those of the resources given)
  add     add ACLs: --allow-principal/--deny-principal P --operation OP on a resource
  remove  remove ACLs (all of the resources given, or those the principals name)

Resources: --topic T, --group G, --transactional-id ID (each repeatable),
--cluster; --resource-pattern-type literal (default), prefixed, or for
list and remove match or any.
`

func runACL(args []string, stdout, stderr io.Writer) int {
	return runSubcommand("acl", aclUsage, map[string]func([]string, io.Writer, io.Writer) int{
		"list":   runACLList,
		"add":    runACLAdd,
		"remove": runACLRemove,
	}, args, stdout, stderr)
}

// aclFlags are kafka-acls.sh's flags.
type aclFlags struct {
	cf                          *clientFlags
	allowPrincipals, allowHosts listFlag
	denyPrincipals, denyHosts   listFlag
	operations                  listFlag
	topics, groups, txnIDs      listFlag
	cluster                     *bool
	pattern                     *string
	// add only: kafka-acls' shortcuts (shortcuts).
	producer, consumer, idempotent *bool
}

func addACLFlags(c *command, entries bool) *aclFlags {
	f := &aclFlags{cf: addClientFlags(c.fs)}
	c.fs.Var(&f.topics, "topic", "a topic (repeatable; with --resource-pattern-type prefixed, a prefix)")
	c.fs.Var(&f.groups, "group", "a consumer group (repeatable)")
	c.fs.Var(&f.txnIDs, "transactional-id", "a transactional id (repeatable)")
	f.cluster = c.fs.Bool("cluster", false, "the cluster resource")
	f.pattern = c.fs.String("resource-pattern-type", "literal", "literal, prefixed, match (list, remove) or any (list, remove)")
	if entries {
		c.fs.Var(&f.allowPrincipals, "allow-principal", "principal `Type:name` to allow, e.g. User:alice or User:* (repeatable)")
		c.fs.Var(&f.denyPrincipals, "deny-principal", "principal `Type:name` to deny (repeatable)")
		c.fs.Var(&f.allowHosts, "allow-host", "host (IP address or *) the allowed principals connect from (repeatable; default *)")
		c.fs.Var(&f.denyHosts, "deny-host", "host the denied principals connect from (repeatable; default *)")
		c.fs.Var(&f.operations, "operation", "operation: All, Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite (repeatable; default All)")
	}
	return f
}

// aclResource is a resource named on the command line.
type aclResource struct {
	typ  acl.ResourceType
	name string
}

// patternType reads --resource-pattern-type; specific requires literal or
// prefixed.
func (f *aclFlags) patternType(specific bool) (acl.PatternType, error) {
	p, ok := acl.ParsePatternType(*f.pattern)
	if !ok || p == acl.PatternUnknown || (specific && p != acl.PatternLiteral && p != acl.PatternPrefixed) {
		want := "literal, prefixed, match or any"
		if specific {
			want = "literal or prefixed when adding ACLs"
		}
		return 0, fmt.Errorf("--resource-pattern-type %q: want %s", *f.pattern, want)
	}
	return p, nil
}

// resources lists the resources given, in flag order by type; the cluster
// only with a literal pattern type, as kafka-acls.
func (f *aclFlags) resources(p acl.PatternType) []aclResource {
	var out []aclResource
	for _, t := range f.topics {
		out = append(out, aclResource{acl.ResourceTopic, strings.TrimSpace(t)})
	}
	if *f.cluster && p == acl.PatternLiteral {
		out = append(out, aclResource{acl.ResourceCluster, acl.ClusterName})
	}
	for _, g := range f.groups {
		out = append(out, aclResource{acl.ResourceGroup, strings.TrimSpace(g)})
	}
	for _, id := range f.txnIDs {
		out = append(out, aclResource{acl.ResourceTransactionalID, id})
	}
	return out
}

// entries is the product of principals, hosts and operations: ops, or
// those of --operation when ops is nil.
func (f *aclFlags) entries(ops []acl.Operation) ([]acl.Entry, error) {
	if ops == nil {
		ops = []acl.Operation{acl.OpAll}
	}
	if len(f.operations) > 0 {
		ops = nil
		for _, s := range f.operations {
			op, ok := acl.ParseOperation(strings.TrimSpace(s))
			if !ok || op <= acl.OpAny {
				return nil, fmt.Errorf("--operation %q: not an operation", s)
			}
			if !slices.Contains(ops, op) {
				ops = append(ops, op)
			}
		}
	}
	var out []acl.Entry
	add := func(principals, hosts listFlag, perm acl.Permission, flagName string) error {
		if len(hosts) == 0 {
			hosts = listFlag{acl.Wildcard}
		}
		for _, ps := range principals {
			p, err := acl.ParsePrincipal(strings.TrimSpace(ps))
			if err != nil {
				return fmt.Errorf("--%s %q: not Type:name (User:alice)", flagName, ps)
			}
			for _, h := range hosts {
				for _, op := range ops {
					out = append(out, acl.Entry{Principal: p, Host: strings.TrimSpace(h), Operation: op, Permission: perm})
				}
			}
		}
		return nil
	}
	if err := add(f.allowPrincipals, f.allowHosts, acl.Allow, "allow-principal"); err != nil {
		return nil, err
	}
	if err := add(f.denyPrincipals, f.denyHosts, acl.Deny, "deny-principal"); err != nil {
		return nil, err
	}
	return out, nil
}

// checkOperations refuses an operation a resource type does not have
// (kafka-acls' validateOperation).
func checkOperations(resources []aclResource, entries []acl.Entry) error {
	for _, r := range resources {
		supported := acl.Operations(r.typ)
		for _, e := range entries {
			if e.Operation != acl.OpAll && !slices.Contains(supported, e.Operation) {
				names := make([]string, len(supported))
				for i, op := range supported {
					names[i] = op.Name()
				}
				return fmt.Errorf("ResourceType %s only supports operations %s", r.typ.Name(), strings.Join(names, ","))
			}
		}
	}
	return nil
}

// aclPrinter prints resources' ACLs as kafka-acls does.
func printACLs(w io.Writer, header string, r acl.Resource, entries []acl.Entry) {
	lines := make([]string, len(entries))
	for i, e := range entries {
		lines[i] = "\t" + e.String()
	}
	fmt.Fprintf(w, "%s `%s`: \n %s \n\n", header, r, strings.Join(lines, "\n"))
}

func runACLList(args []string, stdout, stderr io.Writer) int {
	c := newCommand("sluice acl list", `usage: sluice acl list [--topic T] [--group G] [--transactional-id ID] [--cluster] [--resource-pattern-type P]

Prints the ACLs of the resources given (every ACL when none is given),
by resource pattern, as kafka-acls --list. With --resource-pattern-type
match, a resource's ACLs include those of the patterns that cover it
(the literal "*", prefixes). With --principal P (repeatable), only P's
ACLs, under "ACLs for principal `+"`P`"+`".
`, stdout, stderr)
	f := addACLFlags(c, false)
	var principals listFlag
	c.fs.Var(&principals, "principal", "list only this principal's ACLs, `Type:name` (repeatable)")
	if pos, code, done := c.parse(args); done {
		return code
	} else if len(pos) > 0 {
		return c.usageError("unexpected argument %q", pos[0])
	}
	p, err := f.patternType(false)
	if err != nil {
		return c.usageError("%v", err)
	}
	var filters []*kmsg.DescribeACLsRequest
	describe := func(rt acl.ResourceType, name *string, pt acl.PatternType) {
		d := kmsg.NewPtrDescribeACLsRequest()
		d.ResourceType, d.ResourceName, d.ResourcePatternType = kmsg.ACLResourceType(rt), name, kmsg.ACLResourcePatternType(pt)
		d.Operation, d.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		filters = append(filters, d)
	}
	resources := f.resources(p)
	if len(resources) == 0 {
		describe(acl.ResourceAny, nil, acl.PatternAny)
	}
	for _, r := range resources {
		describe(r.typ, kmsg.StringPtr(r.name), p)
	}
	ctx, cl, release, err := openACLClient(f.cf)
	if err != nil {
		return c.fail(err)
	}
	defer release()
	var order []acl.Resource
	got := map[acl.Resource][]acl.Entry{}
	for _, d := range filters {
		resp, err := d.RequestWith(ctx, cl)
		if err == nil {
			err = kafkaError(kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
		}
		if err != nil {
			return c.fail(fmt.Errorf("DescribeAcls: %w", err))
		}
		for _, rr := range resp.Resources {
			r := acl.Resource{Type: acl.ResourceType(rr.ResourceType), Name: rr.ResourceName, Pattern: acl.PatternType(rr.ResourcePatternType)}
			if _, seen := got[r]; !seen {
				order = append(order, r)
			}
			for _, a := range rr.ACLs {
				p, _ := acl.ParsePrincipal(a.Principal)
				e := acl.Entry{Principal: p, Host: a.Host, Operation: acl.Operation(a.Operation), Permission: acl.Permission(a.PermissionType)}
				if !slices.Contains(got[r], e) {
					got[r] = append(got[r], e)
				}
			}
		}
	}
	if len(principals) == 0 {
		for _, r := range order {
			printACLs(stdout, "Current ACLs for resource", r, got[r])
		}
		return 0
	}
	for _, ps := range principals {
		p, err := acl.ParsePrincipal(strings.TrimSpace(ps))
		if err != nil {
			return c.usageError("--principal %q: not Type:name (User:alice)", ps)
		}
		fmt.Fprintf(stdout, "ACLs for principal `%s`\n", p)
		for _, r := range order {
			var mine []acl.Entry
			for _, e := range got[r] {
				if e.Principal == p {
					mine = append(mine, e)
				}
			}
			if len(mine) > 0 {
				printACLs(stdout, "Current ACLs for resource", r, mine)
			}
		}
	}
	return 0
}

func runACLAdd(args []string, stdout, stderr io.Writer) int {
	c := newCommand("sluice acl add", `usage: sluice acl add --allow-principal|--deny-principal P [--allow-host|--deny-host H] [--operation OP] RESOURCE...

Adds, on each resource given, an ACL for each principal, host and
operation given, and prints them as kafka-acls --add. An ACL that exists
already is no change.
`, stdout, stderr)
	f := addACLFlags(c, true)
	f.producer = c.fs.Bool("producer", false, "the ACLs of a producer: Write, Describe and Create on the topics, Write and Describe on the transactional ids")
	f.consumer = c.fs.Bool("consumer", false, "the ACLs of a consumer: Read and Describe on the topics, Read on the groups")
	f.idempotent = c.fs.Bool("idempotent", false, "with --producer: also IdempotentWrite on the cluster")
	if pos, code, done := c.parse(args); done {
		return code
	} else if len(pos) > 0 {
		return c.usageError("unexpected argument %q", pos[0])
	}
	p, err := f.patternType(true)
	if err != nil {
		return c.usageError("%v", err)
	}
	plan, err := f.addPlan(p)
	if err != nil {
		return c.usageError("%v", err)
	}
	ctx, cl, release, err := openACLClient(f.cf)
	if err != nil {
		return c.fail(err)
	}
	defer release()
	for _, pr := range plan {
		r, entries := pr.resource, pr.entries
		res := acl.Resource{Type: r.typ, Name: r.name, Pattern: p}
		printACLs(stdout, "Adding ACLs for resource", res, entries)
		req := kmsg.NewPtrCreateACLsRequest()
		for _, e := range entries {
			x := kmsg.NewCreateACLsRequestCreation()
			x.ResourceType, x.ResourceName, x.ResourcePatternType = kmsg.ACLResourceType(r.typ), r.name, kmsg.ACLResourcePatternType(p)
			x.Principal, x.Host = e.Principal.String(), e.Host
			x.Operation, x.PermissionType = kmsg.ACLOperation(e.Operation), kmsg.ACLPermissionType(e.Permission)
			req.Creations = append(req.Creations, x)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			for _, x := range resp.Results {
				if err = kafkaError(kerr.ErrorForCode(x.ErrorCode), deref(x.ErrorMessage)); err != nil {
					break
				}
			}
		}
		if err != nil {
			return c.fail(fmt.Errorf("CreateAcls: %w", err))
		}
	}
	return 0
}

// kafkaACLUsage is a misuse refused with kafka-acls' own words.
type kafkaACLUsage string

func (u kafkaACLUsage) Error() string { return string(u) }

// aclPlan is one resource's ACLs to add.
type aclPlan struct {
	resource aclResource
	entries  []acl.Entry
}

// addPlan is what add adds: the product of principals, hosts and
// operations on each resource given, or, with --producer and --consumer,
// kafka-acls' operations for each kind of resource.
func (f *aclFlags) addPlan(p acl.PatternType) ([]aclPlan, error) {
	resources := f.resources(p)
	short := *f.producer || *f.consumer
	switch {
	case short && len(f.operations) > 0:
		return nil, fmt.Errorf("--operation cannot be combined with --producer or --consumer")
	case *f.idempotent && !*f.producer:
		return nil, fmt.Errorf("--idempotent is only with --producer")
	case *f.producer && len(f.topics) == 0:
		return nil, kafkaACLUsage("With --producer you must specify a --topic")
	case *f.consumer && (len(f.topics) == 0 || len(f.groups) == 0):
		return nil, kafkaACLUsage("With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id option should be specified.")
	case len(resources) == 0:
		return nil, kafkaACLUsage("You must provide at least one resource: --topic <topic> or --cluster or --group <group> or --transactional-id <id>")
	}
	if !short {
		entries, err := f.entries(nil)
		switch {
		case err != nil:
			return nil, err
		case len(entries) == 0:
			return nil, kafkaACLUsage("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
		}
		if err := checkOperations(resources, entries); err != nil {
			return nil, err
		}
		var out []aclPlan
		for _, r := range resources {
			out = append(out, aclPlan{r, entries})
		}
		return out, nil
	}
	ops := map[aclResource][]acl.Operation{}
	add := func(r aclResource, o ...acl.Operation) {
		for _, op := range o {
			if !slices.Contains(ops[r], op) {
				ops[r] = append(ops[r], op)
			}
		}
	}
	for _, r := range resources {
		switch {
		case r.typ == acl.ResourceTopic && *f.producer:
			add(r, acl.OpWrite, acl.OpDescribe, acl.OpCreate)
		case r.typ == acl.ResourceTransactionalID && *f.producer:
			add(r, acl.OpWrite, acl.OpDescribe)
		}
		switch {
		case r.typ == acl.ResourceTopic && *f.consumer:
			add(r, acl.OpRead, acl.OpDescribe)
		case r.typ == acl.ResourceGroup && *f.consumer:
			add(r, acl.OpRead)
		}
	}
	if *f.idempotent {
		cluster := aclResource{acl.ResourceCluster, acl.ClusterName}
		if !slices.Contains(resources, cluster) {
			resources = append(resources, cluster)
		}
		add(cluster, acl.OpIdempotentWrite)
	}
	var out []aclPlan
	for _, r := range resources {
		if len(ops[r]) == 0 {
			continue
		}
		entries, err := f.entries(ops[r])
		switch {
		case err != nil:
			return nil, err
		case len(entries) == 0:
			return nil, kafkaACLUsage("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
		}
		out = append(out, aclPlan{r, entries})
	}
	return out, nil
}

func runACLRemove(args []string, stdout, stderr io.Writer) int {
	c := newCommand("sluice acl remove", `usage: sluice acl remove RESOURCE... [--allow-principal|--deny-principal P [--allow-host|--deny-host H] [--operation OP]]

Removes, from each resource given, the ACLs the principals, hosts and
operations given name, or every ACL without principals, and prints what
was removed. With --resource-pattern-type match or any, the resource
filters match as kafka-acls --remove's do. There is no confirmation:
--force is accepted for kafka-acls' sake.
`, stdout, stderr)
	f := addACLFlags(c, true)
	c.fs.Bool("force", false, "accepted for kafka-acls' sake: remove never asks")
	if pos, code, done := c.parse(args); done {
		return code
	} else if len(pos) > 0 {
		return c.usageError("unexpected argument %q", pos[0])
	}
	p, err := f.patternType(false)
	if err != nil {
		return c.usageError("%v", err)
	}
	resources := f.resources(p)
	entries, err := f.entries(nil)
	switch {
	case err != nil:
		return c.usageError("%v", err)
	case len(resources) == 0:
		return c.usageError("You must provide at least one resource: --topic <topic> or --cluster or --group <group> or --transactional-id <id>")
	}
	if err := checkOperations(resources, entries); err != nil {
		return c.usageError("%v", err)
	}
	req := kmsg.NewPtrDeleteACLsRequest()
	for _, r := range resources {
		filter := func() kmsg.DeleteACLsRequestFilter {
			x := kmsg.NewDeleteACLsRequestFilter()
			x.ResourceType, x.ResourceName, x.ResourcePatternType = kmsg.ACLResourceType(r.typ), kmsg.StringPtr(r.name), kmsg.ACLResourcePatternType(p)
			x.Operation, x.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			return x
		}
		if len(entries) == 0 {
			req.Filters = append(req.Filters, filter())
		}
		for _, e := range entries {
			x := filter()
			x.Principal, x.Host = kmsg.StringPtr(e.Principal.String()), kmsg.StringPtr(e.Host)
			x.Operation, x.PermissionType = kmsg.ACLOperation(e.Operation), kmsg.ACLPermissionType(e.Permission)
			req.Filters = append(req.Filters, x)
		}
	}
	ctx, cl, release, err := openACLClient(f.cf)
	if err != nil {
		return c.fail(err)
	}
	defer release()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return c.fail(fmt.Errorf("DeleteAcls: %w", err))
	}
	var order []acl.Resource
	removed := map[acl.Resource][]acl.Entry{}
	for _, x := range resp.Results {
		if err := kafkaError(kerr.ErrorForCode(x.ErrorCode), deref(x.ErrorMessage)); err != nil {
			return c.fail(fmt.Errorf("DeleteAcls: %w", err))
		}
		for _, m := range x.MatchingACLs {
			r := acl.Resource{Type: acl.ResourceType(m.ResourceType), Name: m.ResourceName, Pattern: acl.PatternType(m.ResourcePatternType)}
			if _, seen := removed[r]; !seen {
				order = append(order, r)
			}
			pr, _ := acl.ParsePrincipal(m.Principal)
			removed[r] = append(removed[r], acl.Entry{Principal: pr, Host: m.Host, Operation: acl.Operation(m.Operation), Permission: acl.Permission(m.PermissionType)})
		}
	}
	for _, r := range order {
		printACLs(stdout, "Removed ACLs for resource", r, removed[r])
	}
	return 0
}

// openACLClient opens a client for cf's brokers with an admin context;
// release ends both.
func openACLClient(cf *clientFlags) (context.Context, *kgo.Client, func(), error) {
	ctx, cancel := adminContext()
	cl, err := cf.client(ctx)
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return ctx, cl, func() { cl.Close(); cancel() }, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
