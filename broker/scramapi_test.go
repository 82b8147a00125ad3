package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/security/scram"
)

// AlterUserScramCredentials stores Kafka's credential string in the user's
// entity configs, beside other keys, and DescribeUserScramCredentials
// reads it back; deleting the last credential leaves the quota.
func TestUserScramCredentialsRoundTrip(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	adm := tb.admin(t)
	ctx := ctxTimeout(t, 20*time.Second)
	if err := tb.coord.AlterEntityConfigs(coordinator.UserEntity("alice"), func(cur map[string]string) (map[string]string, error) {
		return map[string]string{"producer_byte_rate": "1024"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "alice-secret"},
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-secret"},
		{User: "bob/x", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-secret"},
	})
	if err != nil || res.AllFailed() || res.Error() != nil {
		t.Fatalf("alter: %v %v", res, err)
	}
	cfgs, err := tb.coord.EntityConfigs(coordinator.UserEntity("alice"))
	if err != nil {
		t.Fatal(err)
	}
	cred, err := scram.SHA512.ParseCredential(cfgs["SCRAM-SHA-512"])
	if err != nil || cred.Iterations != 8192 || cfgs["producer_byte_rate"] != "1024" {
		t.Fatalf("stored %v: %v %v", cfgs, cred, err)
	}
	all, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || len(all["alice"].CredInfos) != 2 || len(all["bob/x"].CredInfos) != 1 || all["bob/x"].CredInfos[0].Mechanism != kadm.ScramSha256 {
		t.Fatalf("describe all: %+v", all)
	}
	if _, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha512}, {User: "alice", Mechanism: kadm.ScramSha256}}, nil); err != nil {
		t.Fatal(err)
	}
	cfgs, _ = tb.coord.EntityConfigs(coordinator.UserEntity("alice"))
	if len(cfgs) != 1 || cfgs["producer_byte_rate"] != "1024" {
		t.Fatalf("after delete: %v", cfgs)
	}
	one, err := adm.DescribeUserSCRAMs(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if d := one["alice"]; d.Err == nil || !errorIs(d.Err, kerr.ResourceNotFound) {
		t.Fatalf("describe a user without credentials: %+v", d)
	}
}

func errorIs(err error, want *kerr.Error) bool {
	e, ok := err.(*kerr.Error)
	return ok && e == want
}

// The errors of Describe and AlterUserScramCredentials, as Kafka answers.
func TestUserScramCredentialsErrors(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	cl := tb.client(t)
	ctx := ctxTimeout(t, 20*time.Second)
	alter := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	up := func(name string, mech int8, iter int32, salt, salted []byte) {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = name, mech, iter, salt, salted
		alter.Upsertions = append(alter.Upsertions, u)
	}
	del := func(name string, mech int8) {
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = name, mech
		alter.Deletions = append(alter.Deletions, d)
	}
	salt, salted := []byte("salt"), make([]byte, 32)
	up("", 1, 4096, salt, salted)
	up("badmech", 3, 4096, salt, salted)
	up("few", 1, 4095, salt, salted)
	up("many", 2, 16385, salt, salted)
	up("nosalt", 1, 4096, nil, salted)
	up("dup", 1, 4096, salt, salted)
	del("dup", 1)
	del("ghost", 2)
	up("ok", 1, 4096, salt, salted)
	resp, err := alter.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int16{
		"": kerr.UnacceptableCredential.Code, "badmech": kerr.UnsupportedSaslMechanism.Code,
		"few": kerr.UnacceptableCredential.Code, "many": kerr.UnacceptableCredential.Code,
		"nosalt": kerr.UnacceptableCredential.Code, "dup": kerr.DuplicateResource.Code,
		"ghost": kerr.ResourceNotFound.Code, "ok": 0,
	}
	got := map[string]int16{}
	for _, r := range resp.Results {
		got[r.User] = r.ErrorCode
		if r.ErrorCode != 0 && (r.ErrorMessage == nil || *r.ErrorMessage == "") {
			t.Errorf("%s: error %d without a message", r.User, r.ErrorCode)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("results %v, want %v", got, want)
	}
	for u, code := range want {
		if got[u] != code {
			t.Errorf("%q: error %d, want %d", u, got[u], code)
		}
	}
	// Nothing of the failed users was written.
	for _, u := range []string{"dup", "few"} {
		if cfgs, _ := tb.coord.EntityConfigs(coordinator.UserEntity(u)); len(cfgs) != 0 {
			t.Errorf("%s: %v written", u, cfgs)
		}
	}
	desc := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, n := range []string{"ok", "", "twice", "twice", "nobody"} {
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = n
		desc.Users = append(desc.Users, u)
	}
	dresp, err := desc.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	codes := map[string]int16{}
	for _, r := range dresp.Results {
		order = append(order, r.User)
		codes[r.User] = r.ErrorCode
	}
	if len(order) != 4 || order[0] != "ok" || order[1] != "" || order[2] != "twice" || order[3] != "nobody" {
		t.Fatalf("describe order %q", order)
	}
	if codes["ok"] != 0 || codes[""] != kerr.ResourceNotFound.Code || codes["twice"] != kerr.DuplicateResource.Code || codes["nobody"] != kerr.ResourceNotFound.Code {
		t.Fatalf("describe codes %v", codes)
	}
	if r := dresp.Results[0]; len(r.CredentialInfos) != 1 || r.CredentialInfos[0].Mechanism != 1 || r.CredentialInfos[0].Iterations != 4096 {
		t.Fatalf("describe ok: %+v", r)
	}
}
