package coordinator

import "testing"

// Names are encoded as Kafka's Sanitizer encodes them and decode back.
func TestSanitize(t *testing.T) {
	for name, want := range map[string]string{
		"alice":          "alice",
		"a.b-c_d":        "a.b-c_d",
		"alice@corp.com": "alice%40corp.com",
		"CN=x,O=y":       "CN%3Dx%2CO%3Dy",
		"a b*c/d":        "a%20b%2Ac%2Fd",
		"é":              "%C3%A9",
		DefaultEntity:    DefaultEntity,
	} {
		if got := Sanitize(name); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", name, got, want)
		}
		if back, err := Desanitize(want); err != nil || back != name {
			t.Errorf("Desanitize(%q) = %q, %v; want %q", want, back, err, name)
		}
	}
	for _, bad := range []string{"%", "%4", "%zz"} {
		if _, err := Desanitize(bad); err == nil {
			t.Errorf("Desanitize(%q) accepted", bad)
		}
	}
	e, err := ParseEntityPath(UserClientEntity("u/1", "c 1"))
	if err != nil || e != (EntityName{User: "u/1", ClientID: "c 1", HasUser: true, HasClientID: true}) || e.Path() != "users/u%2F1/clients/c%201" {
		t.Fatalf("ParseEntityPath: %+v, %v", e, err)
	}
}
