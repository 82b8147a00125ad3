package acl

// The read side: an immutable snapshot of every ACL, indexed for
// Authorize. Per resource type a map holds the literal names ("*"
// included) and a radix tree holds the prefixed ones; each indexed pattern
// points at its entries. Nothing in a snapshot changes after build
// returns, which is what lets Authorize read it without a lock.

import "strings"

// bigList is the entry count above which a pattern's entries are also
// indexed by principal; below it a scan is faster than two map lookups.
const bigList = 8

// aceList is the entries of one pattern.
type aceList struct {
	entries     []Entry
	byPrincipal map[Principal][]Entry // nil unless len(entries) > bigList
}

func newACEList(entries []Entry) *aceList {
	l := &aceList{entries: entries}
	if len(entries) > bigList {
		l.byPrincipal = map[Principal][]Entry{}
		for _, e := range entries {
			l.byPrincipal[e.Principal] = append(l.byPrincipal[e.Principal], e)
		}
	}
	return l
}

// node is a radix-tree node: the prefix spelled by the labels from the
// root to it, the ACLs of that prefix (nil if none), and the children,
// sorted by their labels' first bytes, which differ.
type node struct {
	label    string
	acls     *aceList
	children []*node
}

// child returns the child whose label starts with b, or nil.
func (n *node) child(b byte) *node {
	lo, hi := 0, len(n.children)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if n.children[m].label[0] < b {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(n.children) && n.children[lo].label[0] == b {
		return n.children[lo]
	}
	return nil
}

// insert stores acls at key, splitting a label where key leaves it.
func (n *node) insert(key string, acls *aceList) {
	for {
		if key == "" {
			n.acls = acls
			return
		}
		c := n.child(key[0])
		if c == nil {
			n.addChild(&node{label: key, acls: acls})
			return
		}
		common := commonPrefix(key, c.label)
		if common < len(c.label) {
			// Split c: a new node for the shared part, c below it.
			mid := &node{label: c.label[:common], children: []*node{c}}
			n.replaceChild(c, mid)
			c.label = c.label[common:]
			c = mid
		}
		key = key[common:]
		n = c
	}
}

func (n *node) addChild(c *node) {
	i := 0
	for i < len(n.children) && n.children[i].label[0] < c.label[0] {
		i++
	}
	n.children = append(n.children, nil)
	copy(n.children[i+1:], n.children[i:])
	n.children[i] = c
}

func (n *node) replaceChild(old, c *node) {
	for i, o := range n.children {
		if o == old {
			n.children[i] = c
			return
		}
	}
}

func commonPrefix(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// typeIndex is the index of one resource type.
type typeIndex struct {
	literal  map[string]*aceList
	prefixed *node // root, label ""
}

// snapshot is every ACL at one moment. acls is the source the indexes
// were built from; neither changes after build.
type snapshot struct {
	acls  map[Resource][]Entry
	types [numResourceTypes]typeIndex
}

// build indexes acls; it keeps the map and its slices, which the caller
// must not change afterwards.
func build(acls map[Resource][]Entry) *snapshot {
	s := &snapshot{acls: acls}
	for r, entries := range acls {
		if len(entries) == 0 || !r.Type.Known() {
			continue
		}
		t := &s.types[r.Type]
		switch r.Pattern {
		case PatternLiteral:
			if t.literal == nil {
				t.literal = map[string]*aceList{}
			}
			t.literal[r.Name] = newACEList(entries)
		case PatternPrefixed:
			if t.prefixed == nil {
				t.prefixed = &node{}
			}
			t.prefixed.insert(r.Name, newACEList(entries))
		}
	}
	return s
}

// Operation bit sets: bit n is operation n.
type opSet uint32

func ops(list ...Operation) opSet {
	var s opSet
	for _, o := range list {
		s |= 1 << o
	}
	return s
}

// allowedBy is, per asked operation, the ALLOW operations that grant it.
var allowedBy = func() [numOperations]opSet {
	var t [numOperations]opSet
	for o := range t {
		t[o] = ops(Operation(o), OpAll)
	}
	t[OpDescribe] = ops(OpDescribe, OpRead, OpWrite, OpDelete, OpAlter, OpAll)
	t[OpDescribeConfigs] = ops(OpDescribeConfigs, OpAlterConfigs, OpAll)
	return t
}()

// verdict accumulates a check over the ACLs matching a resource.
type verdict struct {
	p                  Principal
	host               string
	allowOps, denyOps  opSet
	found, deny, allow bool
}

func (v *verdict) checkEntries(entries []Entry) {
	for i := range entries {
		e := &entries[i]
		if e.Host != v.host && e.Host != Wildcard {
			continue
		}
		bit := opSet(1) << e.Operation
		if e.Permission == Deny {
			if v.denyOps&bit != 0 {
				v.deny = true
			}
		} else if v.allowOps&bit != 0 {
			v.allow = true
		}
	}
}

func (v *verdict) check(l *aceList) {
	v.found = true
	if l.byPrincipal != nil {
		v.checkEntries(l.byPrincipal[v.p])
		if v.p != WildcardPrincipal {
			v.checkEntries(l.byPrincipal[WildcardPrincipal])
		}
		return
	}
	for i := range l.entries {
		e := &l.entries[i]
		if e.Principal != v.p && e.Principal != WildcardPrincipal {
			continue
		}
		v.checkEntries(l.entries[i : i+1])
	}
}

// authorize runs the ACL part of Authorize on s; found is false when no
// ACL applies to the resource at all.
func (s *snapshot) authorize(p Principal, host string, op Operation, rt ResourceType, name string) (allowed, found bool) {
	if !rt.Known() || op < 0 || op >= numOperations {
		return false, false
	}
	v := verdict{p: p, host: host, allowOps: allowedBy[op], denyOps: ops(op, OpAll)}
	t := &s.types[rt]
	if t.literal != nil {
		if l := t.literal[name]; l != nil {
			v.check(l)
		}
		if name != Wildcard {
			if l := t.literal[Wildcard]; l != nil {
				v.check(l)
			}
		}
	}
	for n, rest := t.prefixed, name; n != nil && !v.deny; {
		if n.acls != nil {
			v.check(n.acls)
		}
		if rest == "" {
			break
		}
		c := n.child(rest[0])
		if c == nil || !strings.HasPrefix(rest, c.label) {
			break
		}
		rest, n = rest[len(c.label):], c
	}
	return v.allow && !v.deny, v.found
}
