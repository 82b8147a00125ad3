package quota

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeStore keeps entity configs by entity path, as the metadata backend.
type fakeStore struct {
	configs map[string]map[string]string
	alters  int   // AlterEntityConfigs calls
	fail    error // returned by AlterEntityConfigs when set
}

func newFakeStore() *fakeStore { return &fakeStore{configs: map[string]map[string]string{}} }

func (s *fakeStore) Entities(typ string) ([]string, error) {
	var out []string
	for p, c := range s.configs {
		if strings.HasPrefix(p, typ+"/") && len(c) > 0 {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (s *fakeStore) EntityConfigs(path string) (map[string]string, error) {
	return maps.Clone(s.configs[path]), nil
}

func (s *fakeStore) AlterEntityConfigs(path string, alter func(map[string]string) (map[string]string, error)) error {
	s.alters++
	if s.fail != nil {
		return s.fail
	}
	cur := maps.Clone(s.configs[path])
	if cur == nil {
		cur = map[string]string{}
	}
	next, err := alter(cur)
	if err != nil {
		return err
	}
	if len(next) == 0 {
		delete(s.configs, path)
	} else {
		s.configs[path] = next
	}
	return nil
}

func newTestAdmin() (*Admin, *fakeStore, *Manager) {
	s := newFakeStore()
	m := NewManager(Config{})
	return NewAdmin(s, m, slog.New(slog.DiscardHandler)), s, m
}

func ptr(s string) *string { return &s }

// comp is an entity component of AlterClientQuotas (name nil: default).
func comp(typ string, name *string) kmsg.AlterClientQuotasRequestEntryEntity {
	c := kmsg.NewAlterClientQuotasRequestEntryEntity()
	c.Type, c.Name = typ, name
	return c
}

func setOp(key string, v float64) kmsg.AlterClientQuotasRequestEntryOp {
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value = key, v
	return op
}

func removeOp(key string) kmsg.AlterClientQuotasRequestEntryOp {
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Remove = key, true
	return op
}

// alterOne sends one entry and returns its response entry.
func alterOne(t *testing.T, a *Admin, validateOnly bool, ent []kmsg.AlterClientQuotasRequestEntryEntity, ops ...kmsg.AlterClientQuotasRequestEntryOp) kmsg.AlterClientQuotasResponseEntry {
	t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.ValidateOnly = validateOnly
	e := kmsg.NewAlterClientQuotasRequestEntry()
	e.Entity, e.Ops = ent, ops
	req.Entries = append(req.Entries, e)
	resp := a.Alter(req)
	if len(resp.Entries) != 1 {
		t.Fatalf("Alter: %d entries, want 1", len(resp.Entries))
	}
	if len(resp.Entries[0].Entity) != len(ent) {
		t.Fatalf("Alter: response names %d components, want %d", len(resp.Entries[0].Entity), len(ent))
	}
	return resp.Entries[0]
}

func mustAlter(t *testing.T, a *Admin, ent []kmsg.AlterClientQuotasRequestEntryEntity, ops ...kmsg.AlterClientQuotasRequestEntryOp) {
	t.Helper()
	if out := alterOne(t, a, false, ent, ops...); out.ErrorCode != 0 {
		t.Fatalf("Alter %v: code %d %v", ent, out.ErrorCode, deref(out.ErrorMessage))
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// filter is a DescribeClientQuotas component: match type 0 with name, 1
// (default) or 2 (any).
func filter(typ string, matchType int8, name *string) kmsg.DescribeClientQuotasRequestComponent {
	c := kmsg.NewDescribeClientQuotasRequestComponent()
	c.EntityType, c.MatchType, c.Match = typ, kmsg.QuotasMatchType(matchType), name
	return c
}

func describe(a *Admin, strict bool, comps ...kmsg.DescribeClientQuotasRequestComponent) *kmsg.DescribeClientQuotasResponse {
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.Strict, req.Components = strict, comps
	return a.Describe(req)
}

// described renders the entries as "user=alice,client-id=c1{key=value ...}",
// "user=" being the default entity.
func described(t *testing.T, resp *kmsg.DescribeClientQuotasResponse) []string {
	t.Helper()
	if resp.ErrorCode != 0 {
		t.Fatalf("Describe: code %d %s", resp.ErrorCode, deref(resp.ErrorMessage))
	}
	var out []string
	for _, e := range resp.Entries {
		var parts, vals []string
		for _, c := range e.Entity {
			n := ""
			if c.Name != nil {
				n = *c.Name
			}
			parts = append(parts, c.Type+"="+n)
		}
		for _, v := range e.Values {
			vals = append(vals, fmt.Sprintf("%s=%v", v.Key, v.Value))
		}
		out = append(out, strings.Join(parts, ",")+"{"+strings.Join(vals, " ")+"}")
	}
	return out
}

// seeded has alice (producer 1000), the default user (consumer 2000),
// client c1 (request 50), alice/c1 (producer 3000), and bob with only a
// SCRAM credential.
func seeded(t *testing.T) (*Admin, *fakeStore, *Manager) {
	a, s, m := newTestAdmin()
	mustAlter(t, a, []kmsg.AlterClientQuotasRequestEntryEntity{comp(EntityUser, ptr("alice"))}, setOp("producer_byte_rate", 1000))
	mustAlter(t, a, []kmsg.AlterClientQuotasRequestEntryEntity{comp(EntityUser, nil)}, setOp("consumer_byte_rate", 2000))
	mustAlter(t, a, []kmsg.AlterClientQuotasRequestEntryEntity{comp(EntityClientID, ptr("c1"))}, setOp("request_percentage", 50))
	mustAlter(t, a, []kmsg.AlterClientQuotasRequestEntryEntity{comp(EntityUser, ptr("alice")), comp(EntityClientID, ptr("c1"))}, setOp("producer_byte_rate", 3000))
	s.configs["users/bob"] = map[string]string{"SCRAM-SHA-256": "salt=...,iterations=4096"}
	return a, s, m
}

func TestAdminDescribeMatches(t *testing.T) {
	a, _, _ := seeded(t)
	const (
		alice   = "user=alice{producer_byte_rate=1000}"
		deflt   = "user={consumer_byte_rate=2000}"
		aliceC1 = "user=alice,client-id=c1{producer_byte_rate=3000}"
		c1      = "client-id=c1{request_percentage=50}"
	)
	for _, tc := range []struct {
		name   string
		strict bool
		comps  []kmsg.DescribeClientQuotasRequestComponent
		want   []string
	}{
		{"everything", false, nil, []string{deflt, alice, aliceC1, c1}},
		{"nothing strict", true, nil, nil},
		{"exact user", false, []kmsg.DescribeClientQuotasRequestComponent{filter(EntityUser, 0, ptr("alice"))}, []string{alice, aliceC1}},
		{"exact user strict", true, []kmsg.DescribeClientQuotasRequestComponent{filter(EntityUser, 0, ptr("alice"))}, []string{alice}},
		{"exact user without quotas", false, []kmsg.DescribeClientQuotasRequestComponent{filter(EntityUser, 0, ptr("bob"))}, nil},
		{"default user", false, []kmsg.DescribeClientQuotasRequestComponent{filter(EntityUser, 1, nil)}, []string{deflt}},
		{"any user strict", true, []kmsg.DescribeClientQuotasRequestComponent{filter(EntityUser, 2, nil)}, []string{deflt, alice}},
		{"any user", false, []kmsg.DescribeClientQuotasRequestComponent{filter(EntityUser, 2, nil)}, []string{deflt, alice, aliceC1}},
		{"any client", false, []kmsg.DescribeClientQuotasRequestComponent{filter(EntityClientID, 2, nil)}, []string{aliceC1, c1}},
		{"exact client strict", true, []kmsg.DescribeClientQuotasRequestComponent{filter(EntityClientID, 0, ptr("c1"))}, []string{c1}},
		{"user and any client strict", true, []kmsg.DescribeClientQuotasRequestComponent{filter(EntityUser, 0, ptr("alice")), filter(EntityClientID, 2, nil)}, []string{aliceC1}},
		{"default client", false, []kmsg.DescribeClientQuotasRequestComponent{filter(EntityClientID, 1, nil)}, nil},
		{"ip", false, []kmsg.DescribeClientQuotasRequestComponent{filter(EntityIP, 2, nil)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := described(t, describe(a, tc.strict, tc.comps...))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("described %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAdminDescribeInvalidFilters(t *testing.T) {
	a, _, _ := seeded(t)
	for _, tc := range []struct {
		comps []kmsg.DescribeClientQuotasRequestComponent
		code  int16
		msg   string
	}{
		{[]kmsg.DescribeClientQuotasRequestComponent{filter(EntityUser, 0, nil)}, kerr.InvalidRequest.Code, "Exact match of user without a name"},
		{[]kmsg.DescribeClientQuotasRequestComponent{filter(EntityUser, 3, nil)}, kerr.InvalidRequest.Code, "Unexpected match type: 3"},
		{[]kmsg.DescribeClientQuotasRequestComponent{filter("", 2, nil)}, kerr.InvalidRequest.Code, "Unexpected empty filter component entity type"},
		{[]kmsg.DescribeClientQuotasRequestComponent{filter("group", 2, nil)}, kerr.UnsupportedVersion.Code, "Custom entity type 'group' not supported"},
		{[]kmsg.DescribeClientQuotasRequestComponent{filter(EntityUser, 2, nil), filter(EntityUser, 1, nil)}, kerr.InvalidRequest.Code, "Duplicate user filter component entity type"},
		{[]kmsg.DescribeClientQuotasRequestComponent{filter(EntityClientID, 2, nil), filter(EntityClientID, 1, nil)}, kerr.InvalidRequest.Code, "Duplicate client filter component entity type"},
		{[]kmsg.DescribeClientQuotasRequestComponent{filter(EntityIP, 2, nil), filter(EntityUser, 2, nil)}, kerr.InvalidRequest.Code, "Invalid entity filter component combination, IP filter component should not be used with user or clientId filter component."},
	} {
		resp := describe(a, false, tc.comps...)
		if resp.ErrorCode != tc.code || deref(resp.ErrorMessage) != tc.msg || resp.Entries != nil {
			t.Errorf("Describe %v: code %d %q, %d entries; want %d %q, none", tc.comps, resp.ErrorCode, deref(resp.ErrorMessage), len(resp.Entries), tc.code, tc.msg)
		}
	}
}

// An alteration is stored as Kafka writes it, keeps the other keys, shows
// in Describe and applies to the Manager at once; a removal undoes it.
func TestAdminAlterSetAndRemove(t *testing.T) {
	a, s, m := seeded(t)
	bob := []kmsg.AlterClientQuotasRequestEntryEntity{comp(EntityUser, ptr("bob"))}
	mustAlter(t, a, bob, setOp("producer_byte_rate", 4096), setOp("request_percentage", 25))
	if got, want := s.configs["users/bob"], map[string]string{
		"SCRAM-SHA-256":      "salt=...,iterations=4096",
		"producer_byte_rate": "4096",
		"request_percentage": "25.0",
	}; !maps.Equal(got, want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
	got := described(t, describe(a, true, filter(EntityUser, 0, ptr("bob"))))
	if want := []string{"user=bob{producer_byte_rate=4096 request_percentage=25}"}; !slices.Equal(got, want) {
		t.Fatalf("described %q, want %q", got, want)
	}
	if q, ok := m.Quota(ProducerByteRate, "bob", "any"); !ok || q != 4096 {
		t.Fatalf("bob's producer quota = %v %v, want 4096", q, ok)
	}
	if q, ok := m.Quota(ProducerByteRate, "alice", "c1"); !ok || q != 3000 {
		t.Fatalf("alice/c1's producer quota = %v %v, want 3000", q, ok)
	}

	// A later op on a key wins; removing a key nobody set is fine.
	mustAlter(t, a, bob, removeOp("producer_byte_rate"), removeOp("no_such_key"), setOp("request_percentage", 10), setOp("request_percentage", 12.5))
	if got, want := s.configs["users/bob"], map[string]string{
		"SCRAM-SHA-256":      "salt=...,iterations=4096",
		"request_percentage": "12.5",
	}; !maps.Equal(got, want) {
		t.Fatalf("stored after removal %v, want %v", got, want)
	}
	if q, ok := m.Quota(ProducerByteRate, "bob", "any"); ok {
		t.Fatalf("bob's producer quota after removal = %v, want none", q)
	}
	got = described(t, describe(a, true, filter(EntityUser, 0, ptr("bob"))))
	if want := []string{"user=bob{request_percentage=12.5}"}; !slices.Equal(got, want) {
		t.Fatalf("described after removal %q, want %q", got, want)
	}

	// The default user's and a default client's entity paths.
	mustAlter(t, a, []kmsg.AlterClientQuotasRequestEntryEntity{comp(EntityUser, ptr("alice")), comp(EntityClientID, nil)}, setOp("consumer_byte_rate", 7))
	if got := s.configs["users/alice/clients/<default>"]["consumer_byte_rate"]; got != "7" {
		t.Fatalf("alice/<default> stored %q, want 7", got)
	}
	mustAlter(t, a, []kmsg.AlterClientQuotasRequestEntryEntity{comp(EntityUser, nil)}, removeOp("consumer_byte_rate"))
	if _, ok := s.configs["users/<default>"]; ok {
		t.Fatalf("the default user still has configs %v", s.configs["users/<default>"])
	}
	if q, ok := m.Quota(ConsumerByteRate, "carol", "x"); ok {
		t.Fatalf("carol's consumer quota after the default's removal = %v, want none", q)
	}
}

// Invalid entries are INVALID_REQUEST with Kafka's messages, each on its
// own, and change nothing; so does validateOnly.
func TestAdminAlterInvalidAndValidateOnly(t *testing.T) {
	a, s, m := seeded(t)
	before := maps.Clone(s.configs)
	alters := s.alters
	alice := []kmsg.AlterClientQuotasRequestEntryEntity{comp(EntityUser, ptr("alice"))}
	for _, tc := range []struct {
		ent []kmsg.AlterClientQuotasRequestEntryEntity
		ops []kmsg.AlterClientQuotasRequestEntryOp
		msg string
	}{
		{alice, []kmsg.AlterClientQuotasRequestEntryOp{setOp("producer_byte_rate", 1), setOp("bogus_rate", 1)}, "Invalid configuration key bogus_rate"},
		{alice, []kmsg.AlterClientQuotasRequestEntryOp{setOp("producer_byte_rate", 1.5)}, "Configuration producer_byte_rate must be a LONG value"},
		{alice, []kmsg.AlterClientQuotasRequestEntryOp{setOp("consumer_byte_rate", 1e300)}, "Configuration consumer_byte_rate must be a LONG value"},
		{nil, []kmsg.AlterClientQuotasRequestEntryOp{setOp("producer_byte_rate", 1)}, "Invalid empty client quota entity"},
		{[]kmsg.AlterClientQuotasRequestEntryEntity{comp("group", ptr("g"))}, nil, "Unhandled client quota entity type: group"},
		{[]kmsg.AlterClientQuotasRequestEntryEntity{comp(EntityUser, ptr(""))}, nil, "Empty user not supported"},
		{[]kmsg.AlterClientQuotasRequestEntryEntity{comp(EntityIP, ptr("10.0.0.1"))}, nil, "IP quotas are not supported"},
		{[]kmsg.AlterClientQuotasRequestEntryEntity{comp(EntityIP, ptr("10.0.0.1")), comp(EntityUser, ptr("alice"))}, nil, "Invalid quota entity combination, IP entity should not be used with user/client ID entity."},
	} {
		for _, validateOnly := range []bool{false, true} {
			out := alterOne(t, a, validateOnly, tc.ent, tc.ops...)
			if out.ErrorCode != kerr.InvalidRequest.Code || deref(out.ErrorMessage) != tc.msg {
				t.Errorf("Alter %v %v (validateOnly %v): code %d %q, want INVALID_REQUEST %q", tc.ent, tc.ops, validateOnly, out.ErrorCode, deref(out.ErrorMessage), tc.msg)
			}
		}
	}
	// A valid entry with validateOnly is answered without error.
	if out := alterOne(t, a, true, alice, setOp("producer_byte_rate", 5), removeOp("consumer_byte_rate")); out.ErrorCode != 0 || out.ErrorMessage != nil {
		t.Fatalf("validateOnly: code %d %q, want none", out.ErrorCode, deref(out.ErrorMessage))
	}
	if s.alters != alters || !maps.EqualFunc(s.configs, before, maps.Equal) {
		t.Fatalf("the store changed: %d alterations, configs %v, want %v", s.alters-alters, s.configs, before)
	}
	if q, _ := m.Quota(ProducerByteRate, "alice", "x"); q != 1000 {
		t.Fatalf("alice's producer quota = %v, want 1000 unchanged", q)
	}
}

// Each entry of a request is answered on its own, in order.
func TestAdminAlterEntriesIndependent(t *testing.T) {
	a, s, _ := newTestAdmin()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	for _, ent := range [][]kmsg.AlterClientQuotasRequestEntryEntity{
		{comp(EntityClientID, ptr("bad"))},
		{comp(EntityClientID, ptr("good"))},
	} {
		e := kmsg.NewAlterClientQuotasRequestEntry()
		e.Entity = ent
		if *ent[0].Name == "bad" {
			e.Ops = append(e.Ops, setOp("producer_byte_rate", 0.5))
		} else {
			e.Ops = append(e.Ops, setOp("producer_byte_rate", 10))
		}
		req.Entries = append(req.Entries, e)
	}
	resp := a.Alter(req)
	if len(resp.Entries) != 2 || resp.Entries[0].ErrorCode != kerr.InvalidRequest.Code || resp.Entries[1].ErrorCode != 0 {
		t.Fatalf("entries %+v, want INVALID_REQUEST then success", resp.Entries)
	}
	if n := resp.Entries[1].Entity; len(n) != 1 || n[0].Type != EntityClientID || deref(n[0].Name) != "good" {
		t.Fatalf("second entry names %+v, want client-id good", n)
	}
	if got := s.configs["clients/good"]["producer_byte_rate"]; got != "10" {
		t.Fatalf("clients/good stored %q, want 10", got)
	}
}

// A store that fails is UNKNOWN_SERVER_ERROR with the error, and applies
// nothing.
func TestAdminAlterStoreError(t *testing.T) {
	a, s, m := newTestAdmin()
	s.fail = errors.New("backend down")
	out := alterOne(t, a, false, []kmsg.AlterClientQuotasRequestEntryEntity{comp(EntityUser, ptr("alice"))}, setOp("producer_byte_rate", 1000))
	if want := "broker: altering the quotas of users/alice: backend down"; out.ErrorCode != kerr.UnknownServerError.Code || deref(out.ErrorMessage) != want {
		t.Fatalf("code %d %q, want UNKNOWN_SERVER_ERROR %q", out.ErrorCode, deref(out.ErrorMessage), want)
	}
	if m.Enabled() {
		t.Fatal("a quota was applied")
	}
}

// Load reads every entity's quotas, ignoring values that are not numbers
// and keys that are not quotas; LoadEntity applies another broker's change.
func TestAdminLoad(t *testing.T) {
	a, s, m := newTestAdmin()
	s.configs["users/alice"] = map[string]string{"producer_byte_rate": " 1000 ", "consumer_byte_rate": "lots", "SCRAM-SHA-512": "x"}
	s.configs["clients/c%2F1"] = map[string]string{"request_percentage": "50.0"}
	s.configs["users/bob/clients/<default>"] = map[string]string{"consumer_byte_rate": "2000"}
	a.Load()
	if q, ok := m.Quota(ProducerByteRate, "alice", "x"); !ok || q != 1000 {
		t.Fatalf("alice's producer quota = %v %v, want 1000", q, ok)
	}
	if q, ok := m.Quota(ConsumerByteRate, "alice", "x"); ok {
		t.Fatalf("alice's consumer quota = %v, want none (not a number)", q)
	}
	if q, ok := m.Quota(RequestPercentage, "anyone", "c/1"); !ok || q != 50 {
		t.Fatalf("c/1's request quota = %v %v, want 50", q, ok)
	}
	if q, ok := m.Quota(ConsumerByteRate, "bob", "whatever"); !ok || q != 2000 {
		t.Fatalf("bob/<default>'s consumer quota = %v %v, want 2000", q, ok)
	}
	got := described(t, describe(a, false, filter(EntityUser, 0, ptr("alice"))))
	if want := []string{"user=alice{producer_byte_rate=1000}"}; !slices.Equal(got, want) {
		t.Fatalf("described %q, want %q", got, want)
	}

	s.configs["users/alice"] = map[string]string{"producer_byte_rate": "2000"}
	a.LoadEntity("users/alice")
	if q, ok := m.Quota(ProducerByteRate, "alice", "x"); !ok || q != 2000 {
		t.Fatalf("alice's producer quota after a change = %v %v, want 2000", q, ok)
	}
	delete(s.configs, "users/alice")
	a.LoadEntity("users/alice")
	if q, ok := m.Quota(ProducerByteRate, "alice", "x"); ok {
		t.Fatalf("alice's producer quota after its removal = %v, want none", q)
	}
	a.LoadEntity("topics/t") // not a client entity: ignored
}
