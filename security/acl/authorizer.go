package acl

// The Authorizer: the current snapshot behind an atomic pointer, the super
// users and allow.everyone.if.no.acl.found. Writers (the broker applying a
// CreateAcls, DeleteAcls or a change another broker announced) serialize
// on mu and publish a new snapshot; readers load the pointer and never
// block.

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Authorizer answers Authorize from the ACLs it was last given.
type Authorizer struct {
	superUsers   map[Principal]bool
	allowIfNoACL bool
	snap         atomic.Pointer[snapshot]
	mu           sync.Mutex // serializes writers; readers never take it
}

// New returns an authorizer with no ACLs. superUsers are always allowed;
// allowIfNoACL is allow.everyone.if.no.acl.found.
func New(superUsers []Principal, allowIfNoACL bool) *Authorizer {
	a := &Authorizer{superUsers: map[Principal]bool{}, allowIfNoACL: allowIfNoACL}
	for _, p := range superUsers {
		a.superUsers[p] = true
	}
	a.snap.Store(build(map[Resource][]Entry{}))
	return a
}

// IsSuperUser reports whether p is one of super.users.
func (a *Authorizer) IsSuperUser(p Principal) bool { return a.superUsers[p] }

// Authorize reports whether p, connected from host (an IP address as
// Kafka prints it), may perform op on the resource of type rt named name.
func (a *Authorizer) Authorize(p Principal, host string, op Operation, rt ResourceType, name string) bool {
	if len(a.superUsers) > 0 && a.superUsers[p] {
		return true
	}
	allowed, found := a.snap.Load().authorize(p, host, op, rt, name)
	if !found {
		return a.allowIfNoACL
	}
	return allowed
}

// AuthorizeByResourceType reports whether p may perform op on at least one
// resource of type rt, as Kafka's AclAuthorizer.authorizeByResourceType
// decides it (used for the idempotent producer's Write on any topic): a
// DENY on the literal "*" refuses; allow.everyone.if.no.acl.found allows;
// otherwise some ALLOW must not be dominated by a DENY of the same name or
// of a prefix of it. Only ACLs of p (or User:*), host (or "*") and op (or
// All) count, with no implied operations. It scans the type's ACLs.
func (a *Authorizer) AuthorizeByResourceType(p Principal, host string, op Operation, rt ResourceType) bool {
	if a.superUsers[p] {
		return true
	}
	s := a.snap.Load()
	names := func(perm Permission, pat PatternType) map[string]bool {
		out := map[string]bool{}
		for r, entries := range s.acls {
			if r.Type != rt || r.Pattern != pat {
				continue
			}
			for _, e := range entries {
				if e.Permission == perm && (e.Principal == p || e.Principal == WildcardPrincipal) &&
					(e.Host == host || e.Host == Wildcard) && (e.Operation == op || e.Operation == OpAll) {
					out[r.Name] = true
				}
			}
		}
		return out
	}
	denyLit := names(Deny, PatternLiteral)
	if denyLit[Wildcard] {
		return false
	}
	if a.allowIfNoACL {
		return true
	}
	denyPre := names(Deny, PatternPrefixed)
	allowLit, allowPre := names(Allow, PatternLiteral), names(Allow, PatternPrefixed)
	dominated := func(name string) bool {
		for i := 1; i <= len(name); i++ {
			if denyPre[name[:i]] {
				return true
			}
		}
		return false
	}
	for name := range allowPre {
		if !dominated(name) {
			return true
		}
	}
	for name := range allowLit {
		if name == Wildcard || (!denyLit[name] && !dominated(name)) {
			return true
		}
	}
	return false
}

// Entries returns the ACLs of one resource pattern (shared: do not change).
func (a *Authorizer) Entries(r Resource) []Entry { return a.snap.Load().acls[r] }

// Resources returns every resource pattern that has ACLs.
func (a *Authorizer) Resources() []Resource {
	s := a.snap.Load()
	out := make([]Resource, 0, len(s.acls))
	for r := range s.acls {
		out = append(out, r)
	}
	slices.SortFunc(out, compareResources)
	return out
}

// Bindings returns the ACLs f matches, sorted by resource.
func (a *Authorizer) Bindings(f Filter) []Binding {
	var out []Binding
	for _, r := range a.Resources() {
		if !f.MatchesResource(r) {
			continue
		}
		for _, e := range a.Entries(r) {
			if f.MatchesEntry(e) {
				out = append(out, Binding{Resource: r, Entry: e})
			}
		}
	}
	return out
}

// Count is the number of ACL entries.
func (a *Authorizer) Count() int {
	n := 0
	for _, entries := range a.snap.Load().acls {
		n += len(entries)
	}
	return n
}

// Set replaces the ACLs of the resource patterns in changes (an empty list
// removes a pattern's ACLs) and publishes the new snapshot. The lists are
// copied.
func (a *Authorizer) Set(changes map[Resource][]Entry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	old := a.snap.Load().acls
	next := make(map[Resource][]Entry, len(old)+len(changes))
	for r, e := range old {
		next[r] = e
	}
	for r, e := range changes {
		if len(e) == 0 {
			delete(next, r)
		} else {
			next[r] = slices.Clone(e)
		}
	}
	a.snap.Store(build(next))
}

// SetAll replaces every ACL with all.
func (a *Authorizer) SetAll(all map[Resource][]Entry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	next := make(map[Resource][]Entry, len(all))
	for r, e := range all {
		if len(e) > 0 {
			next[r] = slices.Clone(e)
		}
	}
	a.snap.Store(build(next))
}

// AddEntries returns cur with add appended, skipping entries already in
// it: a resource's ACLs are a set, as Kafka stores them.
func AddEntries(cur, add []Entry) []Entry {
	out := slices.Clone(cur)
	for _, e := range add {
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// RemoveEntries returns cur without the entries that a filter matching r
// matches, and the removed entries with the index of the first such filter
// for each (Kafka's AclAuthorizer.deleteAcls attributes a deleted ACL to
// the first filter that matches it).
func RemoveEntries(r Resource, cur []Entry, filters []Filter) (kept, removed []Entry, by []int) {
	for _, e := range cur {
		idx := -1
		for i, f := range filters {
			if f.MatchesResource(r) && f.MatchesEntry(e) {
				idx = i
				break
			}
		}
		if idx < 0 {
			kept = append(kept, e)
		} else {
			removed, by = append(removed, e), append(by, idx)
		}
	}
	return kept, removed, by
}

// DeleteTargets returns the resource patterns filters may delete from:
// those with ACLs that some filter matches, and those a filter names
// exactly (whose ACLs another broker may have written since).
func (a *Authorizer) DeleteTargets(filters []Filter) []Resource {
	seen := map[Resource]bool{}
	var out []Resource
	add := func(r Resource) {
		if seen[r] {
			return
		}
		for _, f := range filters {
			if f.MatchesResource(r) {
				seen[r] = true
				out = append(out, r)
				return
			}
		}
	}
	for _, r := range a.Resources() {
		add(r)
	}
	for _, f := range filters {
		if r, ok := f.ExactResource(); ok {
			add(r)
		}
	}
	return out
}

func compareResources(x, y Resource) int {
	return cmp.Or(cmp.Compare(x.Type, y.Type), cmp.Compare(x.Pattern, y.Pattern), strings.Compare(x.Name, y.Name))
}
