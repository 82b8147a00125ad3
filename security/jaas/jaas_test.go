package jaas

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	es, err := Parse(`org.apache.kafka.common.security.plain.PlainLoginModule required
		username="admin" /* the broker */ password="admin-secret" // its password
		user_admin="admin-secret" user_alice="al\"ice" user_bob=bobpw;`)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Module != PlainLoginModule || es[0].Flag != "required" {
		t.Fatalf("%+v", es)
	}
	o := es[0].Options
	if o["username"] != "admin" || o["password"] != "admin-secret" {
		t.Fatalf("%v", o)
	}
	u := es[0].Users()
	if len(u) != 3 || u["alice"] != `al"ice` || u["bob"] != "bobpw" || u["admin"] != "admin-secret" {
		t.Fatalf("%v", u)
	}
	es, err = Parse(`a.B required; c.D optional x=1;`)
	if err != nil || len(es) != 2 || es[1].Options["x"] != "1" {
		t.Fatal(es, err)
	}
	for _, bad := range []string{
		"", ";", "a.B", "a.B required", "a.B always;", `a.B required x="1;`, "a.B required x=;", "a.B required x;", "a.B required /* x;", "= required;",
	} {
		if _, err := Parse(bad); !errors.Is(err, ErrSyntax) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
