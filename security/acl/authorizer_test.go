package acl

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

var (
	alice = Principal{"User", "alice"}
	bob   = Principal{"User", "bob"}
)

func lit(t ResourceType, name string) Resource { return Resource{t, name, PatternLiteral} }
func pre(t ResourceType, name string) Resource { return Resource{t, name, PatternPrefixed} }
func allow(p Principal, op Operation) Entry    { return Entry{p, "*", op, Allow} }
func deny(p Principal, op Operation) Entry     { return Entry{p, "*", op, Deny} }

func TestAuthorizeRules(t *testing.T) {
	a := New([]Principal{{"User", "admin"}}, false)
	a.Set(map[Resource][]Entry{
		lit(ResourceTopic, "orders"):   {allow(alice, OpRead), deny(bob, OpAll)},
		lit(ResourceTopic, "*"):        {allow(bob, OpWrite)},
		pre(ResourceTopic, "logs-"):    {allow(WildcardPrincipal, OpDescribe)},
		pre(ResourceTopic, "logs-sec"): {deny(alice, OpDescribe)},
		lit(ResourceGroup, "g1"):       {{alice, "10.0.0.1", OpRead, Allow}},
		lit(ResourceCluster, ClusterName): {
			allow(alice, OpAlterConfigs), allow(alice, OpAll), deny(alice, OpCreate),
		},
	})
	cases := []struct {
		p    Principal
		host string
		op   Operation
		rt   ResourceType
		name string
		want bool
	}{
		{alice, "1.2.3.4", OpRead, ResourceTopic, "orders", true},
		{alice, "1.2.3.4", OpDescribe, ResourceTopic, "orders", true}, // implied by Read
		{alice, "1.2.3.4", OpWrite, ResourceTopic, "orders", false},
		{bob, "1.2.3.4", OpWrite, ResourceTopic, "orders", false},     // DENY All wins over "*" ALLOW
		{bob, "1.2.3.4", OpWrite, ResourceTopic, "payments", true},    // literal "*"
		{bob, "1.2.3.4", OpDescribe, ResourceTopic, "payments", true}, // Write implies Describe
		{bob, "1.2.3.4", OpRead, ResourceTopic, "payments", false},
		{bob, "1.2.3.4", OpDescribe, ResourceTopic, "logs-app", true}, // prefixed, User:*
		{alice, "1.2.3.4", OpDescribe, ResourceTopic, "logs-security", false},
		{alice, "1.2.3.4", OpDescribe, ResourceTopic, "logs-app", true},
		{alice, "10.0.0.1", OpRead, ResourceGroup, "g1", true},
		{alice, "10.0.0.2", OpRead, ResourceGroup, "g1", false}, // host
		{alice, "10.0.0.2", OpRead, ResourceGroup, "g2", false}, // no ACL, allow.everyone false
		{Principal{"User", "admin"}, "h", OpDelete, ResourceGroup, "g2", true},
		{alice, "h", OpDescribeConfigs, ResourceCluster, ClusterName, true},
		{alice, "h", OpClusterAction, ResourceCluster, ClusterName, true}, // All
		{alice, "h", OpCreate, ResourceCluster, ClusterName, false},       // DENY beats All
		{bob, "h", OpDescribe, ResourceCluster, ClusterName, false},
	}
	for _, c := range cases {
		if got := a.Authorize(c.p, c.host, c.op, c.rt, c.name); got != c.want {
			t.Errorf("Authorize(%s, %s, %s, %s, %q) = %v, want %v", c.p, c.host, c.op, c.rt, c.name, got, c.want)
		}
	}
}

func TestAllowEveryoneIfNoACL(t *testing.T) {
	a := New(nil, true)
	a.Set(map[Resource][]Entry{lit(ResourceTopic, "orders"): {allow(alice, OpRead)}})
	if !a.Authorize(bob, "h", OpWrite, ResourceTopic, "other") {
		t.Error("no ACL on other: want allowed")
	}
	if a.Authorize(bob, "h", OpRead, ResourceTopic, "orders") {
		t.Error("orders has an ACL (not bob's): want denied")
	}
	a.Set(map[Resource][]Entry{lit(ResourceTopic, "orders"): nil})
	if !a.Authorize(bob, "h", OpRead, ResourceTopic, "orders") {
		t.Error("orders' ACLs removed: want allowed")
	}
}

// model is Authorize written straight from Kafka's AclAuthorizer as a
// scan over every binding, the reference the index must agree with.
func model(bindings []Binding, super map[Principal]bool, allowNoACL bool, p Principal, host string, op Operation, rt ResourceType, name string) bool {
	if super[p] {
		return true
	}
	var matching []Entry
	for _, b := range bindings {
		r := b.Resource
		if r.Type != rt {
			continue
		}
		if (r.Pattern == PatternLiteral && (r.Name == name || r.Name == "*")) ||
			(r.Pattern == PatternPrefixed && strings.HasPrefix(name, r.Name)) {
			matching = append(matching, b.Entry)
		}
	}
	if len(matching) == 0 {
		return allowNoACL
	}
	match := func(e Entry, perm Permission, o Operation) bool {
		return e.Permission == perm && (e.Principal == p || e.Principal == WildcardPrincipal) &&
			(e.Operation == o || e.Operation == OpAll) && (e.Host == host || e.Host == "*")
	}
	for _, e := range matching {
		if match(e, Deny, op) {
			return false
		}
	}
	implied := []Operation{op}
	switch op {
	case OpDescribe:
		implied = []Operation{OpDescribe, OpRead, OpWrite, OpDelete, OpAlter}
	case OpDescribeConfigs:
		implied = []Operation{OpDescribeConfigs, OpAlterConfigs}
	}
	for _, e := range matching {
		for _, o := range implied {
			if match(e, Allow, o) {
				return true
			}
		}
	}
	return false
}

func TestAuthorizeAgreesWithScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"a", "ab", "abc", "abd", "b", "ba", "*", "abcd", "x", "xy"}
	principals := []Principal{alice, bob, WildcardPrincipal, {"User", "carol"}}
	hosts := []string{"*", "1.1.1.1", "2.2.2.2"}
	for round := range 200 {
		allowNoACL := round%2 == 0
		super := map[Principal]bool{{"User", "carol"}: round%3 == 0}
		var bindings []Binding
		changes := map[Resource][]Entry{}
		for range rng.IntN(30) {
			r := Resource{ResourceType(2 + rng.IntN(2)), names[rng.IntN(len(names))], PatternType(3 + rng.IntN(2))}
			e := Entry{principals[rng.IntN(len(principals))], hosts[rng.IntN(len(hosts))],
				Operation(2 + rng.IntN(10)), Permission(2 + rng.IntN(2))}
			changes[r] = AddEntries(changes[r], []Entry{e})
		}
		for r, es := range changes {
			for _, e := range es {
				bindings = append(bindings, Binding{r, e})
			}
		}
		var supers []Principal
		for p, ok := range super {
			if ok {
				supers = append(supers, p)
			}
		}
		a := New(supers, allowNoACL)
		a.Set(changes)
		for range 200 {
			p := principals[rng.IntN(len(principals))]
			host := hosts[1+rng.IntN(2)]
			op := Operation(3 + rng.IntN(10))
			rt := ResourceType(2 + rng.IntN(2))
			name := names[rng.IntN(len(names))]
			if rng.IntN(4) == 0 {
				name += "zz"
			}
			want := model(bindings, super, allowNoACL, p, host, op, rt, name)
			if got := a.Authorize(p, host, op, rt, name); got != want {
				t.Fatalf("round %d: Authorize(%s, %s, %s, %s, %q) = %v, scan says %v; bindings %v", round, p, host, op, rt, name, got, want, bindings)
			}
		}
	}
}

func TestFilters(t *testing.T) {
	s := func(v string) *string { return &v }
	a := New(nil, false)
	a.Set(map[Resource][]Entry{
		lit(ResourceTopic, "orders"): {allow(alice, OpRead), allow(bob, OpWrite)},
		lit(ResourceTopic, "*"):      {allow(bob, OpRead)},
		pre(ResourceTopic, "ord"):    {allow(alice, OpDescribe)},
		pre(ResourceTopic, "x"):      {allow(alice, OpDescribe)},
		lit(ResourceGroup, "orders"): {allow(alice, OpRead)},
	})
	count := func(f Filter) int { return len(a.Bindings(f)) }
	any := Filter{Type: ResourceAny, Pattern: PatternAny, Operation: OpAny, Perm: PermissionAny}
	if n := count(any); n != 6 {
		t.Errorf("any: %d bindings, want 6", n)
	}
	f := any
	f.Type, f.Name, f.Pattern = ResourceTopic, s("orders"), PatternMatch
	if n := count(f); n != 4 { // orders (2), "*", prefix "ord"
		t.Errorf("match orders: %d, want 4", n)
	}
	f.Pattern = PatternAny
	if n := count(f); n != 2 {
		t.Errorf("any-pattern orders: %d, want 2", n)
	}
	f.Pattern = PatternPrefixed
	if n := count(f); n != 0 {
		t.Errorf("prefixed orders: %d, want 0", n)
	}
	f = any
	f.Principal = s("User:bob")
	if n := count(f); n != 2 {
		t.Errorf("principal bob: %d, want 2", n)
	}
	// Deletion attributes each entry to its first matching filter.
	r := lit(ResourceTopic, "orders")
	fa, fb := any, any
	fb.Principal = s("User:bob")
	kept, removed, by := RemoveEntries(r, a.Entries(r), []Filter{fb, fa})
	if len(kept) != 0 || len(removed) != 2 || by[0] != 1 || by[1] != 0 {
		t.Errorf("RemoveEntries: kept %v removed %v by %v", kept, removed, by)
	}
	exact := any
	exact.Type, exact.Name, exact.Pattern = ResourceTopic, s("new"), PatternLiteral
	if got := a.DeleteTargets([]Filter{exact}); len(got) != 1 || got[0] != lit(ResourceTopic, "new") {
		t.Errorf("DeleteTargets exact: %v", got)
	}
}

func TestAuthorizeByResourceType(t *testing.T) {
	a := New(nil, false)
	if a.AuthorizeByResourceType(alice, "h", OpWrite, ResourceTopic) {
		t.Error("no ACLs: want denied")
	}
	a.Set(map[Resource][]Entry{lit(ResourceTopic, "t1"): {allow(alice, OpWrite)}})
	if !a.AuthorizeByResourceType(alice, "h", OpWrite, ResourceTopic) {
		t.Error("Write on t1: want allowed")
	}
	a.Set(map[Resource][]Entry{pre(ResourceTopic, "t"): {deny(alice, OpWrite)}})
	if a.AuthorizeByResourceType(alice, "h", OpWrite, ResourceTopic) {
		t.Error("t1 dominated by DENY prefix t: want denied")
	}
}

func TestJSONRoundTrip(t *testing.T) {
	entries := []Entry{allow(alice, OpDescribeConfigs), {bob, "10.1.2.3", OpIdempotentWrite, Deny}}
	data := EncodeEntries(entries)
	want := `{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"DescribeConfigs","host":"*"},{"principal":"User:bob","permissionType":"Deny","operation":"IdempotentWrite","host":"10.1.2.3"}]}`
	if string(data) != want {
		t.Fatalf("encoded %s\nwant    %s", data, want)
	}
	got, err := DecodeEntries(data, "test")
	if err != nil || fmt.Sprint(got) != fmt.Sprint(entries) {
		t.Fatalf("decoded %v, %v", got, err)
	}
	if _, err := DecodeEntries([]byte(`{"version":1,"acls":[{"principal":"User:a","permissionType":"Allow","operation":"Fly","host":"*"}]}`), "/kafka-acl/Topic/x"); err == nil || !strings.Contains(err.Error(), "/kafka-acl/Topic/x") {
		t.Errorf("bad operation: %v", err)
	}
	for _, r := range []Resource{lit(ResourceTransactionalID, "tx:1"), pre(ResourceGroup, "g-")} {
		back, err := DecodeChange(EncodeChange(r), r.Pattern == PatternPrefixed, "test")
		if err != nil || back != r {
			t.Errorf("change %v: %v, %v", r, back, err)
		}
	}
	if s := string(EncodeChange(lit(ResourceTopic, "t"))); s != "TOPIC:t" {
		t.Errorf("literal change %q", s)
	}
	if s := string(EncodeChange(pre(ResourceTopic, "t"))); s != `{"version":1,"resourceType":"TOPIC","name":"t","patternType":"PREFIXED"}` {
		t.Errorf("extended change %s", s)
	}
}

// BenchmarkAuthorize measures one Authorize with 10,000 ACLs: 4,000
// literal topics, 4,000 prefixed topic patterns, 2,000 groups, each with
// one ALLOW and a principal that matches none of them; the queried name
// has a literal ACL and three prefixed ones on its path. The scan baseline
// is the model above over the same bindings.
func BenchmarkAuthorize(b *testing.B) {
	a := New(nil, false)
	changes := map[Resource][]Entry{}
	var bindings []Binding
	for i := range 4000 {
		changes[lit(ResourceTopic, fmt.Sprintf("topic-%05d", i))] = []Entry{allow(Principal{"User", fmt.Sprintf("u%d", i)}, OpRead)}
		changes[pre(ResourceTopic, fmt.Sprintf("app-%04d-", i))] = []Entry{allow(Principal{"User", fmt.Sprintf("u%d", i)}, OpWrite)}
	}
	for i := range 2000 {
		changes[lit(ResourceGroup, fmt.Sprintf("group-%05d", i))] = []Entry{allow(Principal{"User", fmt.Sprintf("u%d", i)}, OpRead)}
	}
	changes[pre(ResourceTopic, "app-")] = []Entry{deny(bob, OpAll)}
	changes[pre(ResourceTopic, "app-0042-x")] = []Entry{allow(alice, OpRead)}
	changes[lit(ResourceTopic, "app-0042-xyz")] = []Entry{allow(alice, OpRead)}
	for r, es := range changes {
		for _, e := range es {
			bindings = append(bindings, Binding{r, e})
		}
	}
	a.Set(changes)
	if n := a.Count(); n < 10000 {
		b.Fatalf("%d ACLs", n)
	}
	if !a.Authorize(alice, "127.0.0.1", OpRead, ResourceTopic, "app-0042-xyz") {
		b.Fatal("want allowed")
	}
	b.Run("index", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !a.Authorize(alice, "127.0.0.1", OpRead, ResourceTopic, "app-0042-xyz") {
				b.Fatal("denied")
			}
		}
	})
	b.Run("index-miss", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if a.Authorize(alice, "127.0.0.1", OpRead, ResourceTopic, "payments-eu-1") {
				b.Fatal("allowed")
			}
		}
	})
	b.Run("scan-baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			model(bindings, nil, false, alice, "127.0.0.1", OpRead, ResourceTopic, "app-0042-xyz")
		}
	})
}
