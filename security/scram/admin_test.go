package scram

import (
	"errors"
	"log/slog"
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeStore is a Store in memory; fail makes every call fail.
type fakeStore struct {
	users  map[string]map[string]string
	writes int
	fail   error
}

func (s *fakeStore) Users() ([]string, error) {
	if s.fail != nil {
		return nil, s.fail
	}
	return slices.Sorted(maps.Keys(s.users)), nil
}

func (s *fakeStore) UserConfigs(user string) (map[string]string, error) {
	if s.fail != nil {
		return nil, s.fail
	}
	m := maps.Clone(s.users[user])
	if m == nil {
		m = map[string]string{}
	}
	return m, nil
}

func (s *fakeStore) AlterUserConfigs(user string, alter func(map[string]string) (map[string]string, error)) error {
	if s.fail != nil {
		return s.fail
	}
	next, err := alter(maps.Clone(s.users[user]))
	if err != nil {
		return err
	}
	s.writes++
	if len(next) == 0 {
		delete(s.users, user)
	} else {
		s.users[user] = maps.Clone(next)
	}
	return nil
}

func newTestAdmin(t *testing.T) (*Admin, *fakeStore, *Cache) {
	t.Helper()
	st := &fakeStore{users: map[string]map[string]string{}}
	log := slog.New(slog.DiscardHandler)
	cache := NewCache(st.UserConfigs, log)
	return NewAdmin(Options{Store: st, Cache: cache, Logger: log}), st, cache
}

func describe(a *Admin, users ...string) *kmsg.DescribeUserSCRAMCredentialsResponse {
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, u := range users {
		ru := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		ru.Name = u
		req.Users = append(req.Users, ru)
	}
	return a.Describe(req)
}

func upsertion(user string, mech int8, iter int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations = user, mech, iter
	u.Salt, u.SaltedPassword = []byte("salt-"+user), []byte("salted-password-of-"+user)
	return u
}

func deletion(user string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = user, mech
	return d
}

type alterReq struct {
	dels []kmsg.AlterUserSCRAMCredentialsRequestDeletion
	ups  []kmsg.AlterUserSCRAMCredentialsRequestUpsertion
}

func alter(a *Admin, r alterReq) *kmsg.AlterUserSCRAMCredentialsResponse {
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions, req.Upsertions = r.dels, r.ups
	return a.Alter(req, true)
}

func msgOf(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// checkAlter asserts one result per user, in order, with the codes given
// (0: success) and a message exactly when the code is not 0.
func checkAlter(t *testing.T, resp *kmsg.AlterUserSCRAMCredentialsResponse, want ...any) {
	t.Helper()
	if len(resp.Results) != len(want)/2 {
		t.Fatalf("%d results, want %d: %+v", len(resp.Results), len(want)/2, resp.Results)
	}
	for i, r := range resp.Results {
		user, code := want[2*i].(string), want[2*i+1]
		if code == nil {
			code = (*kerr.Error)(nil)
		}
		wantCode := int16(0)
		if e := code.(*kerr.Error); e != nil {
			wantCode = e.Code
		}
		if r.User != user || r.ErrorCode != wantCode || (wantCode == 0) != (r.ErrorMessage == nil) {
			t.Errorf("result %d: %q code %d (%s), want %q code %d", i, r.User, r.ErrorCode, msgOf(r.ErrorMessage), user, wantCode)
		}
	}
}

// TestAdminDescribeErrors: an unknown user, an empty name and a name given
// twice are answered in request order, once each, with Kafka's codes.
func TestAdminDescribeErrors(t *testing.T) {
	a, _, _ := newTestAdmin(t)
	resp := describe(a, "nobody", "", "twice", "twice")
	want := []struct {
		user string
		code int16
		msg  string
	}{
		{"nobody", kerr.ResourceNotFound.Code, "Attempt to describe a user credential that does not exist: nobody"},
		{"", kerr.ResourceNotFound.Code, "Cannot describe SCRAM credentials for empty username"},
		{"twice", kerr.DuplicateResource.Code, "Cannot describe SCRAM credentials for the same user twice in a single request: twice"},
	}
	if resp.ErrorCode != 0 || len(resp.Results) != len(want) {
		t.Fatalf("response: code %d, results %+v", resp.ErrorCode, resp.Results)
	}
	for i, w := range want {
		r := resp.Results[i]
		if r.User != w.user || r.ErrorCode != w.code || msgOf(r.ErrorMessage) != w.msg || len(r.CredentialInfos) != 0 {
			t.Errorf("result %d: %q %d %q %v, want %q %d %q", i, r.User, r.ErrorCode, msgOf(r.ErrorMessage), r.CredentialInfos, w.user, w.code, w.msg)
		}
	}
}

// TestAdminAlterRejects: every invalid request is refused with its code
// and message, and nothing is written.
func TestAdminAlterRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  alterReq
		code *kerr.Error
		msg  string
	}{
		{"empty user", alterReq{ups: []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{upsertion("", 1, 4096)}},
			kerr.UnacceptableCredential, "Username must not be empty"},
		{"unknown mechanism", alterReq{ups: []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{upsertion("alice", 3, 4096)}},
			kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism 3"},
		{"unknown mechanism deleted", alterReq{dels: []kmsg.AlterUserSCRAMCredentialsRequestDeletion{deletion("alice", 0)}},
			kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism 0"},
		{"too few iterations", alterReq{ups: []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{upsertion("alice", 1, MinIterations-1)}},
			kerr.UnacceptableCredential, "Too few iterations: 4095 (SCRAM-SHA-256 needs at least 4096)"},
		{"too many iterations", alterReq{ups: []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{upsertion("alice", 2, MaxIterations+1)}},
			kerr.UnacceptableCredential, "Too many iterations: 16385 (SCRAM-SHA-512 allows at most 16384)"},
		{"same mechanism twice", alterReq{ups: []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{upsertion("alice", 1, 4096), upsertion("alice", 1, 8192)}},
			kerr.DuplicateResource, "A user credential cannot be altered twice in the same request"},
		{"deleted and upserted", alterReq{dels: []kmsg.AlterUserSCRAMCredentialsRequestDeletion{deletion("alice", 2)}, ups: []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{upsertion("alice", 2, 4096)}},
			kerr.DuplicateResource, "A user credential cannot be altered twice in the same request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, st, _ := newTestAdmin(t)
			resp := alter(a, tc.req)
			user := ""
			if len(resp.Results) > 0 {
				user = resp.Results[0].User
			}
			checkAlter(t, resp, user, tc.code)
			if got := msgOf(resp.Results[0].ErrorMessage); got != tc.msg {
				t.Errorf("message %q, want %q", got, tc.msg)
			}
			if st.writes != 0 || len(st.users) != 0 {
				t.Errorf("a refused request wrote: %d writes, %v", st.writes, st.users)
			}
		})
	}
	a, st, _ := newTestAdmin(t)
	for _, salt := range [][]byte{nil, []byte("s")} {
		u := upsertion("alice", 1, 4096)
		if salt == nil {
			u.Salt = nil
		} else {
			u.SaltedPassword = nil
		}
		resp := alter(a, alterReq{ups: []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{u}})
		checkAlter(t, resp, "alice", kerr.UnacceptableCredential)
		if got := msgOf(resp.Results[0].ErrorMessage); got != "Salt and salted password must not be empty" {
			t.Errorf("empty salt or salted password: message %q", got)
		}
	}
	if st.writes != 0 {
		t.Errorf("an empty salt or salted password wrote")
	}
}

// TestAdminUpsertDescribeDelete: an upserted credential is described with
// its mechanism and iterations, stored as derived from the salted password
// beside the user's other configs, seen at once by the cache; a deletion
// removes it, and deleting it again is RESOURCE_NOT_FOUND; users are
// answered apart, in order of first mention.
func TestAdminUpsertDescribeDelete(t *testing.T) {
	a, st, cache := newTestAdmin(t)
	st.users["alice"] = map[string]string{"producer_byte_rate": "1024"}
	if _, ok := cache.Credential(SHA256, "alice"); ok {
		t.Fatal("alice has a credential before any upsertion")
	}
	resp := alter(a, alterReq{ups: []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		upsertion("alice", 1, 4096), upsertion("bob", 3, 4096), upsertion("alice", 2, 8192),
	}})
	checkAlter(t, resp, "alice", nil, "bob", kerr.UnsupportedSaslMechanism)
	if st.users["alice"]["producer_byte_rate"] != "1024" {
		t.Errorf("alice's other configs were lost: %v", st.users["alice"])
	}
	if _, ok := st.users["bob"]; ok {
		t.Errorf("bob's refused upsertion was written")
	}
	u := upsertion("alice", 1, 4096)
	want := SHA256.FromSaltedPassword(u.SaltedPassword, u.Salt, 4096)
	if got, ok := cache.Credential(SHA256, "alice"); !ok || got.String() != want.String() {
		t.Errorf("the cache has %v, %v after the upsertion, want %v", got, ok, want)
	}

	d := describe(a, "alice")
	if len(d.Results) != 1 || d.Results[0].ErrorCode != 0 || d.Results[0].ErrorMessage != nil {
		t.Fatalf("describe alice: %+v", d.Results)
	}
	infos := d.Results[0].CredentialInfos
	if len(infos) != 2 || infos[0].Mechanism != 1 || infos[0].Iterations != 4096 || infos[1].Mechanism != 2 || infos[1].Iterations != 8192 {
		t.Errorf("alice's credentials: %+v, want SCRAM-SHA-256 at 4096 and SCRAM-SHA-512 at 8192", infos)
	}

	// Describe all: users with a credential only.
	st.users["carol"] = map[string]string{"consumer_byte_rate": "1"}
	all := describe(a)
	if len(all.Results) != 1 || all.Results[0].User != "alice" || len(all.Results[0].CredentialInfos) != 2 {
		t.Errorf("describe all: %+v, want alice alone", all.Results)
	}

	// A deletion of a missing credential fails the user's whole request.
	resp = alter(a, alterReq{
		dels: []kmsg.AlterUserSCRAMCredentialsRequestDeletion{deletion("alice", 1), deletion("carol", 1)},
	})
	checkAlter(t, resp, "alice", nil, "carol", kerr.ResourceNotFound)
	if got := msgOf(resp.Results[1].ErrorMessage); got != "Attempt to delete a user credential that does not exist" {
		t.Errorf("deleting a missing credential: message %q", got)
	}
	if _, ok := cache.Credential(SHA256, "alice"); ok {
		t.Error("the cache still has alice's deleted credential")
	}
	d = describe(a, "alice")
	if infos := d.Results[0].CredentialInfos; d.Results[0].ErrorCode != 0 || len(infos) != 1 || infos[0].Mechanism != 2 {
		t.Errorf("alice after deleting SCRAM-SHA-256: %+v", d.Results[0])
	}
	resp = alter(a, alterReq{
		dels: []kmsg.AlterUserSCRAMCredentialsRequestDeletion{deletion("alice", 1)},
		ups:  []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{upsertion("alice", 2, 16384)},
	})
	checkAlter(t, resp, "alice", kerr.ResourceNotFound)
	d = describe(a, "alice")
	if infos := d.Results[0].CredentialInfos; len(infos) != 1 || infos[0].Iterations != 8192 {
		t.Errorf("a failed request changed alice's credentials: %+v", d.Results[0])
	}
	checkAlter(t, alter(a, alterReq{dels: []kmsg.AlterUserSCRAMCredentialsRequestDeletion{deletion("alice", 2)}}), "alice", nil)
	d = describe(a, "alice")
	if d.Results[0].ErrorCode != kerr.ResourceNotFound.Code {
		t.Errorf("alice after deleting every credential: %+v", d.Results[0])
	}
	if st.users["alice"]["producer_byte_rate"] != "1024" {
		t.Errorf("alice's other configs were lost: %v", st.users["alice"])
	}
}

// TestAdminUnauthorizedAndStoreErrors: an unauthorized Alter answers
// CLUSTER_AUTHORIZATION_FAILED per user and writes nothing; a failing
// store answers UNKNOWN_SERVER_ERROR with its error.
func TestAdminUnauthorizedAndStoreErrors(t *testing.T) {
	a, st, _ := newTestAdmin(t)
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{upsertion("alice", 1, 4096), upsertion("bob", 1, 4096)}
	resp := a.Alter(req, false)
	checkAlter(t, resp, "alice", kerr.ClusterAuthorizationFailed, "bob", kerr.ClusterAuthorizationFailed)
	if st.writes != 0 {
		t.Error("an unauthorized request wrote")
	}

	st.fail = errors.New("zk: connection closed")
	resp = a.Alter(req, true)
	checkAlter(t, resp, "alice", kerr.UnknownServerError, "bob", kerr.UnknownServerError)
	if got := msgOf(resp.Results[0].ErrorMessage); got != "zk: connection closed" {
		t.Errorf("store error: message %q", got)
	}
	all := describe(a)
	if all.ErrorCode != kerr.UnknownServerError.Code || msgOf(all.ErrorMessage) != "Error retrieving all users: zk: connection closed" {
		t.Errorf("describe all with a failing store: %d %q", all.ErrorCode, msgOf(all.ErrorMessage))
	}
	// The named user's message is today's: empty (Describe overwrites
	// describe's message; kept as it was when the code moved here).
	one := describe(a, "alice")
	if r := one.Results[0]; r.ErrorCode != kerr.UnknownServerError.Code || msgOf(r.ErrorMessage) != "" {
		t.Errorf("describe alice with a failing store: %d %q", r.ErrorCode, msgOf(r.ErrorMessage))
	}
}
