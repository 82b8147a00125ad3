package acl

import (
	"errors"
	"io"
	"log/slog"
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// memStore is a Store in memory. A change made by "another broker" is
// written with external, which notifies as the store would.
type memStore struct {
	acls     map[Resource][]Entry
	onChange func(Resource)
	failWith error // UpdateACLs and ACLs fail with it when set
	updates  int
}

func newMemStore() *memStore { return &memStore{acls: map[Resource][]Entry{}} }

func (m *memStore) LoadACLs() (map[Resource][]Entry, error) {
	if m.failWith != nil {
		return nil, m.failWith
	}
	return maps.Clone(m.acls), nil
}

func (m *memStore) ACLs(r Resource) ([]Entry, error) {
	if m.failWith != nil {
		return nil, m.failWith
	}
	return slices.Clone(m.acls[r]), nil
}

func (m *memStore) UpdateACLs(r Resource, change func([]Entry) ([]Entry, error)) ([]Entry, error) {
	if m.failWith != nil {
		return nil, m.failWith
	}
	next, err := change(slices.Clone(m.acls[r]))
	if err != nil {
		return nil, err
	}
	m.updates++
	if len(next) == 0 {
		delete(m.acls, r)
	} else {
		m.acls[r] = slices.Clone(next)
	}
	return next, nil
}

func (m *memStore) OnACLChange(fn func(Resource)) { m.onChange = fn }

func (m *memStore) external(r Resource, entries []Entry) {
	m.acls[r] = entries
	m.onChange(r)
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func startMem(t *testing.T, st *memStore, super []Principal, allowNoACL bool) *Service {
	t.Helper()
	s, err := Start(st, super, allowNoACL, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if st.onChange == nil {
		t.Fatal("Start did not follow the store's changes")
	}
	return s
}

func ptr(s string) *string { return &s }

func creation(r Resource, principal string, op Operation, perm Permission) Creation {
	return Creation{Resource: r, Principal: principal, Host: "*", Operation: op, Permission: perm}
}

func TestAdminCreateThenDescribe(t *testing.T) {
	st := newMemStore()
	s := startMem(t, st, nil, false)
	orders := lit(ResourceTopic, "orders")
	logs := pre(ResourceTopic, "logs-")
	statuses := s.Create(alice, []Creation{
		creation(orders, "User:alice", OpRead, Allow),
		creation(logs, "User:bob", OpWrite, Allow),
		creation(orders, "User:bob", OpAll, Deny),
		creation(orders, "User:alice", OpRead, Allow), // a duplicate: a set
	})
	for i, st := range statuses {
		if !st.OK() {
			t.Fatalf("creation %d: %+v", i, st)
		}
	}
	if st.updates != 2 {
		t.Errorf("store updates = %d, want one per resource pattern (2)", st.updates)
	}
	wantOrders := []Entry{allow(alice, OpRead), deny(bob, OpAll)}
	if got := st.acls[orders]; !slices.Equal(got, wantOrders) {
		t.Errorf("stored %v, want %v", got, wantOrders)
	}

	// By literal name: only the orders pattern.
	got, status := s.Describe(Filter{Type: ResourceTopic, Name: ptr("orders"), Pattern: PatternLiteral, Operation: OpAny, Perm: PermissionAny})
	want := []Binding{{orders, allow(alice, OpRead)}, {orders, deny(bob, OpAll)}}
	if !status.OK() || !slices.Equal(got, want) {
		t.Errorf("Describe literal orders = %v %+v, want %v", got, status, want)
	}
	// MATCH on a name the prefixed pattern covers, restricted to bob.
	got, status = s.Describe(Filter{Type: ResourceTopic, Name: ptr("logs-app"), Pattern: PatternMatch, Principal: ptr("User:bob"), Operation: OpAny, Perm: PermissionAny})
	want = []Binding{{logs, allow(bob, OpWrite)}}
	if !status.OK() || !slices.Equal(got, want) {
		t.Errorf("Describe MATCH logs-app = %v %+v, want %v", got, status, want)
	}
	// Everything.
	got, _ = s.Describe(Filter{Type: ResourceAny, Pattern: PatternAny, Operation: OpAny, Perm: PermissionAny})
	if len(got) != 3 {
		t.Errorf("Describe all = %v, want 3 bindings", got)
	}
	// The authorizer sees the creations at once.
	a := s.Authorizer()
	if !a.Authorize(alice, "1.2.3.4", OpRead, ResourceTopic, "orders") {
		t.Error("alice may not read orders after its ACL was created")
	}
	if a.Authorize(bob, "1.2.3.4", OpRead, ResourceTopic, "orders") {
		t.Error("bob may read orders despite a DENY All")
	}
	if !a.Authorize(bob, "1.2.3.4", OpWrite, ResourceTopic, "logs-x") {
		t.Error("bob may not write logs-x under a PREFIXED ALLOW")
	}
}

func TestAdminDeleteByFilter(t *testing.T) {
	st := newMemStore()
	orders := lit(ResourceTopic, "orders")
	payments := lit(ResourceTopic, "payments")
	st.acls[orders] = []Entry{allow(alice, OpRead), allow(bob, OpRead), deny(bob, OpWrite)}
	st.acls[payments] = []Entry{allow(bob, OpRead)}
	s := startMem(t, st, nil, false)

	filters := []Filter{
		{Type: ResourceAny, Pattern: PatternAny, Principal: ptr("User:bob"), Operation: OpRead, Perm: PermissionAny},
		{Type: ResourceUnknown, Pattern: PatternAny, Operation: OpAny, Perm: PermissionAny}, // invalid
		{Type: ResourceTopic, Name: ptr("orders"), Pattern: PatternLiteral, Operation: OpAny, Perm: PermissionAny},
	}
	dels := s.Delete(alice, filters)
	if len(dels) != 3 {
		t.Fatalf("%d results for 3 filters", len(dels))
	}
	// Each deleted ACL is reported under the first filter that matches it.
	want0 := []Binding{{orders, allow(bob, OpRead)}, {payments, allow(bob, OpRead)}}
	if !dels[0].OK() || !slices.Equal(dels[0].Deleted, want0) {
		t.Errorf("filter 0: %+v, want deleted %v", dels[0], want0)
	}
	if dels[1].Code != kerr.InvalidRequest.Code || dels[1].Message != "acl: invalid: filter resource type UNKNOWN" || dels[1].Deleted != nil {
		t.Errorf("invalid filter: %+v", dels[1])
	}
	want2 := []Binding{{orders, allow(alice, OpRead)}, {orders, deny(bob, OpWrite)}}
	if !dels[2].OK() || !slices.Equal(dels[2].Deleted, want2) {
		t.Errorf("filter 2: %+v, want deleted %v", dels[2], want2)
	}
	if len(st.acls) != 0 {
		t.Errorf("store still holds %v", st.acls)
	}
	if n := s.Authorizer().Count(); n != 0 {
		t.Errorf("authorizer still holds %d ACLs", n)
	}
	// Nothing matches now: no deletions, no error.
	dels = s.Delete(alice, filters[:1])
	if !dels[0].OK() || len(dels[0].Deleted) != 0 {
		t.Errorf("second delete: %+v", dels[0])
	}

	// A pattern another broker wrote since this one loaded is found by a
	// filter naming it exactly.
	st.acls[payments] = []Entry{allow(alice, OpWrite)}
	dels = s.Delete(alice, []Filter{{Type: ResourceTopic, Name: ptr("payments"), Pattern: PatternLiteral, Operation: OpAny, Perm: PermissionAny}})
	if want := []Binding{{payments, allow(alice, OpWrite)}}; !slices.Equal(dels[0].Deleted, want) {
		t.Errorf("exact filter on an unloaded pattern deleted %v, want %v", dels[0].Deleted, want)
	}
}

func TestAdminInvalid(t *testing.T) {
	st := newMemStore()
	s := startMem(t, st, nil, false)
	_, status := s.Describe(Filter{Type: ResourceTopic, Pattern: PatternUnknown, Operation: OpAny, Perm: PermissionAny})
	if status.Code != kerr.InvalidRequest.Code || status.Message != "acl: invalid: filter pattern type UNKNOWN" {
		t.Errorf("Describe with an unknown pattern type: %+v", status)
	}
	good := creation(lit(ResourceTopic, "t"), "User:alice", OpRead, Allow)
	statuses := s.Create(alice, []Creation{
		creation(lit(ResourceTopic, "t"), "alice", OpRead, Allow),
		creation(lit(ResourceTopic, ""), "User:alice", OpRead, Allow),
		creation(lit(ResourceCluster, "c"), "User:alice", OpAlter, Allow),
		creation(Resource{ResourceTopic, "t", PatternMatch}, "User:alice", OpRead, Allow),
		good,
	})
	want := []Status{
		{kerr.InvalidRequest.Code, `acl: invalid: principal "alice" is not Type:name`},
		{kerr.InvalidRequest.Code, "acl: invalid: Invalid empty resource name"},
		{kerr.InvalidRequest.Code, "acl: invalid: The only valid name for the CLUSTER resource is kafka-cluster"},
		{kerr.InvalidRequest.Code, "acl: invalid: pattern type MATCH"},
		{},
	}
	if !slices.Equal(statuses, want) {
		t.Errorf("Create statuses\n got %+v\nwant %+v", statuses, want)
	}
	if len(st.acls) != 1 || !slices.Equal(st.acls[lit(ResourceTopic, "t")], []Entry{allow(alice, OpRead)}) {
		t.Errorf("store holds %v, want only the valid creation", st.acls)
	}

	// A store failure is UNKNOWN_SERVER_ERROR for the creations of that
	// pattern, and the authorizer is left as it was.
	st.failWith = errors.New("zk down")
	statuses = s.Create(alice, []Creation{creation(lit(ResourceTopic, "u"), "User:bob", OpRead, Allow)})
	if want := (Status{kerr.UnknownServerError.Code, "storing the ACLs failed: zk down"}); statuses[0] != want {
		t.Errorf("Create on a failing store: %+v, want %+v", statuses[0], want)
	}
	dels := s.Delete(alice, []Filter{{Type: ResourceAny, Pattern: PatternAny, Operation: OpAny, Perm: PermissionAny}})
	if dels[0].Code != kerr.UnknownServerError.Code || dels[0].Message != "storing the ACLs failed: zk down" {
		t.Errorf("Delete on a failing store: %+v", dels[0])
	}
	if !s.Authorizer().Authorize(alice, "h", OpRead, ResourceTopic, "t") || s.Authorizer().Authorize(bob, "h", OpRead, ResourceTopic, "u") {
		t.Error("a failed store update changed the authorizer")
	}
}

func TestAdminNoAuthorizer(t *testing.T) {
	var s *Service
	if s.Authorizer() != nil {
		t.Error("a nil service has an authorizer")
	}
	_, status := s.Describe(Filter{})
	if want := (Status{kerr.SecurityDisabled.Code, "No Authorizer is configured on the broker"}); status != want {
		t.Errorf("Describe: %+v, want %+v", status, want)
	}
	if got := s.Create(alice, make([]Creation, 2)); len(got) != 2 || got[1] != (Status{kerr.SecurityDisabled.Code, "No Authorizer is configured."}) {
		t.Errorf("Create: %+v", got)
	}
	if got := s.Delete(alice, make([]Filter, 1)); len(got) != 1 || got[0].Status != (Status{kerr.SecurityDisabled.Code, "No Authorizer is configured."}) {
		t.Errorf("Delete: %+v", got)
	}
}

func TestStateLoadAndReload(t *testing.T) {
	st := newMemStore()
	orders := lit(ResourceTopic, "orders")
	st.acls[orders] = []Entry{allow(alice, OpRead)}
	admin := Principal{"User", "admin"}
	s := startMem(t, st, []Principal{admin}, true)
	a := s.Authorizer()
	if !a.Authorize(alice, "h", OpRead, ResourceTopic, "orders") {
		t.Error("the loaded ALLOW is not applied")
	}
	if a.Authorize(bob, "h", OpRead, ResourceTopic, "orders") {
		t.Error("bob may read orders, which has ACLs and none for him")
	}
	if !a.Authorize(bob, "h", OpRead, ResourceTopic, "free") {
		t.Error("allow.everyone.if.no.acl.found is not applied")
	}
	if !a.Authorize(admin, "h", OpAlter, ResourceCluster, ClusterName) {
		t.Error("the super user is refused")
	}

	// Another broker changes orders: the notification reloads it.
	st.external(orders, []Entry{allow(bob, OpRead)})
	if a.Authorize(alice, "h", OpRead, ResourceTopic, "orders") || !a.Authorize(bob, "h", OpRead, ResourceTopic, "orders") {
		t.Error("a notified change is not reloaded")
	}
	// A new pattern elsewhere closes a resource that had none.
	st.external(lit(ResourceTopic, "free"), []Entry{deny(bob, OpRead)})
	if a.Authorize(bob, "h", OpRead, ResourceTopic, "free") {
		t.Error("a notified DENY is not applied")
	}
	// A removal reopens it.
	delete(st.acls, lit(ResourceTopic, "free"))
	st.onChange(lit(ResourceTopic, "free"))
	if !a.Authorize(bob, "h", OpRead, ResourceTopic, "free") {
		t.Error("a notified removal is not applied")
	}
	// A failed reload keeps what the authorizer had.
	st.failWith = errors.New("zk down")
	st.onChange(orders)
	if !a.Authorize(bob, "h", OpRead, ResourceTopic, "orders") {
		t.Error("a failed reload changed the authorizer")
	}

	// A load failure fails Start, with the broker's message.
	if _, err := Start(st, nil, false, quiet()); err == nil || err.Error() != "broker: loading ACLs: zk down" {
		t.Errorf("Start on a failing store: %v", err)
	}
}
